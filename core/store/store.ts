import { randomUUID } from "node:crypto";
import { Redis, type RedisOptions } from "ioredis";
import type { Batch, History, Job, JobSummary, QueueStats, TimelineEntry } from "../jobs/records.js";
import { HISTORY_INTERVAL_SECONDS, historyPoints, type MinuteHash } from "../stats/history.js";
import type { JobSpec } from "../jobs/spec.js";
import { JOB_TYPES, type BatchStatus, type JobState, type JobStatus, type JobType } from "../jobs/types.js";
import { JOB_DURATION_BUCKETS } from "../jobs/duration-buckets.js";
import { decodeBatch, decodeJob, decodeSummary, SUMMARY_FIELDS, type Hash } from "./codec.js";
import { IllegalTransitionError, NotFoundError, translateScriptError } from "./errors.js";
import { idempotencyClient, idempotencyKeyId, keyOf, Keys } from "./keys.js";
import { canSee, EVERYONE, type Submitter, type Viewer } from "./visibility.js";
import { parseRedisTarget } from "./redis-target.js";
import { defineScripts, scriptKeys, scriptRunner, type ScriptName, type ScriptRunner } from "./scripts.js";

export interface StoreOptions {
  keyPrefix: string;
  /** How long finished jobs and batches are kept. */
  retentionMs: number;
  /** Approximate length the events stream is trimmed to. */
  eventsMaxLen: number;
  /**
   * The retry budget (executor.max_attempts): how many runs a job may be charged (one per start)
   * before a counted re-queue fails it instead. Needed by requeueJob and reap, which refuse to run
   * without it; a process that never re-queues (the runner) can leave it out.
   */
  maxAttempts?: number;
}

/** What a cancellation did: changed the job or batch, nothing (cancelled before), or its end state. */
export type CancelOutcome = "cancelled" | "unchanged" | "completed" | "failed" | "partial";

/** What a re-queue did: gave the job back, failed it (its retry budget was spent), or nothing. */
export type RequeueOutcome = "requeued" | "failed" | "unchanged";

/** A job whose lease had run out, and what reap did with it. */
export interface Reaped {
  id: string;
  outcome: Exclude<RequeueOutcome, "unchanged">;
}

export interface NewBatch {
  id?: string;
  failFast: boolean;
  webhookUrl?: string;
}

export interface Submitted {
  jobIds: string[];
  /** The type of each job, in order. */
  types: JobType[];
  /** 1-based place of each job in its queue when it was accepted. */
  queuePositions: number[];
  batchId?: string;
}

/** A client's Idempotency-Key and the request that carries it (lua/idempotency.lua). */
export interface IdempotencyKey {
  /** The client's name; undefined without authentication. */
  client: string | undefined;
  /** The key as the client sent it (the store keeps its SHA-256). */
  key: string;
  /** The SHA-256 of the request's method, route and canonical body (api/idempotency.ts). */
  fingerprint: string;
}

/**
 * What taking an Idempotency-Key found: nothing (the key is now locked for this request, under
 * `token`), its completed submission to replay, its first request still in flight, or a request
 * with another fingerprint under the same key.
 */
export type KeyTaken =
  | { outcome: "new"; token: string }
  | { outcome: "replay"; submitted: Submitted }
  | { outcome: "in_flight" }
  | { outcome: "mismatch" };

/** A submission under an Idempotency-Key this request holds: kept as done for `ttlMs`. */
export interface IdempotentSubmit {
  key: IdempotencyKey;
  token: string;
  ttlMs: number;
}

/** Idempotency-Keys that were not new, by what became of their request. */
export const IDEMPOTENCY_OUTCOMES = ["replayed", "in_flight", "mismatch"] as const;
export type IdempotencyOutcome = (typeof IDEMPOTENCY_OUTCOMES)[number];

export interface TypeCounters {
  pending: number;
  processing: number;
  completed: number;
  failed: number;
  /** Of the failed, those cancelled (since the count exists). */
  cancelled: number;
  submittedTotal: number;
  completedTotal: number;
  failedTotal: number;
  cancelledTotal: number;
}

/** What one webhook delivery attempt came to; all but `retry` end the delivery. */
export const WEBHOOK_RESULTS = ["delivered", "retry", "failed", "refused"] as const;
export type WebhookResult = (typeof WEBHOOK_RESULTS)[number];

export interface WebhookAttempt {
  kind: "job" | "batch";
  id: string;
  webhookId: string;
  result: WebhookResult;
  /** What happened, for the record: "HTTP 200", "HTTP 503", "no response within 10 s". */
  summary: string;
  statusCode?: number;
  /** With result retry: when the next attempt is due (epoch ms). */
  nextAttemptAt?: number;
  /** The notifier's consumer group and the event's stream entry, acknowledged on a final result. */
  group: string;
  entryId: string;
}

/** A place in a list: the created_ms and id of a record (the last of a page). */
export interface ListPosition {
  createdMs: number;
  id: string;
}

/** What every list takes: who reads, how many, which creation times, and where the page starts. */
export interface ListFilter {
  limit: number;
  viewer?: Viewer;
  /** Only records created at or after this time (epoch ms). */
  createdAfter?: number;
  /** Only records created before this time (epoch ms). */
  createdBefore?: number;
  /** The page starts after this record, which need not exist any more (ListPosition of a page). */
  after?: ListPosition;
}

export interface JobListFilter extends ListFilter {
  status?: JobStatus;
  /** Only jobs of this state: failed and cancelled apart (jobs failed before the state index are not found). */
  state?: JobState;
  /** Only jobs of this type: those submitted since the type index exists (lua/submit.lua). */
  type?: JobType;
  /** Only the jobs of this batch. */
  batchId?: string;
}

export interface DurationHistogram {
  /** Cumulative counts, one per bound of JOB_DURATION_BUCKETS. */
  buckets: number[];
  count: number;
  sum: number;
}

/**
 * The system of record. Every change of state is one Lua script (see lua/); this class only
 * encodes arguments, reads records, and turns refusals into typed errors.
 */
export class JobStore {
  readonly keys: Keys;
  private readonly run: ScriptRunner;

  constructor(
    readonly redis: Redis,
    private readonly options: StoreOptions,
  ) {
    this.keys = new Keys(options.keyPrefix);
    defineScripts(redis);
    this.run = scriptRunner(redis, this.keys);
  }

  /** Runs a script with the KEYS its header declares and lib.lua's ARGV before `args`. */
  private async script(name: ScriptName, ...args: Array<string | number | Buffer>): Promise<unknown> {
    try {
      return await this.run(name, this.options.eventsMaxLen, this.options.retentionMs, ...args);
    } catch (err) {
      throw translateScriptError(err);
    }
  }

  private retryBudget(): number {
    const budget = this.options.maxAttempts;
    if (budget === undefined) throw new Error("this store was made without a retry budget (maxAttempts)");
    return budget;
  }

  /**
   * Records jobs (optionally as one batch) atomically: all of them or, on a conflict, none.
   * `by`: who submits (a client that is not an admin sees its own records only); see Submitter.
   * `idempotency`: the Idempotency-Key this request took (takeIdempotencyKey); the same call records
   * the submission as the key's result, or refuses (ConflictError) when the key is no longer its own.
   */
  async submit(
    specs: JobSpec[],
    batch?: NewBatch,
    by?: Submitter,
    idempotency?: IdempotentSubmit,
  ): Promise<Submitted> {
    const submitted = await this.submitJobs(specs, batch, by, idempotency);
    if ("retriedAs" in submitted) throw new Error("submit.lua answered a retry to a submission");
    return submitted;
  }

  /**
   * Submits `spec` (retrySpec of a failed job: its `retry_of` names the job) as that job's retry and
   * records it on the job as `retried_as`, in one script (lua/submit.lua). A job retried before is
   * not retried again unless `force`: the answer is then its retry's id (`retriedAs`) and nothing is
   * written, so concurrent retries of one job make one. NotFoundError when the job is gone,
   * IllegalTransitionError when it has not failed.
   */
  async retry(
    spec: JobSpec,
    options: { force?: boolean; by?: Submitter; idempotency?: IdempotentSubmit } = {},
  ): Promise<Submitted | { retriedAs: string }> {
    if (!spec.retry_of) throw new Error("a retry's spec names the job it retries (retry_of)");
    return this.submitJobs([spec], undefined, options.by, options.idempotency, {
      of: spec.retry_of,
      force: options.force === true,
    });
  }

  private async submitJobs(
    specs: JobSpec[],
    batch: NewBatch | undefined,
    by: Submitter | undefined,
    idempotency: IdempotentSubmit | undefined,
    retry?: { of: string; force: boolean },
  ): Promise<Submitted | { retriedAs: string }> {
    const jobs = specs.map((spec) => ({ id: randomUUID(), type: spec.type, fields: encodeSpec(spec) }));
    const batchId = batch ? (batch.id ?? randomUUID()) : undefined;
    const payload = {
      ...(by ? { client: by.name, ...(by.admin ? { admin: true } : {}) } : {}),
      jobs,
      ...(batch
        ? {
            batch: {
              id: batchId,
              fail_fast: batch.failFast,
              ...(batch.webhookUrl ? { webhook_url: batch.webhookUrl } : {}),
            },
          }
        : {}),
      ...(idempotency
        ? {
            idempotency: {
              client: idempotencyClient(idempotency.key.client),
              key: idempotencyKeyId(idempotency.key.key),
              fingerprint: idempotency.key.fingerprint,
              token: idempotency.token,
              ttl_ms: idempotency.ttlMs,
            },
          }
        : {}),
      ...(retry ? { retry } : {}),
    };
    const positions = (await this.script("submit", JSON.stringify(payload))) as
      number[] | ["retried", string];
    if (positions[0] === "retried") return { retriedAs: String(positions[1]) };
    return {
      jobIds: jobs.map((j) => j.id),
      types: jobs.map((j) => j.type),
      queuePositions: positions as number[],
      ...(batchId ? { batchId } : {}),
    };
  }

  /**
   * Takes a client's Idempotency-Key for a request (lua/idempotency.lua): locks it for `lockMs`
   * when it is new (submit() with the token then completes it, releaseIdempotencyKey() frees it),
   * or tells what the key already stands for.
   */
  async takeIdempotencyKey(key: IdempotencyKey, lockMs: number): Promise<KeyTaken> {
    const token = randomUUID();
    const [outcome, result] = (await this.script(
      "idempotency",
      "take",
      ...idempotencyArgs(key),
      token,
      key.fingerprint,
      lockMs,
    )) as [string, string?];
    switch (outcome) {
      case "new":
        return { outcome, token };
      case "replay":
        return { outcome, submitted: decodeSubmitted(result!) };
      case "in_flight":
      case "mismatch":
        return { outcome };
      default:
        throw new Error(`idempotency.lua answered ${outcome}`);
    }
  }

  /** Frees a key this request locked and did not complete; false when it is not (or no longer) its lock. */
  async releaseIdempotencyKey(key: IdempotencyKey, token: string): Promise<boolean> {
    return (await this.script("idempotency", "release", ...idempotencyArgs(key), token)) === 1;
  }

  /** Idempotency-Keys that were not new, by outcome, since the store was created. */
  async idempotencyOutcomes(): Promise<Record<IdempotencyOutcome, number>> {
    const h = (await this.redis.hgetall(this.keys.idempotencyStats())) as Hash;
    return Object.fromEntries(IDEMPOTENCY_OUTCOMES.map((o) => [o, Number(h[o] ?? 0)])) as Record<
      IdempotencyOutcome,
      number
    >;
  }

  /** A cached preview of a job's source or output (lua/preview.lua), or null when there is none. */
  async cachedPreview(id: string, of: "source" | "output"): Promise<Buffer | null> {
    return this.redis.getBuffer(this.keys.preview(id, of));
  }

  /**
   * Caches a preview for `ttlMs`, keeping at most `maxEntries` previews (the oldest go first); how
   * many were deleted to make room.
   */
  async cachePreview(
    id: string,
    of: "source" | "output",
    bytes: Buffer,
    ttlMs: number,
    maxEntries: number,
  ): Promise<number> {
    return Number(await this.script("preview", id, of, bytes, ttlMs, maxEntries));
  }

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
    const claimed = (await this.script("claim", types.join(","), leaseMs, owner)) as [string, JobType] | null;
    return claimed ? { id: claimed[0], type: claimed[1] } : null;
  }

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

  /** pending (claimed) → processing. False for a duplicate report. */
  async start(id: string, leaseMs: number): Promise<boolean> {
    return (await this.script("start", id, leaseMs)) === 1;
  }

  /**
   * start() and the job's record as it is afterwards, in one round trip (a pipeline: the transition
   * is start.lua's, as for start()). The runner's first call. A refused start (the job ended
   * already, or is not claimed) comes back as `refused`, beside the record when the job exists.
   */
  async startAndGet(
    id: string,
    leaseMs: number,
  ): Promise<{ started: boolean; job?: Job; refused?: IllegalTransitionError | NotFoundError }> {
    const pipeline = this.redis.pipeline() as unknown as Record<string, (...a: unknown[]) => unknown> & {
      hgetall(key: string): unknown;
      exec(): Promise<Array<[Error | null, unknown]> | null>;
    };
    pipeline.media_start!(
      ...scriptKeys("start", this.keys),
      this.options.eventsMaxLen,
      this.options.retentionMs,
      id,
      leaseMs,
    );
    pipeline.hgetall(this.keys.job(id));
    const replies = await pipeline.exec();
    if (!replies) throw new Error(`start of job ${id}: the pipeline was discarded`);
    const [[startErr, started], [readErr, hash]] = replies as [[Error | null, unknown], [Error | null, Hash]];
    if (readErr) throw readErr;
    const job = decodeJob(hash);
    if (startErr) {
      const err = translateScriptError(startErr);
      if (err instanceof IllegalTransitionError || err instanceof NotFoundError) {
        return { started: false, ...(job ? { job } : {}), refused: err };
      }
      throw err;
    }
    return { started: started === 1, ...(job ? { job } : {}) };
  }

  /** Ignored (false) unless the job is processing; a percent that is not a number is dropped. */
  async progress(id: string, percent: number, message = ""): Promise<boolean> {
    if (Number.isNaN(percent)) return false;
    return (await this.script("progress", id, percent, message)) === 1;
  }

  /** processing → completed. False for a duplicate or for a job failed meanwhile. */
  async complete(id: string, result: Record<string, unknown>): Promise<boolean> {
    return (
      (await this.script("complete", id, JSON.stringify(result), JSON.stringify(JOB_DURATION_BUCKETS))) === 1
    );
  }

  /**
   * A client's cancellation of a job or of a batch's unfinished jobs (lua/cancel.lua): "cancelled",
   * "unchanged" when it was cancelled before, or the status it had already ended with.
   */
  async cancel(kind: "job" | "batch", id: string, message: string): Promise<CancelOutcome> {
    return (await this.script("cancel", kind, id, message)) as CancelOutcome;
  }

  /**
   * Pending or processing → failed (false for a duplicate). `attempts`: the executor retried the job itself (a Kubernetes
   * Job's pods) and this is the last of that many failures; the error then says it gave up.
   */
  async fail(
    id: string,
    error: string,
    options: { cancelled?: boolean; attempts?: number } = {},
  ): Promise<boolean> {
    return (await this.script("fail", id, error, options.cancelled ? "1" : "0", options.attempts ?? 0)) === 1;
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

  /** Deletes finished jobs and batches past their retention. Returns how many were removed. */
  async prune(limit = 500): Promise<number> {
    return (await this.script("prune", limit)) as number;
  }

  /** The job, or undefined when there is none or `viewer` may not see it (the same answer). */
  async getJob(id: string, viewer: Viewer = EVERYONE): Promise<Job | undefined> {
    return (await this.getJobWithSeq(id, viewer))?.job;
  }

  /** The job hash's change counter together with the record, read in one round trip. */
  async getJobWithSeq(id: string, viewer: Viewer = EVERYONE): Promise<{ job: Job; seq: number } | undefined> {
    const hash = (await this.redis.hgetall(this.keys.job(id))) as Hash;
    const job = canSee(viewer, hash.client) ? decodeJob(hash) : undefined;
    return job ? { job, seq: Number(hash.seq ?? 0) } : undefined;
  }

  /**
   * A page of the jobs `viewer` may see, newest first (created_ms descending, ties by id descending,
   * bytewise), filtered (lua/list.lua). `total` counts every job matching the filter, whatever the
   * page; `next`, present when jobs follow the page, is where the next page starts (`after`).
   */
  async listJobs(filter: JobListFilter): Promise<{ jobs: JobSummary[]; total: number; next?: ListPosition }> {
    const page = await this.list("jobs", filter, {
      ...(filter.type ? { type: filter.type } : {}),
      ...(filter.state ? { state: filter.state } : {}),
      ...(filter.batchId !== undefined ? { batch_id: filter.batchId } : {}),
      fields: SUMMARY_FIELDS,
    });
    const jobs = page.records.flatMap((fields) => {
      const summary = decodeSummary(fields as Array<string | null>);
      return summary ? [summary] : [];
    });
    return { jobs, total: page.total, ...(page.next ? { next: page.next } : {}) };
  }

  /** One page of a list and its total, read in one script (lua/list.lua). */
  private async list(
    kind: "jobs" | "batches",
    filter: ListFilter & { status?: string },
    extra: Record<string, unknown>,
  ): Promise<{ records: unknown[]; total: number; next?: ListPosition }> {
    const viewer = filter.viewer ?? EVERYONE;
    const query = {
      kind,
      ...("client" in viewer ? { client: viewer.client } : {}),
      ...(filter.status ? { status: filter.status } : {}),
      ...(filter.createdAfter !== undefined ? { after: msArg(filter.createdAfter, "createdAfter") } : {}),
      ...(filter.createdBefore !== undefined ? { before: msArg(filter.createdBefore, "createdBefore") } : {}),
      ...(filter.after ? { cursor: { s: msArg(filter.after.createdMs, "after"), id: filter.after.id } } : {}),
      limit: Math.max(1, filter.limit),
      ...extra,
    };
    const reply = (await this.script("list", JSON.stringify(query))) as unknown[];
    const records: unknown[] = [];
    let last: ListPosition | undefined;
    for (let i = 2; i + 2 < reply.length; i += 3) {
      records.push(reply[i + 2]);
      last = { createdMs: Number(reply[i + 1]), id: String(reply[i]) };
    }
    const total = Number(reply[0]);
    return { records, total, ...(reply[1] === 1 && last ? { next: last } : {}) };
  }

  private async summaries(ids: string[]): Promise<JobSummary[]> {
    if (ids.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hmget(this.keys.job(id), ...SUMMARY_FIELDS);
    const rows = (await replies(pipeline, "job summaries")) as Array<Array<string | null>>;
    return rows.flatMap((fields) => {
      const summary = decodeSummary(fields);
      return summary ? [summary] : [];
    });
  }

  /** A job's timeline, oldest first; undefined when there is no such job or `viewer` may not see it. */
  async jobTimeline(id: string, viewer: Viewer = EVERYONE): Promise<TimelineEntry[] | undefined> {
    const [owner, entries] = (await replies(
      this.redis
        .multi()
        .hmget(this.keys.job(id), "id", "client")
        .lrange(keyOf(this.keys.families.job_events, id), 0, -1),
      `timeline of job ${id}`,
    )) as [Array<string | null>, string[]];
    if (!owner[0] || !canSee(viewer, owner[1] ?? undefined)) return undefined;
    return entries.flatMap((text) => {
      try {
        return [JSON.parse(text) as TimelineEntry];
      } catch {
        return [];
      }
    });
  }

  /**
   * The figures of the last `minutes` minutes (jobs ended, durations, queue depths; lib.lua
   * note_ended, note_depth), one point per `step` minutes (historyPoints), and the webhook delivery
   * counters.
   */
  async history(minutes: number, step = 1, nowMs = Date.now()): Promise<History> {
    const lookBack = 60;
    const current = Math.floor(nowMs / (HISTORY_INTERVAL_SECONDS * 1000));
    const first = current - minutes + 1;
    const pipeline = this.redis.pipeline();
    for (let m = first - lookBack; m <= current; m++) {
      pipeline.hgetall(keyOf(this.keys.families.history, String(m)));
    }
    for (const type of JOB_TYPES) pipeline.zcard(this.keys.pending(type));
    const rows = (await pipeline.exec()) ?? [];
    const hashes = rows.slice(0, lookBack + minutes).map(([err, hash]) => {
      if (err) throw err;
      return hash as MinuteHash;
    });
    // A queue an earlier version left as a list answers ZCARD with an error: its depth is unknown.
    const depths = Object.fromEntries(
      JOB_TYPES.map((type, i) => {
        const [err, depth] = rows[lookBack + minutes + i] ?? [];
        return [type, err ? 0 : Number(depth ?? 0)];
      }),
    );
    return {
      interval_seconds: HISTORY_INTERVAL_SECONDS * step,
      points: historyPoints(first, hashes.slice(lookBack), hashes.slice(0, lookBack), depths, step),
      webhooks: await this.webhookDeliveries(),
    };
  }

  /** The batch, or undefined when there is none or `viewer` may not see it. */
  async getBatch(id: string, viewer: Viewer = EVERYONE): Promise<Batch | undefined> {
    const hash = (await this.redis.hgetall(this.keys.batch(id))) as Hash;
    return canSee(viewer, hash.client) ? decodeBatch(hash) : undefined;
  }

  async batchJobs(id: string): Promise<JobSummary[]> {
    return this.summaries(await this.redis.lrange(this.keys.batchJobs(id), 0, -1));
  }

  /** A page of the batches `viewer` may see, newest first, as listJobs pages jobs. */
  async listBatches(
    filter: ListFilter & { status?: BatchStatus },
  ): Promise<{ batches: Batch[]; total: number; next?: ListPosition }> {
    const page = await this.list("batches", filter, {});
    const batches = page.records.flatMap((flat) => {
      const batch = decodeBatch(hashOf(flat as string[]));
      return batch ? [batch] : [];
    });
    return { batches, total: page.total, ...(page.next ? { next: page.next } : {}) };
  }

  /** Counters of every queue, read in one round trip. */
  async counters(): Promise<Record<JobType, TypeCounters>> {
    const pipeline = this.redis.pipeline();
    for (const type of JOB_TYPES) pipeline.hgetall(this.keys.stats(type));
    const rows = (await replies(pipeline, "queue counters")) as Hash[];
    const out = {} as Record<JobType, TypeCounters>;
    JOB_TYPES.forEach((type, i) => {
      const h = rows[i]!;
      const n = (name: string) => Math.max(0, Number(h[name] ?? 0));
      out[type] = {
        pending: n("pending"),
        processing: n("processing"),
        completed: n("completed"),
        failed: n("failed"),
        cancelled: n("cancelled"),
        submittedTotal: n("submitted_total"),
        completedTotal: n("completed_total"),
        failedTotal: n("failed_total"),
        cancelledTotal: n("cancelled_total"),
      };
    });
    return out;
  }

  async queueStats(): Promise<QueueStats> {
    const counters = await this.counters();
    const stats: QueueStats = {
      total_jobs: 0,
      total_pending: 0,
      total_processing: 0,
      total_completed: 0,
      total_failed: 0,
      total_cancelled: 0,
      queues: {},
    };
    for (const type of JOB_TYPES) {
      const c = counters[type];
      stats.queues[type] = {
        name: type,
        pending: c.pending,
        processing: c.processing,
        completed: c.completed,
        failed: c.failed,
        cancelled: Math.min(c.cancelled, c.failed),
      };
      stats.total_pending += c.pending;
      stats.total_processing += c.processing;
      stats.total_completed += c.completed;
      stats.total_failed += c.failed;
      stats.total_cancelled += Math.min(c.cancelled, c.failed);
    }
    stats.total_jobs =
      stats.total_pending + stats.total_processing + stats.total_completed + stats.total_failed;
    return stats;
  }

  async durationHistograms(): Promise<Record<JobType, DurationHistogram>> {
    const pipeline = this.redis.pipeline();
    for (const type of JOB_TYPES) pipeline.hgetall(this.keys.histogram(type));
    const rows = (await replies(pipeline, "duration histograms")) as Hash[];
    const out = {} as Record<JobType, DurationHistogram>;
    JOB_TYPES.forEach((type, i) => {
      const h = rows[i]!;
      out[type] = {
        buckets: JOB_DURATION_BUCKETS.map((_, b) => Number(h[`b${b + 1}`] ?? 0)),
        count: Number(h.count ?? 0),
        sum: Number(h.sum ?? 0),
      };
    });
    return out;
  }

  /**
   * Records a webhook delivery attempt on the job or batch and in the delivery counters; a final
   * result also acknowledges the event (lua/webhook.lua). Returns the attempts now on the record.
   */
  async recordWebhookAttempt(a: WebhookAttempt): Promise<number> {
    return (await this.script(
      "webhook",
      a.kind,
      a.id,
      a.webhookId,
      a.result,
      a.summary,
      a.statusCode ?? "",
      a.nextAttemptAt ?? "",
      a.group,
      a.entryId,
    )) as number;
  }

  /** Webhook delivery attempts by result, since the store was created. */
  async webhookDeliveries(): Promise<Record<WebhookResult, number>> {
    const h = (await this.redis.hgetall(this.keys.webhookStats())) as Hash;
    return Object.fromEntries(WEBHOOK_RESULTS.map((r) => [r, Number(h[r] ?? 0)])) as Record<
      WebhookResult,
      number
    >;
  }

  /** Round-trip time of a PING, in milliseconds. */
  async ping(): Promise<number> {
    const started = performance.now();
    await this.redis.ping();
    return performance.now() - started;
  }
}

/**
 * A pipeline's replies, in order, once every command has answered: the first command that failed
 * throws its error (a pipeline does not), and a discarded pipeline says what it was for.
 */
async function replies(
  pipeline: { exec(): Promise<Array<[Error | null, unknown]> | null> },
  what: string,
): Promise<unknown[]> {
  const rows = await pipeline.exec();
  if (!rows) throw new Error(`${what}: the pipeline was discarded`);
  return rows.map(([err, value]) => {
    if (err) throw err;
    return value;
  });
}

/** The client and key id a key's record is under (keys.ts). */
function idempotencyArgs(key: IdempotencyKey): [string, string] {
  return [idempotencyClient(key.client), idempotencyKeyId(key.key)];
}

/** A completed key's result, as submit.lua recorded it. */
function decodeSubmitted(json: string): Submitted {
  const r = JSON.parse(json) as {
    job_ids: string[];
    types: JobType[];
    queue_positions: number[];
    batch_id?: string;
  };
  return {
    jobIds: r.job_ids,
    types: r.types,
    queuePositions: r.queue_positions,
    ...(r.batch_id ? { batchId: r.batch_id } : {}),
  };
}

/** An epoch-ms time as the list script takes it (a decimal string); anything else is a bug of the caller. */
function msArg(ms: number, name: string): string {
  if (!Number.isSafeInteger(ms)) throw new RangeError(`${name} must be an integer number of ms, not ${ms}`);
  return String(ms);
}

/** A hash from HGETALL's flat [field, value, …] reply. */
function hashOf(flat: string[]): Hash {
  const hash: Hash = {};
  for (let i = 0; i + 1 < flat.length; i += 2) hash[flat[i]!] = flat[i + 1]!;
  return hash;
}

function encodeSpec(spec: JobSpec): Record<string, string> {
  const fields: Record<string, string> = {
    source_bucket: spec.source_bucket,
    source_key: spec.source_key,
    parameters: JSON.stringify(spec.parameters),
  };
  if (spec.dest_bucket) fields.dest_bucket = spec.dest_bucket;
  if (spec.dest_key) fields.dest_key = spec.dest_key;
  if (spec.webhook_url) fields.webhook_url = spec.webhook_url;
  if (spec.webhook_style) fields.webhook_style = spec.webhook_style;
  if (spec.request_id) fields.request_id = spec.request_id;
  if (spec.resources) fields.resources = JSON.stringify(spec.resources);
  if (spec.timeout_seconds !== undefined) fields.timeout_seconds = String(spec.timeout_seconds);
  if (spec.execution_class) fields.execution_class = spec.execution_class;
  if (spec.priority) fields.priority = String(spec.priority);
  if (spec.retry_of) fields.retry_of = spec.retry_of;
  return fields;
}

export interface RedisConnectOptions {
  connectTimeoutMs: number;
  /** Fail commands at once while disconnected instead of queueing them (readiness, API). */
  failFast?: boolean;
  name?: string;
}

export function connectRedis(url: string, options: RedisConnectOptions): Redis {
  const target = parseRedisTarget(url);
  const common: RedisOptions = {
    connectTimeout: options.connectTimeoutMs,
    connectionName: options.name,
    lazyConnect: false,
    enableOfflineQueue: !options.failFast,
    maxRetriesPerRequest: options.failFast ? 1 : 20,
    retryStrategy: (times) => Math.min(times * 200, 2000),
  };
  return "url" in target ? new Redis(target.url, common) : new Redis({ ...target.options, ...common });
}

/**
 * A connection of its own for blocking reads (XREADGROUP … BLOCK), from a fail-fast one: what it sends
 * before its first connection is up waits for it instead of failing, so a reader started with its
 * process does not fail (and warn) at once. Once Redis is lost, a command fails after one reconnect
 * attempt, as on the fail-fast connection, so a reader stopping while Redis is down is not left
 * waiting on it.
 */
export function blockingConnection(redis: Redis, name: string): Redis {
  const connection = redis.duplicate({
    connectionName: name,
    enableOfflineQueue: true,
    maxRetriesPerRequest: 1,
  });
  // A lost Redis is logged once by the process's own connection, and every command sent here fails
  // to its caller; without a listener ioredis would print each reconnect error to stderr.
  connection.on("error", () => undefined);
  return connection;
}
