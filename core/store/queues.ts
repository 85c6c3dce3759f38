import { claimSettings } from "../jobs/client-limits.js";
import { JOB_TYPES, type JobType } from "../jobs/types.js";
import { replies, StoreBase } from "./base.js";

/** What a re-queue did: gave the job back, failed it (its retry budget was spent), or nothing. */
export type RequeueOutcome = "requeued" | "failed" | "unchanged";

/** A job whose lease had run out, and what reap did with it. */
export interface Reaped {
  id: string;
  outcome: Exclude<RequeueOutcome, "unchanged">;
}

/**
 * The queues and their claims: an executor claims a pending job under a lease, renews it while the
 * job runs, and gives the job back (or the reaper does, when the lease runs out), within the retry
 * budget. The warm pool's own queue is pool.ts's.
 */
export abstract class Queues extends StoreBase {
  /** Takes the next job of a queue under a lease; it stays pending until start(). */
  async claim(type: JobType, leaseMs: number, owner: string): Promise<string | null> {
    return (await this.claimFirst([type], leaseMs, owner))?.id ?? null;
  }

  /**
   * Claims the first job of the first non-empty queue of `types`, tried in their order, in one
   * round trip (lua/claim.lua); null when all are empty.
   */
  async claimFirst(
    types: readonly JobType[],
    leaseMs: number,
    owner: string,
  ): Promise<{ id: string; type: JobType } | null> {
    if (types.length === 0) return null;
    const settings = claimSettings(this.options.clients ?? new Map());
    const claimed = (await this.script("claim", types.join(","), leaseMs, owner, settings)) as
      [string, JobType] | null;
    return claimed ? { id: claimed[0], type: claimed[1] } : null;
  }

  /**
   * Claimed or processing → back to the head of its queue, within the retry budget (lua/requeue.lua):
   * a processing job already charged maxAttempts runs is failed instead, with the error
   * "<reason> (gave up after <n> attempts)", as fail() fails a job. A job only claimed always goes
   * back. `handback`: the run was interrupted by its executor stopping, not failed: the job goes back
   * whatever its attempts, and the attempt its run was charged is refunded.
   */
  async requeueJob(
    id: string,
    reason: string,
    options: { handback?: boolean } = {},
  ): Promise<RequeueOutcome> {
    return (await this.script(
      "requeue",
      id,
      reason,
      this.retryBudget(),
      options.handback ? "1" : "0",
    )) as RequeueOutcome;
  }

  async renewLease(id: string, leaseMs: number): Promise<boolean> {
    return (await this.script("renew", id, leaseMs)) === 1;
  }

  /**
   * Gives back the jobs whose lease ran out (by Redis' clock), as requeueJob does, counted: a job
   * past its retry budget fails (lua/reap.lua). At most 100 per queue per call. `ownerPrefix`: only
   * the jobs of owners whose name begins with it.
   */
  async reap(ownerPrefix = ""): Promise<Reaped[]> {
    const flat = (await this.script("reap", this.retryBudget(), ownerPrefix, ...JOB_TYPES)) as string[];
    const reaped: Reaped[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      reaped.push({ id: flat[i]!, outcome: flat[i + 1] as Reaped["outcome"] });
    }
    return reaped;
  }

  /** Claimed and processing jobs of a queue: who holds each and until when (epoch ms). */
  async activeJobs(type: JobType): Promise<Array<{ id: string; owner?: string; leaseUntil: number }>> {
    const entries = await this.redis.zrange(this.keys.active(type), 0, -1, "WITHSCORES");
    if (entries.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (let i = 0; i < entries.length; i += 2) pipeline.hget(this.keys.job(entries[i]!), "claimed_by");
    const owners = (await replies(pipeline, `active jobs of ${type}`)) as Array<string | null>;
    const out: Array<{ id: string; owner?: string; leaseUntil: number }> = [];
    for (let i = 0; i < entries.length; i += 2) {
      const owner = owners[i / 2];
      out.push({ id: entries[i]!, ...(owner ? { owner } : {}), leaseUntil: Number(entries[i + 1]) });
    }
    return out;
  }

  private retryBudget(): number {
    const budget = this.options.maxAttempts;
    if (budget === undefined) throw new Error("this store was made without a retry budget (maxAttempts)");
    return budget;
  }
}
