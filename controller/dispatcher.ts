import type { Redis } from "ioredis";
import type { Job } from "../core/jobs/records.js";
import { JOB_TYPES, type ExecutionClass, type JobType } from "../core/jobs/types.js";
import type { Logger } from "../core/logger.js";
import { executionClass, type PoolPolicy } from "../core/policy.js";
import type { JobStore } from "../core/store/store.js";
import type { DispatchTarget } from "./executor.js";
import { Wakeup } from "./wakeup.js";

/** How often an idle dispatcher looks for work when no notification came. */
const IDLE_POLL_MS = 1000;

/** A claimed job routed: to the target, with its record if it was read, or seen to ("pool"). */
type Routed = { job: Job | undefined } | "pool";

/** The warm runner pool, as the dispatcher that hands it jobs sees it. */
export interface PoolRoute {
  policy: PoolPolicy;
  /** The size of a job's source in bytes (a HEAD), or null when it cannot be told. */
  sourceBytes(job: Job): Promise<number | null>;
  /** Called for each job dispatched, with the class it got. */
  dispatched?(type: JobType, cls: "job" | "pool"): void;
}

export interface DispatcherOptions {
  store: JobStore;
  target: DispatchTarget;
  /** The claim owner recorded on jobs. */
  owner: string;
  leaseMs: number;
  logger: Logger;
  /**
   * Where the jobs come from: the type queues (round-robin across types), or the pool's queue (a
   * pool worker: the controller's dispatcher has ordered them already). Default: the type queues.
   */
  source?: "queues" | "pool";
  /**
   * Jobs the pool's queue holds at most (executor.pool.queue_limit): what the jobs handed to the pool
   * fill it up to, with `pool`; what a claim from it is told, with the pool's queue as the source.
   */
  poolQueueLimit: number;
  /** With the type queues: hand the jobs whose class says so to the pool instead of the target. */
  pool?: PoolRoute;
}

/**
 * The claim loop both executors share: while its target has room it claims the next job, visiting
 * the queues round-robin so that a long queue of one type never starves the others, skipping the
 * types at their cap, and hands each claim to the target. It sleeps until a queue announces work
 * (the store's queues channel), the target reports room (`notify`), or a second has passed.
 */
export class Dispatcher {
  private readonly wakeup = new Wakeup();
  private cursor = 0;
  private running = false;
  private loop: Promise<void> | undefined;
  private readonly launches = new Set<Promise<void>>();
  /** No claims before this time: the target just failed to take one. */
  private pausedUntil = 0;
  /** The pool queue's length as last seen (this dispatcher's own hand-overs included). */
  private poolLength = 0;
  /** Types whose first job waits for room of one kind: skipped until there is some. */
  private readonly waiting = new Map<JobType, "job" | "pool">();
  /** The pool's queue as last looked at: jobs taken from it ever, and since when none were. */
  private poolWatch = { at: 0, taken: -1, since: 0, warned: false };

  constructor(private readonly options: DispatcherOptions) {}

  /**
   * Subscribes `subscriber` to the store's queues channel (a dispatcher of the type queues), or to the
   * pool's channel (a pool worker's); every message calls `onWork`, until the function returned is
   * called. The channel stays subscribed: another listener in the process may share it.
   */
  static async listen(
    store: JobStore,
    subscriber: Redis,
    onWork: () => void,
    source: "queues" | "pool" = "queues",
  ): Promise<() => void> {
    const channel = source === "pool" ? store.keys.poolChannel() : store.keys.queuesChannel();
    const onMessage = (ch: string) => {
      if (ch === channel) onWork();
    };
    subscriber.on("message", onMessage);
    await subscriber.subscribe(channel);
    return () => subscriber.off("message", onMessage);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.claimLoop();
  }

  /** Stops claiming; resolves when the loop has ended and every handed claim has been taken. */
  async stop(): Promise<void> {
    this.running = false;
    this.notify();
    await this.loop;
    await Promise.allSettled([...this.launches]);
  }

  /** Work or room may be there: look now. */
  notify(): void {
    this.wakeup.notify();
  }

  private async claimLoop(): Promise<void> {
    const { store, logger } = this.options;
    while (this.running) {
      await this.watchPool();
      const room = Date.now() < this.pausedUntil ? undefined : this.options.target.room();
      const jobRoom = room !== undefined && room.total > 0;
      const poolRoom = await this.poolHasRoom();
      if (!jobRoom && !poolRoom) {
        await this.wakeup.wait(IDLE_POLL_MS);
        continue;
      }
      let claimed: { id: string; type: JobType } | null = null;
      try {
        claimed = await this.claimNext(jobRoom ? room.full : undefined, jobRoom, poolRoom);
      } catch (err) {
        logger.warn({ err: (err as Error).message }, "claiming a job failed; retrying");
      }
      if (!claimed) {
        await this.wakeup.wait(IDLE_POLL_MS);
        continue;
      }
      const { id, type } = claimed;
      if (!this.running) {
        await store
          .requeueJob(id, "the controller stopped before the job started", { handback: true })
          .catch(() => undefined);
        return;
      }
      let routed: Routed;
      try {
        routed = await this.route(id, type, jobRoom, poolRoom);
      } catch (err) {
        logger.warn({ job_id: id, err: (err as Error).message }, "routing a claimed job failed; re-queued");
        await store
          .requeueJob(id, `routing failed: ${(err as Error).message}`, { handback: true })
          .catch(() => undefined);
        continue;
      }
      if (routed === "pool") continue;
      this.launch(id, type, routed.job);
    }
  }

  private launch(id: string, type: JobType, job: Job | undefined): void {
    const { store, target, logger } = this.options;
    const launch: Promise<void> = target
      .launch(id, type, job)
      .catch(async (err: Error) => {
        this.pausedUntil = Date.now() + IDLE_POLL_MS;
        logger.error({ job_id: id, err: err.message }, "handing over a claimed job failed; re-queued");
        await store
          .requeueJob(id, `executor error: ${err.message}`, { handback: true })
          .catch(() => undefined);
      })
      .finally(() => {
        this.launches.delete(launch);
        this.notify();
      });
    this.launches.add(launch);
  }

  /**
   * Where a job just claimed goes: the target (returns the job's record as read here, if it was, for
   * the caller to launch it with), the pool's queue ("pool", done here), or back to its queue when
   * the room it needs is gone (also "pool": nothing for the caller to do), its type then waiting for
   * that room.
   */
  private async route(id: string, type: JobType, jobRoom: boolean, poolRoom: boolean): Promise<Routed> {
    const { pool, store, owner, logger, poolQueueLimit } = this.options;
    if (!pool?.policy.enabled) return { job: undefined };
    const job = await store.getJob(id);
    if (!job || job.status !== "pending") return { job }; // the target skips it, as it always has
    let decision = executionClass(job, pool.policy);
    if (decision.class === "auto") decision = executionClass(job, pool.policy, await pool.sourceBytes(job));
    const cls = decision.class as Exclude<ExecutionClass, "auto">;
    const has = cls === "pool" ? poolRoom : jobRoom;
    if (!has) return this.handBack(id, type, cls);
    if (cls === "job") {
      pool.dispatched?.(type, "job");
      return { job };
    }
    const length = await store.toPool(id, owner, decision.why, poolQueueLimit);
    if (length === 0) {
      this.poolLength = poolQueueLimit;
      return this.handBack(id, type, "pool");
    }
    if (length > 0) {
      this.poolLength = length;
      pool.dispatched?.(type, "pool");
      logger.debug({ job_id: id, type, why: decision.why }, "job handed to the pool");
    }
    return "pool";
  }

  private async handBack(id: string, type: JobType, needs: "job" | "pool"): Promise<"pool"> {
    this.waiting.set(type, needs);
    await this.options.store
      .requeueJob(id, `waiting for room in the ${needs === "pool" ? "pool" : "executor"}`, { handback: true })
      .catch(() => undefined);
    return "pool";
  }

  /**
   * Once a lease: jobs waiting in the pool's queue while no worker took one for two leases is what
   * an operator must hear of (no `media-service pool` running, or none reaching Redis); said once
   * per stall, and again when workers take jobs again.
   */
  private async watchPool(): Promise<void> {
    const { pool, store, leaseMs, logger } = this.options;
    const now = Date.now();
    if (!pool?.policy.enabled || now - this.poolWatch.at < leaseMs) return;
    this.poolWatch.at = now;
    const { waiting, taken } = await store.poolProgress().catch(() => ({ waiting: 0, taken: -1 }));
    const w = this.poolWatch;
    if (taken !== w.taken || waiting === 0) {
      if (w.warned && taken !== w.taken) logger.info({ waiting }, "pool workers are taking jobs again");
      Object.assign(w, { taken, since: now, warned: false });
      return;
    }
    if (!w.warned && now - w.since >= 2 * leaseMs) {
      w.warned = true;
      logger.warn(
        { waiting, stalled_s: Math.round((now - w.since) / 1000) },
        "jobs wait in the pool's queue and no pool worker has taken one for two leases: is `media-service pool` running and reaching Redis? (executor.pool.enabled sends jobs there)",
      );
    }
  }

  /** Whether the pool's queue can take a job (read again from the store when it last looked full). */
  private async poolHasRoom(): Promise<boolean> {
    const { pool, store, poolQueueLimit } = this.options;
    if (!pool?.policy.enabled) return false;
    if (this.poolLength >= poolQueueLimit) {
      this.poolLength = await store.poolLength().catch(() => poolQueueLimit);
    }
    return this.poolLength < poolQueueLimit;
  }

  /**
   * The next job of the first queue, from the cursor on, that may be claimed now: with the pool's
   * queue as its source, the oldest job there; otherwise a type not at its cap with room of the kind
   * it waits for (a type the pool may take is tried while either kind has room).
   */
  private async claimNext(
    full: ReadonlySet<JobType> | undefined,
    jobRoom: boolean,
    poolRoom: boolean,
  ): Promise<{ id: string; type: JobType } | null> {
    const { store, owner, leaseMs, pool } = this.options;
    if (this.options.source === "pool") {
      return jobRoom ? store.claimPooled(leaseMs, owner, this.options.poolQueueLimit) : null;
    }
    // The types there is room for, from the cursor on (round robin between types), tried in one call.
    const eligible: JobType[] = [];
    for (let i = 0; i < JOB_TYPES.length; i++) {
      const type = JOB_TYPES[(this.cursor + i) % JOB_TYPES.length]!;
      const pooled = pool?.policy.enabled === true && pool.policy.classes[type] !== "job";
      const canJob = jobRoom && !full?.has(type);
      const waits = this.waiting.get(type);
      if (waits === "job" ? !canJob : waits === "pool" ? !poolRoom : !(canJob || (pooled && poolRoom)))
        continue;
      eligible.push(type);
    }
    const claimed = await store.claimFirst(eligible, leaseMs, owner);
    // A type tried is no longer waiting for room (those after the claimed one were not tried).
    for (const type of eligible) {
      this.waiting.delete(type);
      if (type === claimed?.type) break;
    }
    if (claimed) this.cursor = JOB_TYPES.indexOf(claimed.type) + 1;
    return claimed;
  }
}
