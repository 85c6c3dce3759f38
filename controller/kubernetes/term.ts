// One leadership term of the Kubernetes executor: its informers' cache, its queue of Jobs to sync,
// its claims in flight and its loops (lease renewals, the periodic reconcile, the dispatcher). A new
// term starts from scratch. Each step reads the state, asks decide.ts what it calls for and has
// actions.ts carry that out; nothing here decides.
import type { V1Job } from "@kubernetes/client-node";
import type { Config } from "../../core/config/load.js";
import type { Job } from "../../core/jobs/records.js";
import { JOB_TYPES, type JobType } from "../../core/jobs/types.js";
import type { Logger } from "../../core/logger.js";
import type { JobStore } from "../../core/store/store.js";
import { Dispatcher, type PoolRoute } from "../dispatcher.js";
import type { DispatchTarget } from "../executor.js";
import type { ActionRunner, TermState } from "./actions.js";
import { describeError } from "./api-errors.js";
import { RunnerCache } from "./cache.js";
import type { KubernetesClients } from "./clients.js";
import * as decide from "./decide.js";
import { isJobFinished } from "./job-status.js";
import type { ExecutorMetrics } from "./metrics.js";
import { jobName } from "./names.js";
import { WorkQueue } from "./work-queue.js";

const SYNC_CONCURRENCY = 8;

export interface TermOptions {
  config: Config;
  store: JobStore;
  logger: Logger;
  kube: KubernetesClients;
  settings: decide.DecideSettings;
  /** The label selector of the installation's runner Jobs and pods. */
  selector: string;
  /** The claim owner recorded on jobs. */
  owner: string;
  actions: ActionRunner;
  metrics: ExecutorMetrics | undefined;
  pool?: PoolRoute;
}

export class LeaderTerm implements TermState {
  readonly inflight = new Map<string, decide.InFlight>();
  readonly stuckSince = new Map<string, number>();
  readonly admissionNoted = new Set<string>();
  pausedUntil = 0;
  /** The caches have listed. */
  synced = false;
  readonly cache: RunnerCache;
  private readonly queue: WorkQueue;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly log: Logger;
  private readonly store: JobStore;
  private dispatcher: Dispatcher | undefined;
  /** Job creates in progress. */
  private creates = 0;
  private stopped = false;

  constructor(private readonly o: TermOptions) {
    this.log = o.logger;
    this.store = o.store;
    this.queue = new WorkQueue(
      (name) =>
        this.sync(name).catch((err) =>
          this.log.warn(
            { kubernetes_job: name, err: describeError(err) },
            "sync failed; the next reconcile retries it",
          ),
        ),
      SYNC_CONCURRENCY,
    );
    const events = {
      job: (kjob: V1Job) => {
        const name = kjob.metadata!.name!;
        this.inflight.delete(name);
        if (isJobFinished(kjob) || kjob.metadata?.deletionTimestamp) this.notify();
        this.queue.add(name);
      },
      jobDeleted: (name: string) => {
        this.inflight.delete(name);
        this.notify();
      },
      pod: (name: string) => this.queue.add(name),
    };
    const { namespace } = o.settings.kubernetes;
    this.cache = new RunnerCache(o.kube, namespace, o.selector, events, this.log);
  }

  /** Lists the caches, reconciles in full, then starts the loops and claims. */
  async start(): Promise<void> {
    const since = Date.now();
    try {
      await this.cache.start();
      if (this.stopped) return;
      this.synced = true;
      this.log.info(
        { jobs: this.cache.allJobs().length, took_ms: Date.now() - since },
        "leading: caches synced",
      );
      await this.reconcile();
    } catch (err) {
      this.log.error(
        { err: describeError(err) },
        "starting the leader's work failed; retrying at the next reconcile",
      );
    }
    if (this.stopped) return;
    const { config } = this.o;
    const leaseMs = config.executor.leaseMs;
    this.timers.push(setInterval(() => void this.renewLeases(), Math.max(1000, leaseMs / 3)));
    this.timers.push(setInterval(() => void this.reconcile(), config.kubernetes.reconcileIntervalMs));
    for (const t of this.timers) t.unref();
    this.dispatcher = new Dispatcher({
      store: this.store,
      target: this.dispatchTarget(),
      owner: this.o.owner,
      leaseMs,
      logger: this.log,
      poolQueueLimit: config.executor.pool.queueLimit,
      ...(this.o.pool ? { pool: this.o.pool } : {}),
    });
    this.dispatcher.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    await this.cache.stop();
    await this.dispatcher?.stop();
    await this.queue.stop();
    this.log.info({ in_flight: this.inflight.size }, "no longer leading: stopped claiming");
  }

  notify(): void {
    this.dispatcher?.notify();
  }

  activeByType(): Map<JobType, number> {
    return decide.activeByType(this.cache.allJobs(), this.inflight);
  }

  /** The dispatcher's view of this term: its room (decide.claimRoom), and the launch of a claimed job. */
  private dispatchTarget(): DispatchTarget {
    const { kubernetes } = this.o.config;
    const caps = { total: kubernetes.maxRunningJobs, perType: kubernetes.maxRunningJobsPerType };
    return {
      room: () => {
        if (this.stopped) return { total: 0 };
        return decide.claimRoom(this.activeByType(), caps, this.creates, Date.now() < this.pausedUntil);
      },
      launch: async (id, type, job) => {
        if (this.stopped) throw new Error("the controller lost leadership");
        // Creates run concurrently (the API server takes several at once far faster than one by one);
        // the claim counts against the caps from here on (in flight at once).
        this.creates++;
        try {
          await this.launch(id, type, job);
        } finally {
          this.creates--;
        }
      },
    };
  }

  /** Creates the Job of a claimed job; `read`: its record, when the dispatcher read it already. */
  private async launch(id: string, type: JobType, read?: Job): Promise<void> {
    const log = this.log.child({ job_id: id, kubernetes_job: jobName(id) });
    this.inflight.set(jobName(id), { id, type });
    try {
      const record = read ?? (await this.store.getJob(id)) ?? null;
      // Its client chooses its Job's labels, annotations and Kueue queue (kubernetes.per_client).
      const client = this.o.settings.kubernetes.perClient ? await this.store.jobClient(id) : undefined;
      await this.o.actions.apply(decide.decideLaunch(id, type, record, this.o.settings, client), this, log);
    } catch (err) {
      await this.o.actions.apply(decide.decideCreateFailure(id, err), this, log);
    }
  }

  private async renewLeases(): Promise<void> {
    if (this.stopped || !this.synced) return;
    const leaseMs = this.o.config.executor.leaseMs;
    const ids = [...decide.leasedJobIds(this.cache.allJobs(), this.inflight)];
    await Promise.all(ids.map((id) => this.store.renewLease(id, leaseMs).catch(() => false)));
  }

  /** Mirrors one Job and its pods into its job's record. */
  private async sync(name: string): Promise<void> {
    const kjob = this.cache.job(name);
    const id = decide.syncedJobId(kjob);
    if (!kjob || !id) return;
    const record = (await this.store.getJob(id)) ?? null;
    const actions = decide.decideSync({
      kjob,
      record,
      pods: this.cache.podsOf(name),
      now: Date.now(),
      stuckSince: this.stuckSince,
      admissionNoted: this.admissionNoted,
      quietNodes: this.cache.quietNodes(),
      settings: this.o.settings,
    });
    await this.o.actions.apply(actions, this, this.log.child({ job_id: id, kubernetes_job: name }));
  }

  /** The store and the cluster compared in full. */
  private async reconcile(): Promise<void> {
    if (this.stopped || !this.synced) return;
    const started = performance.now();
    try {
      for (const kjob of this.cache.allJobs()) if (kjob.metadata?.name) this.queue.add(kjob.metadata.name);
      await this.queue.drained();
      await this.adoptOrRelease();
      await this.reapPool();
      const gone = decide.goneStuckPods(this.stuckSince.keys(), this.cache.podNames());
      await this.o.actions.apply(gone, this, this.log);
      for (const name of this.admissionNoted) if (!this.cache.job(name)) this.admissionNoted.delete(name);
    } catch (err) {
      this.log.warn({ err: describeError(err) }, "reconcile failed; retrying at the next interval");
    } finally {
      this.o.metrics?.reconciled((performance.now() - started) / 1000);
    }
  }

  /** Claimed or processing jobs with no Job in the cluster (decide.decideClaimed). */
  private async adoptOrRelease(): Promise<void> {
    for (const type of JOB_TYPES) {
      for (const entry of await this.store.activeJobs(type)) {
        if (this.stopped) return;
        const name = jobName(entry.id);
        const known = Boolean(this.cache.job(name)) || this.inflight.has(name);
        const claimed = { entry, known, now: Date.now() };
        let actions = decide.decideClaimed(claimed, this.o.settings);
        if (actions[0]?.kind === "lookup") {
          const exists = await this.o.actions.jobExists(name);
          const record = exists ? undefined : ((await this.store.getJob(entry.id)) ?? null);
          const asked = { ...claimed, exists, ...(record !== undefined ? { record } : {}) };
          actions = decide.decideClaimed(asked, this.o.settings);
        }
        await this.o.actions.apply(actions, this, this.log.child({ job_id: entry.id }));
      }
    }
  }

  /** Jobs of pool workers that stopped renewing their lease (a worker killed mid-job): back to their queue. */
  private async reapPool(): Promise<void> {
    if (!this.o.pool) return;
    for (const { id, outcome } of await this.store.reap(this.o.settings.poolOwnerPrefix)) {
      if (outcome === "failed") {
        const error = (await this.store.getJob(id))?.error ?? "its pool worker was lost";
        await this.o.actions.failed(id, "job_lost", error);
      } else {
        this.log.warn({ job_id: id }, "re-queued a job whose pool worker stopped renewing its lease");
      }
    }
  }
}
