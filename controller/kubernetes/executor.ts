// The Kubernetes executor: one batch/v1 Job per media job, pod state mirrored into the job record.
// Only the leader (a coordination.k8s.io Lease) claims jobs and creates Jobs. Everything it does is
// level-triggered: a sync of one Job compares the Job, its pods and the job record and acts on the
// difference, so a duplicate event, a missed event (the periodic reconcile syncs everything) or a
// restart at any point is harmless. Job names are derived from job ids: a create retried after a
// crash meets AlreadyExists, never a second Job.
import { hostname } from "node:os";
import { randomUUID } from "node:crypto";
import {
  ApiException,
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  makeInformer,
  type Informer,
  type KubernetesObject,
  type ObjectCache,
  type V1Job,
  type V1Pod,
} from "@kubernetes/client-node";
import type { Redis } from "ioredis";
import type { Registry } from "prom-client";
import type { Config } from "../../core/config/load.js";
import type { Job } from "../../core/jobs/records.js";
import { JOB_TYPES, type JobType } from "../../core/jobs/types.js";
import type { Logger } from "../../core/logger.js";
import { jobDeadline, type Deadline } from "../../core/policy.js";
import type { JobStore } from "../../core/store/store.js";
import { RUNNER_ENV } from "../../core/config/runner-env.js";
import {
  ANNOTATIONS,
  buildJobManifest,
  kubernetesSettings,
  LABELS,
  runnerTimeoutSeconds,
  selectorLabels,
  type KubernetesSettings,
} from "./job-manifest.js";
import { isJobFinished, observeJob, type FailureReason } from "./job-status.js";
import { bodyMessage, describeError } from "./api-errors.js";
import { LeaderElector } from "./leader-election.js";
import { registerExecutorMetrics, type ExecutorMetrics } from "./metrics.js";
import { JobEventRecorder } from "./events.js";
import { jobName } from "./names.js";
import { followCancellations } from "../cancellations.js";
import { Dispatcher, type PoolRoute } from "../dispatcher.js";
import { POOL_OWNER_PREFIX } from "../pool.js";
import type { DispatchTarget, Executor } from "../executor.js";

/** A finished job whose runner pod still runs after this long has its Job deleted. */
const TERMINAL_GRACE_MS = 15_000;
/** No claims for this long after the API server failed a create. */
const CREATE_FAILURE_PAUSE_MS = 1000;
const INFORMER_RESTART_MS = 2000;
const SYNC_CONCURRENCY = 8;
const MAX_CONCURRENT_CREATES = 32;
const JOB_NAME_LABEL = "batch.kubernetes.io/job-name";

export interface KubernetesExecutorOptions {
  config: Config;
  store: JobStore;
  /** A connection the executor may put in subscriber mode (queue notifications). */
  subscriber: Redis;
  /** A connection the executor duplicates for blocking reads of the events stream. */
  redis: Redis;
  logger: Logger;
  kubeConfig?: KubeConfig;
  /** Where the executor's metrics are registered (the controller's /metrics). */
  registry?: Registry;
  /** This replica's name in the leader Lease; default `<hostname>_<random>`. */
  identity?: string;
  /** The warm runner pool, when executor.pool.enabled: jobs whose class says so go there. */
  pool?: PoolRoute;
}

interface InFlight {
  id: string;
  type: JobType;
}

/** One leadership term: its informers, caches and loops. A new term starts from scratch. */
interface Term {
  jobs: Informer<V1Job> & ObjectCache<V1Job> & { latestResourceVersion?: () => string };
  pods: Informer<V1Pod> & ObjectCache<V1Pod> & { latestResourceVersion?: () => string };
  podsByJob: Map<string, Map<string, V1Pod>>;
  inflight: Map<string, InFlight>;
  dirty: Set<string>;
  draining: Promise<void> | undefined;
  firstSeenStuck: Map<string, number>;
  timers: NodeJS.Timeout[];
  synced: boolean;
  /** Claims jobs for this term while it lasts. */
  dispatcher?: Dispatcher;
  /** Job creates in progress. */
  creates: number;
  /** No claims before this time (after the API server failed a create). */
  pausedUntil: number;
}

export function loadKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}

export class KubernetesExecutor implements Executor {
  readonly identity: string;
  /** The claim owner recorded on jobs: shared by every replica of the installation, so a new leader adopts. */
  readonly owner: string;
  private readonly config: Config;
  private readonly settings: KubernetesSettings;
  private readonly namespace: string;
  private readonly store: JobStore;
  private readonly log: Logger;
  private readonly batch: BatchV1Api;
  private readonly kc: KubeConfig;
  private readonly recorder: JobEventRecorder;
  private readonly elector: LeaderElector | undefined;
  private readonly metrics: ExecutorMetrics | undefined;
  private readonly selector: string;
  private term: Term | undefined;
  private stopping = false;
  private stopCancellations: (() => Promise<void>) | undefined;
  /** Stops the queue channel waking this executor's dispatcher. */
  private stopListening: (() => void) | undefined;
  private leaderSince = 0;

  constructor(private readonly options: KubernetesExecutorOptions) {
    this.config = options.config;
    this.settings = kubernetesSettings(options.config);
    this.namespace = this.settings.namespace;
    this.store = options.store;
    this.log = options.logger;
    this.kc = options.kubeConfig ?? loadKubeConfig();
    this.batch = this.kc.makeApiClient(BatchV1Api);
    this.recorder = new JobEventRecorder(this.kc, this.namespace, this.settings.instance, this.log);
    this.identity = options.identity ?? `${hostname()}_${randomUUID().slice(0, 8)}`;
    this.owner = `kubernetes:${this.namespace}/${this.settings.instance}`;
    this.selector = Object.entries(selectorLabels(this.settings.instance))
      .map(([k, v]) => `${k}=${v}`)
      .join(",");
    const election = this.config.kubernetes.leaderElection;
    if (election.enabled) {
      this.elector = new LeaderElector({
        api: this.kc.makeApiClient(CoordinationV1Api),
        namespace: this.namespace,
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
    if (options.registry) {
      this.metrics = registerExecutorMetrics(options.registry, {
        isLeader: () => this.isLeader,
        activeJobs: () => this.activeByType(),
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
    const counts = new Map<JobType, number>();
    const term = this.term;
    if (!term) return counts;
    const add = (type: JobType) => counts.set(type, (counts.get(type) ?? 0) + 1);
    for (const job of term.jobs.list(this.namespace)) {
      if (isJobFinished(job)) continue;
      const type = job.metadata?.labels?.[LABELS.jobType] as JobType | undefined;
      if (type && JOB_TYPES.includes(type)) add(type);
    }
    for (const [name, entry] of term.inflight) {
      if (!term.jobs.get(name, this.namespace)) add(entry.type);
    }
    return counts;
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
        namespace: this.namespace,
        instance: this.settings.instance,
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
    const name = jobName(jobId);
    const kjob = term.jobs.get(name, this.namespace);
    if (kjob && !isJobFinished(kjob)) {
      await this.deleteJob(name, "its job was cancelled", this.log.child({ job_id: jobId }));
    }
  }

  private notify(): void {
    this.term?.dispatcher?.notify();
  }

  private current(term: Term): boolean {
    return !this.stopping && this.term === term;
  }

  // ---------------------------------------------------------------------------------------------
  // Leadership

  private async startLeading(): Promise<void> {
    if (this.stopping || this.term) return;
    this.leaderSince = Date.now();
    const term: Term = {
      jobs: this.makeJobInformer(),
      pods: this.makePodInformer(),
      podsByJob: new Map(),
      inflight: new Map(),
      dirty: new Set(),
      draining: undefined,
      firstSeenStuck: new Map(),
      timers: [],
      synced: false,
      creates: 0,
      pausedUntil: 0,
    };
    this.term = term;
    this.wireInformers(term);
    try {
      await Promise.all([term.jobs.start(), term.pods.start()]);
      while (this.current(term) && !(hasListed(term.jobs) && hasListed(term.pods))) await sleep(50);
      if (!this.current(term)) return;
      term.synced = true;
      this.log.info(
        { jobs: term.jobs.list(this.namespace).length, took_ms: Date.now() - this.leaderSince },
        "leading: caches synced",
      );
      await this.reconcile(term);
    } catch (err) {
      this.log.error(
        { err: describeError(err) },
        "starting the leader's work failed; retrying at the next reconcile",
      );
    }
    if (!this.current(term)) return;
    const leaseMs = this.config.executor.leaseMs;
    term.timers.push(setInterval(() => void this.renewLeases(term), Math.max(1000, leaseMs / 3)));
    term.timers.push(
      setInterval(() => void this.reconcile(term), this.config.kubernetes.reconcileIntervalMs),
    );
    for (const t of term.timers) t.unref();
    term.dispatcher = new Dispatcher({
      store: this.store,
      target: this.dispatchTarget(term),
      owner: this.owner,
      leaseMs,
      logger: this.log,
      poolQueueLimit: this.config.executor.pool.queueLimit,
      ...(this.options.pool ? { pool: this.options.pool } : {}),
    });
    term.dispatcher.start();
  }

  private async stopLeading(): Promise<void> {
    const term = this.term;
    if (!term) return;
    this.term = undefined;
    for (const t of term.timers) clearInterval(t);
    await Promise.allSettled([term.jobs.stop(), term.pods.stop()]);
    await term.dispatcher?.stop();
    await term.draining;
    this.log.info({ in_flight: term.inflight.size }, "no longer leading: stopped claiming");
  }

  // ---------------------------------------------------------------------------------------------
  // Informers

  private makeJobInformer(): Term["jobs"] {
    return makeInformer<V1Job>(
      this.kc,
      `/apis/batch/v1/namespaces/${this.namespace}/jobs`,
      () => this.batch.listNamespacedJob({ namespace: this.namespace, labelSelector: this.selector }),
      this.selector,
    );
  }

  private makePodInformer(): Term["pods"] {
    const core = this.kc.makeApiClient(CoreV1Api);
    return makeInformer<V1Pod>(
      this.kc,
      `/api/v1/namespaces/${this.namespace}/pods`,
      () => core.listNamespacedPod({ namespace: this.namespace, labelSelector: this.selector }),
      this.selector,
    );
  }

  private wireInformers(term: Term): void {
    const onJob = (job: V1Job) => {
      const name = job.metadata?.name;
      if (!name || !this.current(term)) return;
      term.inflight.delete(name);
      if (isJobFinished(job) || job.metadata?.deletionTimestamp) this.notify();
      this.markDirty(term, name);
    };
    term.jobs.on("add", onJob);
    term.jobs.on("update", onJob);
    term.jobs.on("delete", (job) => {
      const name = job.metadata?.name;
      if (name) term.inflight.delete(name);
      this.notify();
    });
    const onPod = (pod: V1Pod, deleted: boolean) => {
      const job = pod.metadata?.labels?.[JOB_NAME_LABEL];
      const name = pod.metadata?.name;
      if (!job || !name || !this.current(term)) return;
      let pods = term.podsByJob.get(job);
      if (deleted) {
        pods?.delete(name);
        if (pods?.size === 0) term.podsByJob.delete(job);
      } else {
        if (!pods) term.podsByJob.set(job, (pods = new Map<string, V1Pod>()));
        pods.set(name, pod);
      }
      this.markDirty(term, job);
    };
    term.pods.on("add", (pod) => onPod(pod, false));
    term.pods.on("update", (pod) => onPod(pod, false));
    term.pods.on("delete", (pod) => onPod(pod, true));
    for (const [what, informer] of [
      ["jobs", term.jobs],
      ["pods", term.pods],
    ] as const) {
      (informer as Informer<KubernetesObject>).on("error", (err: unknown) => {
        if (!this.current(term)) return;
        this.log.warn({ err: describeError(err), informer: what }, "watch failed; restarting it");
        setTimeout(() => {
          if (this.current(term)) void informer.start().catch(() => undefined);
        }, INFORMER_RESTART_MS).unref();
      });
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Claiming and creating Jobs

  /**
   * The dispatcher's view of this term: room under kubernetes.max_running_jobs and the per-type caps
   * (Jobs created and not finished, and creates in flight, count), no more than
   * MAX_CONCURRENT_CREATES creates at once, and none for a moment after the API server failed one.
   */
  private dispatchTarget(term: Term): DispatchTarget {
    return {
      room: () => {
        if (!this.current(term) || term.creates >= MAX_CONCURRENT_CREATES || Date.now() < term.pausedUntil) {
          return { total: 0 };
        }
        const active = this.activeByType();
        let running = 0;
        for (const n of active.values()) running += n;
        const full = new Set<JobType>();
        for (const [type, cap] of Object.entries(this.config.kubernetes.maxRunningJobsPerType)) {
          if (cap !== undefined && (active.get(type as JobType) ?? 0) >= cap) full.add(type as JobType);
        }
        return { total: this.config.kubernetes.maxRunningJobs - running, full };
      },
      launch: async (id, type, job) => {
        if (!this.current(term)) throw new Error("the controller lost leadership");
        // Creates run concurrently (the API server takes several at once far faster than one by one);
        // the claim counts against the caps from here on (in flight at once).
        term.creates++;
        try {
          await this.launch(term, id, type, job);
        } finally {
          term.creates--;
        }
      },
    };
  }

  /** The job's own time: the one its Job gave the runner (JOB_TIMEOUT_SECONDS), else the policy's. */
  private deadline(job: Job, kjob?: V1Job): Deadline {
    const given = kjob && runnerTimeoutSeconds(kjob);
    return jobDeadline(
      job,
      this.config.executor.timeoutsMs,
      given !== undefined ? { seconds: given, setting: RUNNER_ENV.jobTimeoutSeconds } : undefined,
    );
  }

  /** Creates the Job of a claimed job; `read`: its record, when the dispatcher read it already. */
  private async launch(term: Term, id: string, type: JobType, read?: Job): Promise<void> {
    const name = jobName(id);
    const log = this.log.child({ job_id: id, kubernetes_job: name });
    term.inflight.set(name, { id, type });
    try {
      const job = read ?? (await this.store.getJob(id));
      if (!job || job.status !== "pending") {
        term.inflight.delete(name);
        log.info({ status: job?.status }, "claimed job is no longer pending; skipped");
        return;
      }
      const manifest = buildJobManifest(job, this.settings, this.deadline(job).seconds);
      await this.batch.createNamespacedJob({ namespace: this.namespace, body: manifest });
      this.metrics?.jobCreated(type);
      log.info({ type }, "Kubernetes Job created");
    } catch (err) {
      if (err instanceof ApiException && err.code === 409) {
        log.info("Kubernetes Job exists already (created before a restart); adopted");
        return;
      }
      term.inflight.delete(name);
      if (err instanceof ApiException && (err.code === 400 || err.code === 422)) {
        const message = `Kubernetes refused the runner Job: ${bodyMessage(err.body)}`;
        log.error({ err: message }, "runner Job refused; job failed");
        await this.failJob(id, "rejected", message);
        return;
      }
      log.error({ err: describeError(err) }, "creating the Kubernetes Job failed; job re-queued");
      // The API server is failing or refusing us (RBAC): claim nothing more for a moment.
      term.pausedUntil = Date.now() + CREATE_FAILURE_PAUSE_MS;
      await this.store
        .requeueJob(id, `creating its Kubernetes Job failed: ${describeError(err)}`, { handback: true })
        .catch(() => undefined);
    }
  }

  private async renewLeases(term: Term): Promise<void> {
    if (!this.current(term) || !term.synced) return;
    const ids = new Set<string>();
    for (const job of term.jobs.list(this.namespace)) {
      const id = job.metadata?.annotations?.[ANNOTATIONS.jobId];
      if (id && !isJobFinished(job)) ids.add(id);
    }
    for (const entry of term.inflight.values()) ids.add(entry.id);
    const leaseMs = this.config.executor.leaseMs;
    await Promise.all([...ids].map((id) => this.store.renewLease(id, leaseMs).catch(() => false)));
  }

  // ---------------------------------------------------------------------------------------------
  // Mirroring Jobs and pods into job records

  private markDirty(term: Term, name: string): void {
    term.dirty.add(name);
    void this.scheduleDrain(term);
  }

  /** Syncs the dirty Jobs; resolves when none is left. One drain runs at a time per term. */
  private scheduleDrain(term: Term): Promise<void> {
    term.draining ??= this.drain(term).finally(() => {
      term.draining = undefined;
      // Marked after the loop's last look, before this ran.
      if (term.dirty.size > 0 && this.current(term)) void this.scheduleDrain(term);
    });
    return term.draining;
  }

  private async drain(term: Term): Promise<void> {
    await Promise.resolve();
    while (term.dirty.size > 0 && this.current(term)) {
      const names = [...term.dirty].slice(0, SYNC_CONCURRENCY);
      for (const n of names) term.dirty.delete(n);
      await Promise.all(
        names.map((n) =>
          this.sync(term, n).catch((err) =>
            this.log.warn(
              { kubernetes_job: n, err: describeError(err) },
              "sync failed; the next reconcile retries it",
            ),
          ),
        ),
      );
    }
  }

  private async sync(term: Term, name: string): Promise<void> {
    const kjob = term.jobs.get(name, this.namespace);
    if (!kjob || kjob.metadata?.deletionTimestamp) return;
    const id = kjob.metadata?.annotations?.[ANNOTATIONS.jobId];
    if (!id) return;
    const log = this.log.child({ job_id: id, kubernetes_job: name });
    const record = await this.store.getJob(id);
    if (!record) {
      await this.deleteJob(name, "its job record no longer exists (pruned or never stored)", log);
      return;
    }
    const finished = isJobFinished(kjob);
    if (record.status === "completed" || record.status === "failed") {
      if (finished) return;
      const endedAt = Date.parse(record.completed_at ?? record.updated_at ?? "");
      if (!Number.isFinite(endedAt) || Date.now() - endedAt >= TERMINAL_GRACE_MS) {
        await this.deleteJob(name, `the job is ${record.status} but its runner pod still runs`, log);
      }
      return;
    }
    const pods = [...(term.podsByJob.get(name)?.values() ?? [])];
    const startedAt = Date.parse(record.started_at ?? "");
    const observed = observeJob(kjob, pods, {
      deadline: this.deadline(record, kjob),
      maxWaitMs: this.config.kubernetes.unschedulableTimeoutMs,
      now: Date.now(),
      ...(Number.isFinite(startedAt) ? { runnerStartedAt: startedAt } : {}),
    });
    switch (observed.state) {
      case "running":
        if (record.status === "pending") {
          await this.store.start(id, this.config.executor.leaseMs).catch((err: Error) => {
            log.warn({ err: err.message }, "could not mark the job processing");
          });
        }
        return;
      case "succeeded": {
        const again = await this.store.getJob(id);
        if (again && again.status !== "completed" && again.status !== "failed") {
          await this.failJob(id, "no_report", "the runner finished without reporting a result");
        }
        return;
      }
      case "failed":
        await this.failJob(id, observed.reason, observed.error, observed.attempts);
        // Its pod, still waiting, would start a runner for a job that has ended.
        if (observed.deleteJob) await this.deleteJob(name, "its runner waited too long to start", log);
        return;
      case "stuck": {
        const key = `${observed.pod}/${observed.reason}`;
        const now = Date.now();
        if (!term.firstSeenStuck.has(key)) term.firstSeenStuck.set(key, now);
        const since = term.firstSeenStuck.get(key)!;
        if (now - since < this.config.kubernetes.startFailureTimeoutMs) return;
        const waited = Math.round((now - since) / 1000);
        await this.failJob(id, observed.reason, `${observed.error} (waited ${waited} s)`);
        await this.deleteJob(name, "its pod could not start", log);
        term.firstSeenStuck.delete(key);
        return;
      }
      case "waiting":
        return;
    }
  }

  private async failJob(id: string, reason: FailureReason, error: string, attempts?: number): Promise<void> {
    if (await this.store.fail(id, error, attempts !== undefined ? { attempts } : {})) {
      await this.failed(id, reason, error);
    }
  }

  /** What follows a failure the store recorded: the metric, a log line, the Job's Event. */
  private async failed(id: string, reason: FailureReason, error: string): Promise<void> {
    this.metrics?.jobFailed(reason);
    this.log.warn({ job_id: id, reason, error }, "job failed");
    const name = jobName(id);
    await this.recorder.jobFailed(name, this.term?.jobs.get(name, this.namespace), reason, error);
  }

  private async deleteJob(name: string, why: string, log: Logger): Promise<void> {
    try {
      await this.batch.deleteNamespacedJob({
        name,
        namespace: this.namespace,
        propagationPolicy: "Background",
      });
      log.info({ why }, "Kubernetes Job deleted");
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return;
      throw err;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Reconcile: the store and the cluster compared in full

  private async reconcile(term: Term): Promise<void> {
    if (!this.current(term) || !term.synced) return;
    const started = performance.now();
    try {
      for (const job of term.jobs.list(this.namespace)) {
        if (job.metadata?.name) term.dirty.add(job.metadata.name);
      }
      await this.scheduleDrain(term);
      await this.adoptOrRelease(term);
      await this.reapPool();
      const live = new Set<string>();
      for (const pods of term.podsByJob.values()) for (const name of pods.keys()) live.add(name);
      for (const key of term.firstSeenStuck.keys()) {
        if (!live.has(key.slice(0, key.indexOf("/")))) term.firstSeenStuck.delete(key);
      }
    } catch (err) {
      this.log.warn({ err: describeError(err) }, "reconcile failed; retrying at the next interval");
    } finally {
      this.metrics?.reconciled((performance.now() - started) / 1000);
    }
  }

  /**
   * Claimed or processing jobs with no Job in the cluster: a controller died between its claim and
   * its create, or the Job was deleted. Once their lease has run out (no leader renewed it, so no
   * Job was seen for it), they go back to their queue, or fail when their attempts are spent.
   */
  private async adoptOrRelease(term: Term): Promise<void> {
    for (const type of JOB_TYPES) {
      for (const entry of await this.store.activeJobs(type)) {
        if (!this.current(term)) return;
        // A pool worker's: its lease is the worker's to renew, and reapPool's to give back.
        if (entry.owner?.startsWith(POOL_OWNER_PREFIX)) continue;
        const name = jobName(entry.id);
        if (term.jobs.get(name, this.namespace) || term.inflight.has(name)) continue;
        if (entry.leaseUntil > Date.now()) continue;
        // The cache may lag behind a create: ask the API server before giving the job back.
        if (await this.jobExists(name)) {
          await this.store.renewLease(entry.id, this.config.executor.leaseMs);
          continue;
        }
        const record = await this.store.getJob(entry.id);
        if (!record) continue;
        if (record.status === "pending") {
          if (
            (await this.store.requeueJob(entry.id, "claimed, but its Kubernetes Job was never created")) ===
            "requeued"
          ) {
            this.log.info({ job_id: entry.id }, "re-queued a claimed job that has no Kubernetes Job");
          }
        } else if (record.status === "processing") {
          const why = "its Kubernetes Job disappeared before the job ended";
          const outcome = await this.store.requeueJob(entry.id, why);
          if (outcome === "failed") {
            await this.failed(entry.id, "job_lost", (await this.store.getJob(entry.id))?.error ?? why);
          } else if (outcome === "requeued") {
            this.log.warn({ job_id: entry.id }, "re-queued a processing job whose Kubernetes Job is gone");
          }
        }
      }
    }
  }

  /** Jobs of pool workers that stopped renewing their lease (a worker killed mid-job): back to their queue. */
  private async reapPool(): Promise<void> {
    if (!this.options.pool) return;
    for (const { id, outcome } of await this.store.reap(POOL_OWNER_PREFIX)) {
      if (outcome === "failed") {
        await this.failed(id, "job_lost", (await this.store.getJob(id))?.error ?? "its pool worker was lost");
      } else {
        this.log.warn({ job_id: id }, "re-queued a job whose pool worker stopped renewing its lease");
      }
    }
  }

  private async jobExists(name: string): Promise<boolean> {
    try {
      await this.batch.readNamespacedJob({ name, namespace: this.namespace });
      return true;
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return false;
      throw err;
    }
  }
}

function hasListed(informer: { latestResourceVersion?: () => string }): boolean {
  return Boolean(informer.latestResourceVersion?.());
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
