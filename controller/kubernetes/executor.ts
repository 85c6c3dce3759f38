// The Kubernetes executor: one batch/v1 Job per media job, pod state mirrored into the job record.
// Only the leader (a coordination.k8s.io Lease) claims jobs and creates Jobs. Built sample-
// controller's way: the decisions are pure functions of the observed state (decide.ts); this file
// and term.ts (a leadership term: informers, sync queue, reconcile, claims) read that state, and
// actions.ts carries the decisions out, through Kubernetes API clients handed in (clients.ts).
// Everything is level-triggered: a duplicate event, a missed event (the periodic reconcile syncs
// everything) or a restart at any point is harmless. Job names are derived from job ids: a create
// retried after a crash meets AlreadyExists, never a second Job.
import { hostname } from "node:os";
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import type { Registry } from "prom-client";
import type { Config } from "../../core/config/load.js";
import type { JobType } from "../../core/jobs/types.js";
import type { Logger } from "../../core/logger.js";
import type { JobStore } from "../../core/store/store.js";
import { followCancellations } from "../cancellations.js";
import { Dispatcher, type PoolRoute } from "../dispatcher.js";
import type { Executor } from "../executor.js";
import { POOL_OWNER_PREFIX } from "../pool.js";
import { ActionRunner } from "./actions.js";
import type { KubernetesClients } from "./clients.js";
import { decideCancel, type DecideSettings } from "./decide.js";
import { JobEventRecorder } from "./events.js";
import { kubernetesSettings, selectorLabels } from "./job-manifest.js";
import { LeaderElector } from "./leader-election.js";
import { registerExecutorMetrics, type ExecutorMetrics } from "./metrics.js";
import { jobName } from "./names.js";
import { LeaderTerm } from "./term.js";

export interface KubernetesExecutorOptions {
  config: Config;
  store: JobStore;
  /** A connection the executor may put in subscriber mode (queue notifications). */
  subscriber: Redis;
  /** A connection the executor duplicates for blocking reads of the events stream. */
  redis: Redis;
  logger: Logger;
  /** The Kubernetes API clients it works through (clients.ts). */
  kube: KubernetesClients;
  /** Where the executor's metrics are registered (the controller's /metrics). */
  registry?: Registry;
  /** This replica's name in the leader Lease; default `<hostname>_<random>`. */
  identity?: string;
  /** The warm runner pool, when executor.pool.enabled: jobs whose class says so go there. */
  pool?: PoolRoute;
}

export class KubernetesExecutor implements Executor {
  readonly identity: string;
  /** The claim owner recorded on jobs: shared by every replica of the installation, so a new leader adopts. */
  readonly owner: string;
  private readonly config: Config;
  private readonly settings: DecideSettings;
  private readonly store: JobStore;
  private readonly log: Logger;
  private readonly actions: ActionRunner;
  private readonly elector: LeaderElector | undefined;
  private readonly metrics: ExecutorMetrics | undefined;
  private readonly selector: string;
  private term: LeaderTerm | undefined;
  private stopping = false;
  private stopCancellations: (() => Promise<void>) | undefined;
  /** Stops the queue channel waking this executor's dispatcher. */
  private stopListening: (() => void) | undefined;

  constructor(private readonly options: KubernetesExecutorOptions) {
    const { config, kube } = options;
    this.config = config;
    this.store = options.store;
    this.log = options.logger;
    const kubernetes = kubernetesSettings(config);
    const { namespace, instance } = kubernetes;
    this.settings = {
      kubernetes,
      timeoutsMs: config.executor.timeoutsMs,
      unschedulableTimeoutMs: config.kubernetes.unschedulableTimeoutMs,
      startFailureTimeoutMs: config.kubernetes.startFailureTimeoutMs,
      poolOwnerPrefix: POOL_OWNER_PREFIX,
      leaseMs: config.executor.leaseMs,
    };
    this.identity = options.identity ?? `${hostname()}_${randomUUID().slice(0, 8)}`;
    this.owner = `kubernetes:${namespace}/${instance}`;
    this.selector = Object.entries(selectorLabels(instance))
      .map(([k, v]) => `${k}=${v}`)
      .join(",");
    if (options.registry) {
      this.metrics = registerExecutorMetrics(options.registry, {
        isLeader: () => this.isLeader,
        activeJobs: () => this.activeByType(),
        waitingAdmission: () => this.term?.admissionNoted.size ?? 0,
      });
    }
    this.actions = new ActionRunner({
      store: this.store,
      batch: kube.batch,
      namespace,
      leaseMs: config.executor.leaseMs,
      recorder: new JobEventRecorder(kube.core, namespace, instance, this.log),
      metrics: this.metrics,
      log: this.log,
      cachedJob: (name) => this.term?.cache.job(name),
    });
    const election = config.kubernetes.leaderElection;
    if (election.enabled) {
      this.elector = new LeaderElector({
        api: kube.coordination,
        namespace,
        leaseName: election.leaseName,
        identity: this.identity,
        leaseDurationMs: election.leaseDurationMs,
        renewDeadlineMs: election.renewDeadlineMs,
        retryPeriodMs: election.retryPeriodMs,
        logger: this.log.child({ component: "leader-election" }),
        onStartedLeading: () => void this.startLeading(),
        onStoppedLeading: () => void this.stopLeading(),
      });
    }
  }

  get isLeader(): boolean {
    return this.term !== undefined;
  }

  /** Ready: the leader has its caches; a standby has reached the API server within a lease duration. */
  ready(): string | undefined {
    if (this.term) return this.term.synced ? undefined : "caches not synced";
    if (!this.elector) return "not started";
    const age = Date.now() - this.elector.lastContactMs;
    if (age <= this.config.kubernetes.leaderElection.leaseDurationMs) return undefined;
    return `Kubernetes API unreachable: ${this.elector.error ?? "no answer yet"}`;
  }

  /** Jobs created and not finished, by type (the leader's view; 0 on a standby). */
  activeByType(): Map<JobType, number> {
    return this.term?.activeByType() ?? new Map<JobType, number>();
  }

  async start(): Promise<void> {
    this.stopListening = await Dispatcher.listen(this.store, this.options.subscriber, () => this.notify());
    this.stopCancellations = followCancellations(
      this.store,
      this.options.redis,
      (id) => this.cancel(id),
      this.log,
    );
    if (this.elector) this.elector.start();
    else void this.startLeading();
    this.log.info(
      {
        namespace: this.settings.kubernetes.namespace,
        instance: this.settings.kubernetes.instance,
        identity: this.identity,
        max_running_jobs: this.config.kubernetes.maxRunningJobs,
        leader_election: Boolean(this.elector),
      },
      "kubernetes executor started",
    );
  }

  /**
   * Stops claiming and gives up leadership at once (`graceMs` is not needed: running Jobs run on in
   * the cluster and the next leader adopts them).
   */
  async stop(_graceMs: number): Promise<void> {
    this.stopping = true;
    await this.stopLeading();
    await this.elector?.stop();
    await this.stopCancellations?.();
    this.stopListening?.();
    this.log.info("kubernetes executor stopped");
  }

  /** A job cancelled in the store while its Job runs: the Job is deleted, which stops its pod. */
  async cancel(jobId: string): Promise<void> {
    const term = this.term;
    if (!term) return;
    const actions = decideCancel(term.cache.job(jobName(jobId)));
    await this.actions.apply(actions, term, this.log.child({ job_id: jobId }));
  }

  private notify(): void {
    this.term?.notify();
  }

  private async startLeading(): Promise<void> {
    if (this.stopping || this.term) return;
    const { config, store, logger: log, kube, pool } = this.options;
    const { settings, selector, owner, actions, metrics } = this;
    this.term = new LeaderTerm({
      config,
      store,
      logger: log,
      kube,
      settings,
      selector,
      owner,
      actions,
      metrics,
      ...(pool ? { pool } : {}),
    });
    await this.term.start();
  }

  private async stopLeading(): Promise<void> {
    const term = this.term;
    this.term = undefined;
    await term?.stop();
  }
}
