import { hostname } from "node:os";
import { resolve } from "node:path";
import type { Redis } from "ioredis";
import { RESOLVED_CONFIG_ENV, type Config } from "../core/config/load.js";
import { RUNNER_PROCESS_ENV } from "../core/config/runner-env.js";
import type { Job } from "../core/jobs/records.js";
import { JOB_TYPES } from "../core/jobs/types.js";
import type { Logger } from "../core/logger.js";
import { retryDelay } from "../core/retry.js";
import {
  jobDeadline,
  RUNNER_RESTART,
  runVerdict,
  STOPPED_BEFORE_END,
  timeoutMessage,
  type Deadline,
} from "../core/policy.js";
import type { JobStore } from "../core/store/store.js";
import { followCancellations } from "./cancellations.js";
import { Dispatcher, type PoolRoute } from "./dispatcher.js";
import { POOL_OWNER_PREFIX } from "./pool.js";
import type { DispatchTarget, Executor, Room } from "./executor.js";
import { RunnerProcess, type RunnerOutcome } from "./runner-process.js";

/** Extra time past a job's own timeout before its runner is killed (the runner fails it first). */
const KILL_GRACE_MS = 5000;
/** Time a cancelled job's runner gets to stop its work and clean up before it is killed. */
const CANCEL_GRACE_MS = 2000;

export interface LocalExecutorOptions {
  config: Config;
  store: JobStore;
  /** A connection the executor may put in subscriber mode (queue notifications). */
  subscriber: Redis;
  /** A connection the executor duplicates for blocking reads of the events stream (cancellations). */
  redis: Redis;
  logger: Logger;
  /**
   * `local` (default): the controller's executor, claiming from the type queues (and handing jobs
   * whose class says so to the pool, with `pool`). `pool`: a pool worker (`media-service pool`),
   * taking jobs from the pool's queue, with executor.pool's concurrency and runner quota.
   */
  mode?: "local" | "pool";
  pool?: PoolRoute;
}

/** What tells the controller's local executor from a pool worker, settled once at construction. */
interface Profile {
  /** The claim owner recorded on jobs. */
  owner: string;
  /** Jobs run at once, and runner processes kept started. */
  concurrency: number;
  /** Jobs a runner process runs before it is replaced. */
  runnerMaxJobs: number;
  /** Where jobs are claimed from (the dispatcher's source, and the channel that announces them). */
  source: "queues" | "pool";
  /** At start, re-queue the jobs a previous run of this executor left behind. */
  recovers: boolean;
  /** The claim owners whose expired leases this executor gives back ("": any). */
  reapPrefix: string;
  startedMessage: string;
}

function profileOf(mode: "local" | "pool", config: Config): Profile {
  // A local executor's owner is stable across its restarts, so it takes back what it left behind.
  // A pool worker's is its own (several run on one host, or in one pod after a restart): what a
  // lost worker held comes back when its lease runs out. A pool worker gives back the pool's jobs
  // only: a Kubernetes Job's lease is its controller's.
  if (mode === "pool") {
    return {
      owner: `${POOL_OWNER_PREFIX}${hostname()}:${process.pid}`,
      concurrency: config.executor.pool.concurrency,
      runnerMaxJobs: config.executor.pool.runnerMaxJobs,
      source: "pool",
      recovers: false,
      reapPrefix: POOL_OWNER_PREFIX,
      startedMessage: "pool worker started",
    };
  }
  return {
    owner: `local:${hostname()}:${resolve(config.dataDir)}`,
    concurrency: config.executor.localConcurrency,
    runnerMaxJobs: config.executor.localRunnerMaxJobs,
    source: "queues",
    recovers: true,
    reapPrefix: "",
    startedMessage: "local executor started",
  };
}

/**
 * Runs jobs on this machine, `executor.local_concurrency` at a time, each in a runner process
 * (`media-service runner --serve`) with the lifecycle the Kubernetes executor has: claimed under a
 * lease, processing when its runner starts it, the runner's exit-code contract mirrored into the
 * job, a timeout kills the runner, a cancelled job's runner is stopped, transient failures re-queued
 * within the attempt budget, and work left by a previous run of this executor re-queued at start.
 */
export class LocalExecutor implements Executor, DispatchTarget {
  readonly owner: string;
  private readonly profile: Profile;
  private readonly config: Config;
  private readonly store: JobStore;
  private readonly log: Logger;
  private readonly idle: RunnerProcess[] = [];
  /** Every runner process alive, whatever it is doing (starting, idle, running). */
  private readonly processes = new Set<RunnerProcess>();
  private readonly running = new Map<string, RunnerProcess>();
  /** Jobs whose runner is being stopped because the job ended elsewhere (cancelled). */
  private readonly cancelled = new Set<string>();
  private readonly executions = new Set<Promise<void>>();
  private spawning = 0;
  private stopping = false;
  /** Stopping, and the grace is over: runs still going are stopped and handed back. */
  private handingBack = false;
  private readonly dispatcher: Dispatcher;
  private reaper: NodeJS.Timeout | undefined;
  private stopCancellations: (() => Promise<void>) | undefined;
  /** Stops the queue channel waking this executor's dispatcher. */
  private stopListening: (() => void) | undefined;
  private readonly runnerEnv: NodeJS.ProcessEnv;
  /** Runner starts that failed in a row (rounds of them), the last reason logged, the next try. */
  private startFailures = 0;
  private startFailure: string | undefined;
  private restartTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: LocalExecutorOptions) {
    this.config = options.config;
    this.store = options.store;
    this.log = options.logger;
    this.profile = profileOf(options.mode ?? "local", this.config);
    this.owner = this.profile.owner;
    this.runnerEnv = {
      ...RUNNER_PROCESS_ENV,
      ...process.env,
      [RESOLVED_CONFIG_ENV]: JSON.stringify(this.config),
    };
    this.dispatcher = new Dispatcher({
      store: this.store,
      target: this,
      owner: this.owner,
      leaseMs: this.config.executor.leaseMs,
      logger: this.log,
      source: this.profile.source,
      poolQueueLimit: this.config.executor.pool.queueLimit,
      ...(options.pool ? { pool: options.pool } : {}),
    });
  }

  get concurrency(): number {
    return this.profile.concurrency;
  }

  /** Jobs running now. */
  get active(): number {
    return this.running.size;
  }

  /** The process id of the runner running a job (operators, tests). */
  runnerPid(jobId: string): number | undefined {
    return this.running.get(jobId)?.pid;
  }

  async start(): Promise<void> {
    if (this.profile.recovers) await this.recover();
    this.stopListening = await Dispatcher.listen(
      this.store,
      this.options.subscriber,
      () => this.dispatcher.notify(),
      this.profile.source,
    );
    this.stopCancellations = followCancellations(
      this.store,
      this.options.redis,
      (id) => this.cancel(id),
      this.log,
    );
    this.fillPool();
    this.reaper = setInterval(
      () => void this.reapExpiredLeases(),
      Math.max(1000, this.config.executor.leaseMs / 2),
    );
    this.reaper.unref();
    this.dispatcher.start();
    this.log.info(
      { concurrency: this.concurrency, owner: this.owner, pool: Boolean(this.options.pool) },
      this.profile.startedMessage,
    );
  }

  ready(): string | undefined {
    return this.stopping ? "stopping" : undefined;
  }

  /** Stops claiming; gives running jobs `graceMs` to end, then stops their runners and re-queues them. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    clearInterval(this.reaper);
    clearTimeout(this.restartTimer);
    await this.dispatcher.stop();
    const deadline = Date.now() + graceMs;
    while (this.running.size > 0 && Date.now() < deadline) await sleep(100);
    const left = [...this.running.keys()];
    // From here on a run that ends was interrupted by this stop, not failed: it is handed back.
    this.handingBack = true;
    await Promise.all([...this.processes].map((r) => r.stop()));
    for (const id of left) {
      await this.store.requeueJob(id, STOPPED_BEFORE_END, { handback: true }).catch(() => undefined);
    }
    await Promise.allSettled([...this.executions]);
    await this.stopCancellations?.();
    this.stopListening?.();
    this.log.info({ requeued: left.length }, "local executor stopped");
  }

  /** Stops the runner of a job that ended in the store while it ran: its result is never recorded. */
  async cancel(jobId: string): Promise<void> {
    const runner = this.running.get(jobId);
    if (!runner || this.cancelled.has(jobId)) return;
    this.cancelled.add(jobId);
    this.log.info({ job_id: jobId, pid: runner.pid }, "job cancelled while running; stopping its runner");
    await runner.stop(CANCEL_GRACE_MS);
  }

  // DispatchTarget: a job is claimed only when a runner is ready for it, so its lease starts when its
  // work can.
  room(): Room {
    if (this.stopping) return { total: 0 };
    for (let i = this.idle.length - 1; i >= 0; i--) if (!this.idle[i]!.alive) this.idle.splice(i, 1);
    const free = this.concurrency - this.running.size;
    if (this.idle.length === 0 && free > 0 && this.spawning === 0 && !this.restartTimer) this.spawnRunner();
    return { total: Math.min(free, this.idle.length) };
  }

  async launch(id: string): Promise<void> {
    const runner = this.idle.shift();
    if (!runner?.alive) throw new Error("no runner process is ready");
    this.running.set(id, runner);
    const execution: Promise<void> = this.execute(id, runner).finally(() =>
      this.executions.delete(execution),
    );
    this.executions.add(execution);
  }

  private spawnRunner(): void {
    if (this.stopping) return;
    this.spawning++;
    const runner = new RunnerProcess({
      maxJobs: this.profile.runnerMaxJobs,
      env: this.runnerEnv,
      logger: this.log,
    });
    this.processes.add(runner);
    let started = false;
    runner.ready
      .then(() => {
        started = true;
        if (this.startFailure !== undefined) this.log.info("runner processes start again");
        this.startFailures = 0;
        this.startFailure = undefined;
        if (runner.alive) this.idle.push(runner);
        this.dispatcher.notify();
      })
      .catch((err: Error) => this.startFailed(err.message))
      .finally(() => {
        this.spawning--;
      });
    void runner.exit.then(() => {
      this.processes.delete(runner);
      const at = this.idle.indexOf(runner);
      if (at >= 0) this.idle.splice(at, 1);
      // Keep the pool full: a runner leaves after its job quota, or when it was killed. One that
      // never started is started again after a delay (startFailed).
      if (started) this.fillPool();
    });
  }

  /** Starts runner processes until there are `concurrency` of them (none while a restart waits). */
  private fillPool(): void {
    while (
      !this.stopping &&
      !this.restartTimer &&
      this.idle.length + this.running.size + this.spawning < this.concurrency
    ) {
      this.spawnRunner();
    }
  }

  /**
   * A runner process died before it was ready: runners are started again after a growing delay
   * (RUNNER_RESTART), never in a tight loop, and each reason is logged once, not at every try.
   */
  private startFailed(reason: string): void {
    if (this.stopping || this.restartTimer) return; // its round's delay is already set
    this.startFailures++;
    const delay = retryDelay(this.startFailures, RUNNER_RESTART.initialMs, RUNNER_RESTART.maxMs);
    if (reason !== this.startFailure) {
      this.startFailure = reason;
      this.log.error(
        { err: reason, retry_in_ms: delay },
        "a runner process failed to start; no job runs until one does (trying again with a growing delay, up to a minute)",
      );
    } else {
      this.log.debug(
        { err: reason, failures: this.startFailures, retry_in_ms: delay },
        "runner start failed again",
      );
    }
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      this.fillPool();
    }, delay);
    this.restartTimer.unref();
  }

  private async execute(id: string, runner: RunnerProcess): Promise<void> {
    const log = this.log.child({ job_id: id });
    const leaseMs = this.config.executor.leaseMs;
    // The lease is the job's heartbeat; a job that no longer holds one ended elsewhere (cancelled, or
    // given back after this controller lost Redis for a lease): its runner is stopped.
    const renew = setInterval(() => {
      void this.store.renewLease(id, leaseMs).then(
        (held) => {
          if (!held) void this.cancel(id);
        },
        () => undefined,
      );
    }, leaseMs / 3);
    let killTimer: NodeJS.Timeout | undefined;
    let released = false;
    // The runner is free for the next job as soon as it has reported: what is left (mirroring its
    // outcome into the job) does not keep it waiting.
    const release = () => {
      if (released) return;
      released = true;
      clearTimeout(killTimer);
      clearInterval(renew);
      this.running.delete(id);
      this.cancelled.delete(id);
      if (runner.alive && !this.stopping) this.idle.push(runner);
      this.dispatcher.notify();
    };
    let timedOut: Deadline | undefined;
    try {
      // Started here, charging its attempt, so that a runner that dies before it starts the job
      // still counts against the job's budget; the record comes in the same round trip, and goes to
      // the runner with the job (it does not start it again).
      const { started, job } = await this.store.startAndGet(id, leaseMs);
      if (!job || !started) {
        log.info({ status: job?.status }, "claimed job is no longer pending; skipped");
        return;
      }
      const deadline = jobDeadline(job, this.config.executor.timeoutsMs);
      killTimer = setTimeout(() => {
        timedOut = deadline;
        log.warn({ timeout_ms: deadline.ms }, "job overran its time; killing its runner");
        runner.kill();
      }, deadline.ms + KILL_GRACE_MS);
      const outcome = await runner.run(id, job);
      const handingBack = this.handingBack;
      release();
      if (handingBack && outcome.code !== 0) {
        await this.store.requeueJob(id, STOPPED_BEFORE_END, { handback: true });
        return;
      }
      await this.settle(job, outcome, timedOut, log);
    } catch (err) {
      log.error({ err: (err as Error).message }, "running the job failed; re-queued");
      await this.store.requeueJob(id, `executor error: ${(err as Error).message}`).catch(() => undefined);
    } finally {
      release();
    }
  }

  /** Mirrors the runner's outcome into the job, by the exit-code contract. */
  private async settle(
    job: Job,
    outcome: RunnerOutcome,
    timedOut: Deadline | undefined,
    log: Logger,
  ): Promise<void> {
    const current = await this.store.getJob(job.id);
    if (!current || current.status === "completed" || current.status === "failed") return;
    if (timedOut) {
      await this.store.fail(job.id, timeoutMessage(timedOut));
      return;
    }
    const verdict = runVerdict(outcome.code, outcome.error);
    if (verdict.action === "fail") {
      await this.store.fail(job.id, verdict.error);
      return;
    }
    const retried = await this.store.requeueJob(job.id, verdict.reason);
    if (retried === "failed") {
      log.warn(
        { attempts: current.attempts, error: verdict.reason },
        "job failed for good after transient errors",
      );
    } else {
      log.info({ attempts: current.attempts, error: verdict.reason }, "transient failure; job re-queued");
    }
  }

  /** Jobs this executor held when it last stopped (crashed) have no runner now: back to their queue. */
  private async recover(): Promise<void> {
    let requeued = 0;
    for (const type of JOB_TYPES) {
      for (const entry of await this.store.activeJobs(type)) {
        if (entry.owner !== this.owner) continue;
        if ((await this.store.requeueJob(entry.id, "the executor restarted")) !== "unchanged") requeued++;
      }
    }
    if (requeued > 0) this.log.info({ requeued }, "re-queued the jobs a previous run left behind");
  }

  /**
   * Any executor's jobs whose lease ran out (it died, or lost Redis) go back to their queue, or fail
   * when their attempts are spent.
   */
  private async reapExpiredLeases(): Promise<void> {
    try {
      for (const { id, outcome } of await this.store.reap(this.profile.reapPrefix)) {
        this.log.warn(
          { job_id: id, outcome },
          outcome === "failed"
            ? "failed a job whose lease expired on its last attempt"
            : "re-queued a job whose lease expired",
        );
      }
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, "lease check failed; will retry");
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
