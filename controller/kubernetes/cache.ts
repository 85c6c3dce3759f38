// The leader's view of its runner Jobs and their pods: two informers (list, then watch) on the
// runner selector, the pods indexed by their Job, a watch that fails restarted after a pause. It
// only reports that something changed; what to do about it is decided from the whole state
// (decide.ts), never from the event.
import type { KubernetesObject, V1Job, V1Pod } from "@kubernetes/client-node";
import type { Logger } from "../../core/logger.js";
import { describeError } from "./api-errors.js";
import type { CachedInformer, KubernetesClients } from "./clients.js";
import { quietNodes } from "./job-status.js";

const INFORMER_RESTART_MS = 2000;
const JOB_NAME_LABEL = "batch.kubernetes.io/job-name";

export interface CacheEvents {
  /** A Job was listed, added or changed. */
  job(kjob: V1Job): void;
  /** A Job is gone. */
  jobDeleted(name: string): void;
  /** A pod of the Job `name` was added, changed or deleted. */
  pod(name: string): void;
}

export class RunnerCache {
  private readonly jobs: CachedInformer<V1Job>;
  private readonly pods: CachedInformer<V1Pod>;
  private readonly podsByJob = new Map<string, Map<string, V1Pod>>();
  private quiet: ReadonlyMap<string, number> | undefined;
  private stopped = false;

  constructor(
    kube: KubernetesClients,
    private readonly namespace: string,
    selector: string,
    private readonly events: CacheEvents,
    private readonly log: Logger,
  ) {
    const ns = namespace;
    this.jobs = kube.informer(
      `/apis/batch/v1/namespaces/${ns}/jobs`,
      () => kube.batch.listNamespacedJob({ namespace: ns, labelSelector: selector }),
      selector,
    );
    this.pods = kube.informer(
      `/api/v1/namespaces/${ns}/pods`,
      () => kube.core.listNamespacedPod({ namespace: ns, labelSelector: selector }),
      selector,
    );
    this.wire();
  }

  /** Starts both informers; resolves once both have listed (or the cache is stopped). */
  async start(): Promise<void> {
    await Promise.all([this.jobs.start(), this.pods.start()]);
    while (!this.stopped && !(listed(this.jobs) && listed(this.pods))) await sleep(50);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.allSettled([this.jobs.stop(), this.pods.stop()]);
  }

  job(name: string): V1Job | undefined {
    return this.jobs.get(name, this.namespace);
  }

  allJobs(): readonly V1Job[] {
    return this.jobs.list(this.namespace);
  }

  podsOf(name: string): V1Pod[] {
    return [...(this.podsByJob.get(name)?.values() ?? [])];
  }

  /**
   * The nodes the runner pods show gone quiet, since when (job-status.ts quietNodes): read by every
   * sync, worked out again only after a pod changed.
   */
  quietNodes(): ReadonlyMap<string, number> {
    return (this.quiet ??= quietNodes(this.pods.list(this.namespace)));
  }

  /** The names of every pod in the cache. */
  podNames(): Set<string> {
    const names = new Set<string>();
    for (const pods of this.podsByJob.values()) for (const name of pods.keys()) names.add(name);
    return names;
  }

  private wire(): void {
    const onJob = (kjob: V1Job) => {
      if (kjob.metadata?.name && !this.stopped) this.events.job(kjob);
    };
    this.jobs.on("add", onJob);
    this.jobs.on("update", onJob);
    this.jobs.on("delete", (kjob) => {
      if (kjob.metadata?.name) this.events.jobDeleted(kjob.metadata.name);
    });
    const onPod = (pod: V1Pod, deleted: boolean) => {
      this.quiet = undefined;
      const job = pod.metadata?.labels?.[JOB_NAME_LABEL];
      const name = pod.metadata?.name;
      if (!job || !name || this.stopped) return;
      let pods = this.podsByJob.get(job);
      if (deleted) {
        pods?.delete(name);
        if (pods?.size === 0) this.podsByJob.delete(job);
      } else {
        if (!pods) this.podsByJob.set(job, (pods = new Map<string, V1Pod>()));
        pods.set(name, pod);
      }
      this.events.pod(job);
    };
    this.pods.on("add", (pod) => onPod(pod, false));
    this.pods.on("update", (pod) => onPod(pod, false));
    this.pods.on("delete", (pod) => onPod(pod, true));
    for (const [what, informer] of [
      ["jobs", this.jobs],
      ["pods", this.pods],
    ] as const) {
      (informer as CachedInformer<KubernetesObject>).on("error", (err: unknown) => {
        if (this.stopped) return;
        this.log.warn({ err: describeError(err), informer: what }, "watch failed; restarting it");
        setTimeout(() => {
          if (!this.stopped) void informer.start().catch(() => undefined);
        }, INFORMER_RESTART_MS).unref();
      });
    }
  }
}

function listed(informer: { latestResourceVersion?: () => string }): boolean {
  return Boolean(informer.latestResourceVersion?.());
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
