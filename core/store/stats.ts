import { JOB_DURATION_BUCKETS } from "../jobs/duration-buckets.js";
import type { History, QueueStats } from "../jobs/records.js";
import { JOB_TYPES, type JobType } from "../jobs/types.js";
import { HISTORY_INTERVAL_SECONDS, historyPoints, type MinuteHash } from "../stats/history.js";
import { replies, StoreBase } from "./base.js";
import type { Hash } from "./codec.js";
import { keyOf } from "./keys.js";
import { EVERYONE, type Viewer } from "./visibility.js";
import type { Webhooks } from "./webhooks.js";

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
  /** Of the submitted, those submitted with a template (everyone's counters only). */
  templateTotal: number;
}

export interface DurationHistogram {
  /** Cumulative counts, one per bound of JOB_DURATION_BUCKETS. */
  buckets: number[];
  count: number;
  sum: number;
}

/** A client's jobs now (lib.lua client_load) and the submissions its limits refused, by limit. */
export interface ClientLoad {
  pending: number;
  running: number;
  refused: Record<string, number>;
}

/**
 * The figures the scripts keep as they change jobs: the queues' counters (everyone's and each
 * client's), the duration histograms, and the history of the last day, minute by minute.
 */
export abstract class Stats extends StoreBase {
  /**
   * Counters of every queue, read in one round trip: everyone's, or, for a client that is not an
   * admin, its own copy (lib.lua count keeps both).
   */
  /**
   * Every client's jobs waiting and running and its refusals (keys.ts client_load, client_refused), by
   * client name ("-": jobs without one); a client that never had a job is absent.
   */
  async clientLoads(): Promise<Map<string, ClientLoad>> {
    const [load, refused] = (await Promise.all([
      this.redis.hgetall(this.keys.clientLoad()),
      this.redis.hgetall(this.keys.clientRefused()),
    ])) as [Hash, Hash];
    const out = new Map<string, ClientLoad>();
    const of = (client: string) => {
      let entry = out.get(client);
      if (!entry) out.set(client, (entry = { pending: 0, running: 0, refused: {} }));
      return entry;
    };
    // Fields are "<client>|<what>": a client name holds no "|".
    for (const [field, value] of Object.entries(load)) {
      const [client, what] = field.split("|") as [string, string];
      if (what === "pending" || what === "running") of(client)[what] = Math.max(0, Number(value));
    }
    for (const [field, value] of Object.entries(refused)) {
      const [client, limit] = field.split("|") as [string, string];
      of(client).refused[limit] = Number(value);
    }
    return out;
  }

  async counters(viewer: Viewer = EVERYONE): Promise<Record<JobType, TypeCounters>> {
    const client = "client" in viewer ? viewer.client : undefined;
    const pipeline = this.redis.pipeline();
    for (const type of JOB_TYPES) pipeline.hgetall(this.keys.stats(type, client));
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
        templateTotal: n("template_total"),
      };
    });
    return out;
  }

  /** The queues' figures `viewer` may see: everyone's jobs, or a client's own (counters). */
  async queueStats(viewer: Viewer = EVERYONE): Promise<QueueStats> {
    const counters = await this.counters(viewer);
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
   * The figures of the last `minutes` minutes (jobs ended, durations, queue depths; lib.lua
   * note_ended, note_depth), one point per `step` minutes (historyPoints), and the webhook delivery
   * counters (webhooks.ts).
   */
  async history(
    this: Stats & Webhooks,
    minutes: number,
    step = 1,
    nowMs = Date.now(),
    viewer: Viewer = EVERYONE,
  ): Promise<History> {
    const lookBack = 60;
    const current = Math.floor(nowMs / (HISTORY_INTERVAL_SECONDS * 1000));
    const first = current - minutes + 1;
    // A client that is not an admin is told of its own jobs: its fields of the minute hashes
    // ("<client>|<type>:…", lib.lua note_ended and note_depth) and its jobs waiting in the queues.
    const client = "client" in viewer ? viewer.client : undefined;
    const pipeline = this.redis.pipeline();
    for (let m = first - lookBack; m <= current; m++) {
      pipeline.hgetall(keyOf(this.keys.families.history, String(m)));
    }
    for (const type of JOB_TYPES) {
      if (client === undefined) pipeline.zcard(this.keys.pending(type));
      else pipeline.hget(this.keys.stats(type, client), "queued");
    }
    const rows = (await pipeline.exec()) ?? [];
    const hashes = rows.slice(0, lookBack + minutes).map(([err, hash]) => {
      if (err) throw err;
      return client === undefined ? (hash as MinuteHash) : clientFields(hash as MinuteHash, client);
    });
    // A queue an earlier version left as a list answers ZCARD with an error: its depth is unknown.
    const depths = Object.fromEntries(
      JOB_TYPES.map((type, i) => {
        const [err, depth] = rows[lookBack + minutes + i] ?? [];
        return [type, err ? 0 : Math.max(0, Number(depth ?? 0))];
      }),
    );
    return {
      interval_seconds: HISTORY_INTERVAL_SECONDS * step,
      points: historyPoints(first, hashes.slice(lookBack), hashes.slice(0, lookBack), depths, step),
      webhooks: await this.webhookDeliveries(),
    };
  }
}

/** A client's fields of a minute hash ("<client>|<type>:…"), named as the shared ones are. */
function clientFields(hash: MinuteHash, client: string): MinuteHash {
  const prefix = `${client}|`;
  const own: MinuteHash = {};
  for (const [field, value] of Object.entries(hash)) {
    if (field.startsWith(prefix)) own[field.slice(prefix.length)] = value;
  }
  return own;
}
