import type { Redis } from "ioredis";
import { JOB_TYPES, type JobType } from "../core/jobs/types.js";
import type { Logger } from "../core/logger.js";
import type { JobStore } from "../core/store/store.js";
import type { DispatchTarget } from "./executor.js";
import { Wakeup } from "./wakeup.js";

/** How often an idle dispatcher looks for work when no notification came. */
const IDLE_POLL_MS = 1000;

export interface DispatcherOptions {
  store: JobStore;
  target: DispatchTarget;
  /** The claim owner recorded on jobs. */
  owner: string;
  leaseMs: number;
  logger: Logger;
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

  constructor(private readonly options: DispatcherOptions) {}

  /** Subscribes `subscriber` to the store's queues channel; every message wakes the dispatchers. */
  static async listen(store: JobStore, subscriber: Redis, onWork: () => void): Promise<void> {
    const channel = store.keys.queuesChannel();
    subscriber.on("message", (ch: string) => {
      if (ch === channel) onWork();
    });
    await subscriber.subscribe(channel);
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
    const { store, target, logger } = this.options;
    while (this.running) {
      const room = Date.now() < this.pausedUntil ? undefined : target.room();
      if (!room || room.total <= 0) {
        await this.wakeup.wait(IDLE_POLL_MS);
        continue;
      }
      let claimed: { id: string; type: JobType } | null = null;
      try {
        claimed = await this.claimNext(room.full);
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
      const launch: Promise<void> = target
        .launch(id, type)
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
  }

  /** The next job of the first queue, from the cursor on, whose type is not at its cap. */
  private async claimNext(full?: ReadonlySet<JobType>): Promise<{ id: string; type: JobType } | null> {
    const { store, owner, leaseMs } = this.options;
    for (let i = 0; i < JOB_TYPES.length; i++) {
      const index = (this.cursor + i) % JOB_TYPES.length;
      const type = JOB_TYPES[index]!;
      if (full?.has(type)) continue;
      const id = await store.claim(type, leaseMs, owner);
      if (id) {
        this.cursor = index + 1;
        return { id, type };
      }
    }
    return null;
  }
}
