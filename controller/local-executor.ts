import { hostname } from "node:os";
import { resolve } from "node:path";
import type { Redis } from "ioredis";
import { RESOLVED_CONFIG_ENV, type Config } from "../core/config/load.js";
import type { Job } from "../core/jobs/records.js";
import { JOB_TYPES, type JobType } from "../core/jobs/types.js";
import type { Logger } from "../core/logger.js";
import type { JobStore } from "../core/store/store.js";
import { RunnerProcess, type RunnerOutcome } from "./runner-process.js";
import { Wakeup } from "./wakeup.js";

/** Extra time past a job's own timeout before its runner is killed (the runner fails it first). */
const KILL_GRACE_MS = 5000;
/** How often an idle executor looks for work when no notification came. */
const IDLE_POLL_MS = 1000;

export interface LocalExecutorOptions {
  config: Config;
  store: JobStore;
  /** A connection the executor may put in subscriber mode (queue notifications). */
  subscriber: Redis;
  logger: Logger;
}

/**
 * Runs jobs on this machine, `executor.local_concurrency` at a time, each in a runner process
 * (`media-service runner --serve`) with the lifecycle the Kubernetes executor has: claimed under a
 * lease, processing when its runner starts it, the runner's exit-code contract mirrored into the
 * job, a timeout kills the runner, transient failures retried up to `executor.max_attempts`, and
 * work left by a previous run of this executor re-queued at start.
 */
export class LocalExecutor {
  readonly owner: string;
  private readonly config: Config;
  private readonly store: JobStore;
  private readonly log: Logger;
  private readonly idle: RunnerProcess[] = [];
  /** Every runner process alive, whatever it is doing (starting, idle, running). */
  private readonly processes = new Set<RunnerProcess>();
  private readonly running = new Map<string, RunnerProcess>();
  private spawning = 0;
  private stopping = false;
  private cursor = 0;
  private readonly wakeup = new Wakeup();
  private loop: Promise<void> | undefined;
  private reaper: NodeJS.Timeout | undefined;
  private readonly runnerEnv: NodeJS.ProcessEnv;

  constructor(private readonly options: LocalExecutorOptions) {
    this.config = options.config;
    this.store = options.store;
    this.log = options.logger;
    // Stable across restarts of this executor, so it can take back what it left behind.
    this.owner = `local:${hostname()}:${resolve(this.config.dataDir)}`;
    this.runnerEnv = { ...process.env, [RESOLVED_CONFIG_ENV]: JSON.stringify(this.config) };
  }

  get concurrency(): number {
    return this.config.executor.localConcurrency;
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
    await this.recover();
    const channel = this.store.keys.queuesChannel();
    this.options.subscriber.on("message", (ch: string) => {
      if (ch === channel) this.notify();
    });
    await this.options.subscriber.subscribe(channel);
    for (let i = 0; i < this.concurrency; i++) this.spawnRunner();
    this.reaper = setInterval(
      () => void this.reapExpiredLeases(),
      Math.max(1000, this.config.executor.leaseMs / 2),
    );
    this.reaper.unref();
    this.loop = this.claimLoop();
    this.log.info({ concurrency: this.concurrency, owner: this.owner }, "local executor started");
  }

  /** Stops claiming; gives running jobs `graceMs` to end, then stops their runners and re-queues them. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    clearInterval(this.reaper);
    this.notify();
    await this.loop;
    const deadline = Date.now() + graceMs;
    while (this.running.size > 0 && Date.now() < deadline) await sleep(100);
    const left = [...this.running.keys()];
    await Promise.all([...this.processes].map((r) => r.stop()));
    for (const id of left) {
      await this.store.requeue(id, "the controller stopped before the job ended").catch(() => undefined);
    }
    this.log.info({ requeued: left.length }, "local executor stopped");
  }

  private notify(): void {
    this.wakeup.notify();
  }

  private waitForWork(ms: number): Promise<void> {
    return this.wakeup.wait(ms);
  }

  // A job is claimed only when a runner is ready for it: its lease starts when its work can.
  private async claimLoop(): Promise<void> {
    while (!this.stopping) {
      const runner = this.running.size < this.concurrency ? this.takeIdleRunner() : undefined;
      if (!runner) {
        await this.waitForWork(IDLE_POLL_MS);
        continue;
      }
      let id: string | null = null;
      try {
        id = await this.claimNext();
      } catch (err) {
        this.log.warn({ err: (err as Error).message }, "claiming a job failed; retrying");
      }
      if (!id) {
        this.idle.unshift(runner);
        await this.waitForWork(IDLE_POLL_MS);
        continue;
      }
      void this.execute(id, runner);
    }
  }

  private takeIdleRunner(): RunnerProcess | undefined {
    for (let runner = this.idle.shift(); runner; runner = this.idle.shift()) {
      if (runner.alive) return runner;
    }
    if (this.spawning === 0 && this.running.size < this.concurrency) this.spawnRunner();
    return undefined;
  }

  /** Round-robin over the queues, so a long queue of one type never starves the others. */
  private async claimNext(): Promise<string | null> {
    for (let i = 0; i < JOB_TYPES.length; i++) {
      const index = (this.cursor + i) % JOB_TYPES.length;
      const id = await this.store.claim(JOB_TYPES[index]!, this.config.executor.leaseMs, this.owner);
      if (id) {
        this.cursor = index + 1;
        return id;
      }
    }
    return null;
  }

  private spawnRunner(): void {
    if (this.stopping) return;
    this.spawning++;
    const runner = new RunnerProcess({
      maxJobs: this.config.executor.localRunnerMaxJobs,
      env: this.runnerEnv,
      logger: this.log,
    });
    this.processes.add(runner);
    runner.ready
      .then(() => {
        if (runner.alive) this.idle.push(runner);
        this.notify();
      })
      .catch((err: Error) => this.log.error({ err: err.message }, "a runner process failed to start"))
      .finally(() => {
        this.spawning--;
      });
    void runner.exit.then(() => {
      this.processes.delete(runner);
      const at = this.idle.indexOf(runner);
      if (at >= 0) this.idle.splice(at, 1);
      // Keep the pool full: a runner leaves after its job quota, or when it was killed.
      if (!this.stopping && this.idle.length + this.running.size + this.spawning < this.concurrency) {
        this.spawnRunner();
      }
    });
  }

  private async execute(id: string, runner: RunnerProcess): Promise<void> {
    const log = this.log.child({ job_id: id });
    this.running.set(id, runner);
    const leaseMs = this.config.executor.leaseMs;
    const renew = setInterval(
      () => void this.store.renewLease(id, leaseMs).catch(() => undefined),
      leaseMs / 3,
    );
    let killTimer: NodeJS.Timeout | undefined;
    let timedOut = false;
    try {
      const job = await this.store.getJob(id);
      if (!job || job.status !== "pending") {
        log.info({ status: job?.status }, "claimed job is no longer pending; skipped");
        return;
      }
      await this.store.start(id, leaseMs);
      const timeoutMs = this.timeoutMs(job);
      killTimer = setTimeout(() => {
        timedOut = true;
        log.warn({ timeout_ms: timeoutMs }, "job overran its time; killing its runner");
        runner.kill();
      }, timeoutMs + KILL_GRACE_MS);
      const outcome = await runner.run(id);
      clearTimeout(killTimer);
      await this.settle(job, outcome, timedOut ? timeoutMs : undefined, log);
    } catch (err) {
      log.error({ err: (err as Error).message }, "running the job failed; re-queued");
      await this.store.requeue(id, `executor error: ${(err as Error).message}`).catch(() => undefined);
    } finally {
      clearTimeout(killTimer);
      clearInterval(renew);
      this.running.delete(id);
      if (runner.alive && !this.stopping) this.idle.push(runner);
      this.notify();
    }
  }

  private timeoutMs(job: Job): number {
    return job.timeout_seconds !== undefined
      ? job.timeout_seconds * 1000
      : this.config.executor.timeoutsMs[job.type as JobType];
  }

  /** Mirrors the runner's outcome into the job, by the exit-code contract. */
  private async settle(
    job: Job,
    outcome: RunnerOutcome,
    timedOutMs: number | undefined,
    log: Logger,
  ): Promise<void> {
    const current = await this.store.getJob(job.id);
    if (!current || current.status === "completed" || current.status === "failed") return;
    if (timedOutMs !== undefined) {
      const source = job.timeout_seconds !== undefined ? "timeout_seconds" : `executor.timeouts.${job.type}`;
      await this.store.fail(job.id, `job timed out after ${Math.round(timedOutMs / 1000)} s (${source})`);
      return;
    }
    if (outcome.code === 0) {
      await this.store.fail(job.id, "the runner finished without reporting a result");
      return;
    }
    if (outcome.code === 2) {
      await this.store.fail(job.id, outcome.error ?? "the runner reported a permanent failure");
      return;
    }
    const reason = outcome.error ?? `runner exited with code ${outcome.code}`;
    const attempts = current.attempts ?? 1;
    if (attempts >= this.config.executor.maxAttempts) {
      log.warn({ attempts, error: reason }, "job failed for good after transient errors");
      await this.store.fail(job.id, `${reason} (gave up after ${attempts} attempts)`);
    } else {
      log.info({ attempts, error: reason }, "transient failure; job re-queued");
      await this.store.requeue(job.id, reason);
    }
  }

  /** Jobs this executor held when it last stopped (crashed) have no runner now: back to their queue. */
  private async recover(): Promise<void> {
    let requeued = 0;
    for (const type of JOB_TYPES) {
      for (const entry of await this.store.activeJobs(type)) {
        if (entry.owner === this.owner && (await this.store.requeue(entry.id, "the executor restarted")))
          requeued++;
      }
    }
    if (requeued > 0) this.log.info({ requeued }, "re-queued the jobs a previous run left behind");
  }

  /** Any executor's jobs whose lease ran out (it died, or lost Redis) go back to their queue. */
  private async reapExpiredLeases(): Promise<void> {
    try {
      for (const id of await this.store.reapExpiredLeases()) {
        this.log.warn({ job_id: id }, "re-queued a job whose lease expired");
      }
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, "lease check failed; will retry");
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
