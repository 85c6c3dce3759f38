import type { JobType } from "../jobs/types.js";
import { replies, StoreBase } from "./base.js";

/**
 * The warm runner pool's queue (ADR 003): a dispatcher hands it jobs it claimed, pool workers take
 * them under a lease; from there on they are claimed jobs like any other (queues.ts).
 */
export abstract class Pool extends StoreBase {
  /**
   * Hands a job this owner claimed to the warm runner pool's queue (lua/pool.lua): the queue's length
   * with it, 0 when the queue holds `limit` jobs already (the job stays claimed), -1 when the job is
   * no longer this owner's pending claim.
   */
  async toPool(id: string, owner: string, why: string, limit: number): Promise<number> {
    return (await this.script("pool", id, owner, why, limit)) as number;
  }

  /**
   * A pool worker takes the oldest job of the pool's queue under a lease (lua/pool_claim.lua);
   * `queueLimit` is executor.pool.queue_limit (a claim from a full queue wakes the dispatchers).
   */
  async claimPooled(
    leaseMs: number,
    owner: string,
    queueLimit: number,
  ): Promise<{ id: string; type: JobType } | null> {
    const claimed = (await this.script("pool_claim", leaseMs, owner, queueLimit)) as [string, JobType] | null;
    return claimed ? { id: claimed[0], type: claimed[1] } : null;
  }

  /** Jobs waiting in the pool's queue (cancelled ones included until a worker drops them). */
  async poolLength(): Promise<number> {
    return this.redis.llen(this.keys.pool());
  }

  /** The pool queue's length and how many jobs workers have taken from it, ever; one round trip. */
  async poolProgress(): Promise<{ waiting: number; taken: number }> {
    const [waiting, taken] = (await replies(
      this.redis.pipeline().llen(this.keys.pool()).get(this.keys.poolTaken()),
      "pool progress",
    )) as [number, string | null];
    return { waiting: Number(waiting), taken: Number(taken ?? 0) };
  }
}
