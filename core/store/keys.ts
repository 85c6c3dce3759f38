import { createHash } from "node:crypto";

/**
 * Where everything of the store lives in Redis, written once: the TS readers build keys from it and
 * every Lua script receives, as KEYS, the families it declares in its header (scripts.ts). A family
 * is a key name with a `*` where an id goes ("job:*" is every job's hash); a family without one is
 * a single key. The scripts fill the `*` with ids they find themselves (lib.lua `at`), so they carry
 * no layout of their own. Every key begins with one hash tag ({prefix}), so all of them are in one
 * Redis Cluster slot and the scripts run unchanged there.
 */
const LAYOUT = {
  /** The durable events stream (notifier, cancellations); see events.ts. */
  events: "events",
  /** Pub/sub channel that tells executors a queue has new work. */
  queues: "queues",
  /** Finished jobs and batches by when they are due for deletion (members "job:<id>", "batch:<id>"). */
  expiry: "expiry",
  /** Webhook delivery attempts by result (metrics). */
  webhook_stats: "webhooks:stats",
  /** A job's hash, by job id. */
  job: "job:*",
  /** A job's timeline: what happened to it, oldest first (a list of JSON entries), by job id. */
  job_events: "job:*:events",
  /** Figures of one minute (jobs ended, durations, queue depths; a hash), by minute since the epoch. */
  history: "history:*",
  /** Pub/sub channel of one job's changes (SSE), by job id. */
  job_channel: "events:*",
  /** A batch's hash, by the id it is stored under (storedBatchId: a client's own ids kept apart). */
  batch: "batch:*",
  /** The ids of a batch's jobs in submission order, by the batch's stored id. */
  batch_jobs: "batch:*:jobs",
  /**
   * A queue's waiting job ids, by job type: a sorted set in the order they are claimed, higher
   * priority first, then submission order (lib.lua queue_score).
   */
  pending: "queue:*:pending",
  /**
   * Fair share between clients (core/jobs/fair-share.ts, lua/lib.lua fair_add): a client's waiting
   * jobs of one type, by job type and client name ("-" for jobs without one), scored as the type's
   * queue is; every job in a type's queue is in its client's too.
   */
  fair_queue: "queue:*:fair:*",
  /** The clients with waiting jobs of a type (a set), by job type. */
  fair_clients: "queue:*:fair",
  /**
   * Whose turn it is in a type's queue (a hash: `client`, `left`, the jobs left of its turn; and
   * `indexed`, once the type's queue was copied into the clients' queues), by job type.
   */
  fair_turn: "queue:*:turn",
  /**
   * Each client's jobs waiting ("<client>|pending": in the queues) and running ("<client>|running":
   * claimed, in the warm pool's queue or processing), for its max_pending and max_running (a hash).
   */
  client_load: "clients:load",
  /** Submits and claims a client's limits refused, by "<client>|<limit>" (a hash of counters; metrics). */
  client_refused: "clients:refused",
  /** The counter that numbers submissions, for the order of equal priorities (job field queue_seq). */
  queue_seq: "queue:seq",
  /**
   * The warm runner pool's queue: ids of jobs its dispatcher handed to the pool, waiting for a pool
   * worker (a list, pushed left and taken right: first in, first out; its length is what an
   * autoscaler reads).
   */
  pool: "pool:queue",
  /** Pub/sub channel that tells pool workers the pool's queue has work. */
  pool_channel: "pool:channel",
  /** Jobs pool workers have taken from the pool's queue since the store began (a counter). */
  pool_taken: "pool:taken",
  /** A queue's claimed and processing job ids by lease deadline (a sorted set), by job type. */
  active: "queue:*:active",
  /** A queue's counters, by job type. */
  stats: "stats:*",
  /** A queue's duration histogram, by job type. */
  histogram: "hist:*",
  /** Every job id by creation (score created_ms); the lists' indexes are all sorted the same way. */
  jobs_by_created: "jobs:by_created",
  /** Job ids of one status by creation, by status. */
  jobs_by_status: "jobs:status:*",
  /**
   * Failed job ids by creation, by state (core/jobs/types.ts ENDED_STATES): `failed` (not
   * cancelled) or `cancelled`; the other states are statuses (jobs_by_status). Jobs that failed
   * before it existed are not in it.
   */
  jobs_by_state: "jobs:state:*",
  /** Job ids of one type by creation, by job type (jobs submitted before it existed are not in it). */
  jobs_by_type: "jobs:type:*",
  /**
   * The search indexes (lua/list.lua's search): sorted sets whose members all have score 0, so that
   * ZRANGEBYLEX reads them by prefix. jobs_by_id holds job ids; the others hold "<value>\0<job id>",
   * the value being the job's source ("bucket/key"), its output ("dest_bucket/dest_key") or its
   * request_id (no value holds a NUL: the schemas refuse control characters). Jobs submitted before
   * they existed are not in them.
   */
  jobs_by_id: "jobs:ids",
  jobs_by_source: "jobs:sources",
  jobs_by_dest: "jobs:dests",
  jobs_by_request: "jobs:requests",
  batches_by_created: "batches:by_created",
  batches_by_status: "batches:status:*",
  /** A client's own copies of the indexes above, by client name (then status or type). */
  client_jobs_by_created: "client:*:jobs:by_created",
  client_jobs_by_status: "client:*:jobs:status:*",
  client_jobs_by_type: "client:*:jobs:type:*",
  client_jobs_by_state: "client:*:jobs:state:*",
  client_jobs_by_id: "client:*:jobs:ids",
  client_jobs_by_source: "client:*:jobs:sources",
  client_jobs_by_dest: "client:*:jobs:dests",
  client_jobs_by_request: "client:*:jobs:requests",
  client_batches_by_created: "client:*:batches:by_created",
  client_batches_by_status: "client:*:batches:status:*",
  /** A client's own copy of a queue's counters (stats), by client name and job type (lib.lua count). */
  client_stats: "client:*:stats:*",
  /**
   * A client's Idempotency-Key (lua/idempotency.lua, lua/submit.lua), by client ("-" without
   * authentication, which no client name can be) and the SHA-256 of the key (hex), so that whatever
   * printable characters a key holds, the Redis key is plain.
   */
  idempotency: "idem:*:*",
  /** Idempotency-Keys that were not new, by outcome (metrics). */
  idempotency_stats: "idem:stats",
  /**
   * A cached preview of a job's source or output (a small WebP, lua/preview.lua), by job id and
   * `source` or `output`; each lives `PREVIEW.cacheTtlMs` (api/previews.ts).
   */
  preview: "preview:*:*",
  /** The cached previews by when they were written (members "<job id>:<of>"): the oldest go first. */
  preview_index: "preview:index",
  /**
   * A client's template (lua/template.lua), by owner (the client's name, "-" without
   * authentication, as idempotency) and template name: a hash of `current` (the version a name
   * stands for now; absent once deleted), `last` (the highest version ever stored, kept after a
   * delete so that a name and version never mean two things) and each version's JSON under its
   * number.
   */
  template: "template:*:*",
  /** A client's template names (a sorted set, every score 0: listed in name order), by owner. */
  templates: "templates:*",
} as const;

export type KeyFamily = keyof typeof LAYOUT;
export const KEY_FAMILIES = Object.keys(LAYOUT) as KeyFamily[];

export function isKeyFamily(name: string): name is KeyFamily {
  return Object.hasOwn(LAYOUT, name);
}

/** A key of a family: its `*`s filled with `ids` in order (the same as lib.lua `at`). */
export function keyOf(family: string, ...ids: string[]): string {
  const pieces = family.split("*");
  if (pieces.length !== ids.length + 1) {
    throw new Error(`key family ${family} takes ${pieces.length - 1} ids, not ${ids.length}`);
  }
  return pieces.reduce((key, piece, i) => key + ids[i - 1]! + piece);
}

export class Keys {
  /** "{prefix}:", the start of every key. */
  readonly prefix: string;
  /** Every family with the prefix in front: what the scripts get as KEYS. */
  readonly families: Readonly<Record<KeyFamily, string>>;

  constructor(keyPrefix: string) {
    this.prefix = `{${keyPrefix}}:`;
    this.families = Object.fromEntries(
      KEY_FAMILIES.map((name) => [name, `${this.prefix}${LAYOUT[name]}`]),
    ) as Record<KeyFamily, string>;
  }

  job(id: string) {
    return keyOf(this.families.job, id);
  }
  /** Pub/sub channel of one job's changes (SSE). */
  jobChannel(id: string) {
    return keyOf(this.families.job_channel, id);
  }
  pending(type: string) {
    return keyOf(this.families.pending, type);
  }
  active(type: string) {
    return keyOf(this.families.active, type);
  }
  /** A queue's counters: everyone's, or a client's own copy. */
  stats(type: string, client?: string) {
    return client === undefined
      ? keyOf(this.families.stats, type)
      : keyOf(this.families.client_stats, client, type);
  }
  histogram(type: string) {
    return keyOf(this.families.histogram, type);
  }
  /** The job or batch index everyone's records are in: by status, or all of them by creation. */
  index(kind: "jobs" | "batches", status?: string) {
    return status ? keyOf(this.families[`${kind}_by_status`], status) : this.families[`${kind}_by_created`];
  }
  jobsByCreated() {
    return this.index("jobs");
  }
  jobsByStatus(status: string) {
    return this.index("jobs", status);
  }
  /** The index of the failed jobs of one ended state (failed, cancelled): everyone's, or a client's own copy. */
  jobsByState(state: string, client?: string) {
    return client === undefined
      ? keyOf(this.families.jobs_by_state, state)
      : keyOf(this.families.client_jobs_by_state, client, state);
  }
  /** The index of one job type's jobs: everyone's, or a client's own copy. */
  jobsByType(type: string, client?: string) {
    return client === undefined
      ? keyOf(this.families.jobs_by_type, type)
      : keyOf(this.families.client_jobs_by_type, client, type);
  }
  batch(id: string) {
    return keyOf(this.families.batch, id);
  }
  batchJobs(id: string) {
    return keyOf(this.families.batch_jobs, id);
  }
  batchesByCreated() {
    return this.index("batches");
  }
  batchesByStatus(status: string) {
    return this.index("batches", status);
  }
  /** A client's own copy of the job or batch indexes (lib.lua move_index). */
  clientIndex(client: string, kind: "jobs" | "batches", status?: string) {
    return status
      ? keyOf(this.families[`client_${kind}_by_status`], client, status)
      : keyOf(this.families[`client_${kind}_by_created`], client);
  }
  /** Each client's jobs waiting and running (lib.lua fair_add, hold). */
  clientLoad() {
    return this.families.client_load;
  }
  /** Refusals by a client's limits, by "<client>|<limit>". */
  clientRefused() {
    return this.families.client_refused;
  }
  /** The warm runner pool's queue (a list). */
  pool() {
    return this.families.pool;
  }
  /** Jobs pool workers have taken from the pool's queue since the store began. */
  poolTaken() {
    return this.families.pool_taken;
  }
  /** Pub/sub channel that tells pool workers the pool's queue has work. */
  poolChannel() {
    return this.families.pool_channel;
  }
  /** Pub/sub channel that tells executors a queue has new work. */
  queuesChannel() {
    return this.families.queues;
  }
  /** The durable events stream (notifier). */
  events() {
    return this.families.events;
  }
  /** Webhook delivery attempts by result (metrics). */
  webhookStats() {
    return this.families.webhook_stats;
  }
  expiry() {
    return this.families.expiry;
  }
  /** A client's Idempotency-Key record; `client` undefined: a request without authentication. */
  idempotency(client: string | undefined, key: string) {
    return keyOf(this.families.idempotency, idempotencyClient(client), idempotencyKeyId(key));
  }
  /** Idempotency-Keys that were not new, by outcome (metrics). */
  idempotencyStats() {
    return this.families.idempotency_stats;
  }
  /** A cached preview of a job's source or output. */
  preview(id: string, of: string) {
    return keyOf(this.families.preview, id, of);
  }
  /** A client's template; `client` undefined: a request without authentication. */
  template(client: string | undefined, name: string) {
    return keyOf(this.families.template, idempotencyClient(client), name);
  }
  /** A client's template names. */
  templates(client: string | undefined) {
    return keyOf(this.families.templates, idempotencyClient(client));
  }
}

/**
 * Whose Idempotency-Keys (and templates) a record is among: the client's name, or "-" without
 * authentication.
 */
export function idempotencyClient(client: string | undefined): string {
  return client ?? "-";
}

/** What an Idempotency-Key is stored under: its SHA-256, hex. */
export function idempotencyKeyId(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/**
 * The id a batch whose id its client chose is stored under (its hash, its jobs' batch_id, the
 * indexes, the events). A client that is not an admin (`scope`, its name) has ids of its own, kept
 * apart from every other client's as "<client>/<id>" (neither a client name nor a batch id holds a
 * "/"): a client's id never collides with another's, and an id taken tells nothing of anyone
 * else. An admin's (and, without authentication, everyone's: `scope` undefined) are stored as
 * given, and so are the ids the store generates (UUIDs, unique anyway).
 */
export function storedBatchId(id: string, scope: string | undefined): string {
  return scope === undefined ? id : `${scope}/${id}`;
}

/** A stored batch id as its owner knows it: without the "<client>/" storedBatchId put in front. */
export function ownBatchId(stored: string): string {
  return stored.slice(stored.indexOf("/") + 1);
}
