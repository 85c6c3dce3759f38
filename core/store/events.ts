/**
 * What the store tells others, typed in one place: the entries of the durable events stream
 * (lib.lua record, read by the webhook notifier and the executors' cancellation followers) and the
 * messages on a job's pub/sub channel (lib.lua publish, read by SSE). The scripts write them; this
 * module is how TS reads them.
 */

/** Every event of the events stream, in the order of a job's and a batch's life. */
export const STORE_EVENT_NAMES = [
  "job.created",
  "job.started",
  "job.requeued",
  "job.completed",
  "job.failed",
  "job.cancelled",
  "batch.created",
  "batch.completed",
] as const;
export type StoreEventName = (typeof STORE_EVENT_NAMES)[number];

/** What every entry carries: its id in the stream and when the store recorded it (ISO 8601). */
interface Entry {
  entryId: string;
  at?: string;
}

/** The fields of every job event. `type` is a JobType as written by this version. */
interface OfJob extends Entry {
  job_id: string;
  type: string;
  batch_id?: string;
  /** The client that submitted the job, unless it was an admin (who may see the event). */
  client?: string;
}

export interface JobCreated extends OfJob {
  event: "job.created";
  status: "pending";
}
export interface JobStarted extends OfJob {
  event: "job.started";
  status: "processing";
}
/** Given back to its queue (requeueJob, reap); `reason` says why. */
export interface JobRequeued extends OfJob {
  event: "job.requeued";
  status: "pending";
  reason: string;
}
/** `webhook`: the job has a webhook_url (the notifier reads only those events). */
export interface JobCompleted extends OfJob {
  event: "job.completed";
  status: "completed";
  request_id?: string;
  webhook: boolean;
}
interface JobEnded extends OfJob {
  status: "failed";
  /** The status it failed from. */
  was: "pending" | "processing";
  request_id?: string;
  webhook: boolean;
}
export interface JobFailed extends JobEnded {
  event: "job.failed";
}
/** Failed because its fail_fast batch was stopped by another job's failure. */
export interface JobCancelled extends JobEnded {
  event: "job.cancelled";
}
export interface BatchCreated extends Entry {
  event: "batch.created";
  batch_id: string;
  status: "queued";
  total_jobs: number;
}
/** Every job of the batch has finished. */
export interface BatchCompleted extends Entry {
  event: "batch.completed";
  batch_id: string;
  status: "completed" | "failed" | "partial";
  total_jobs: number;
  completed: number;
  failed: number;
  webhook_url?: string;
}

export type StoreEvent =
  | JobCreated
  | JobStarted
  | JobRequeued
  | JobCompleted
  | JobFailed
  | JobCancelled
  | BatchCreated
  | BatchCompleted;

/** One entry as XREAD, XREADGROUP, XRANGE and XAUTOCLAIM give it (no fields: deleted meanwhile). */
export type StreamEntry = readonly [entryId: string, fields: readonly string[] | null];
/** An XREAD or XREADGROUP reply: the entries of each stream read, or null when nothing came. */
export type StreamReply = Array<[stream: string, entries: StreamEntry[]]> | null;

type Fields = Record<string, string>;
type Body<E extends StoreEvent> = Omit<E, "event" | "entryId" | "at">;

/** A flat [name, value, name, value, ...] array (a stream entry, XINFO) as an object. */
export function fieldsOf(flat: readonly unknown[]): Fields {
  const fields: Fields = {};
  for (let i = 0; i + 1 < flat.length; i += 2) fields[String(flat[i])] = String(flat[i + 1]);
  return fields;
}

export function isStoreEventName(name: string | undefined): name is StoreEventName {
  return (STORE_EVENT_NAMES as readonly string[]).includes(name as string);
}

function ofJob(f: Fields): Omit<OfJob, keyof Entry> | undefined {
  if (!f.job_id || !f.type) return undefined;
  return {
    job_id: f.job_id,
    type: f.type,
    ...(f.batch_id ? { batch_id: f.batch_id } : {}),
    ...(f.client ? { client: f.client } : {}),
  };
}

function ended(f: Fields): Omit<JobEnded, keyof Entry> | undefined {
  const job = ofJob(f);
  if (!job) return undefined;
  return {
    ...job,
    status: "failed",
    was: f.was === "pending" ? "pending" : "processing",
    ...(f.request_id ? { request_id: f.request_id } : {}),
    webhook: f.webhook === "1",
  };
}

const count = (value: string | undefined) => Number(value ?? 0) || 0;

const DECODERS: {
  [N in StoreEventName]: (f: Fields) => Body<Extract<StoreEvent, { event: N }>> | undefined;
} = {
  "job.created": (f) => {
    const job = ofJob(f);
    return job && { ...job, status: "pending" };
  },
  "job.started": (f) => {
    const job = ofJob(f);
    return job && { ...job, status: "processing" };
  },
  "job.requeued": (f) => {
    const job = ofJob(f);
    return job && { ...job, status: "pending", reason: f.reason ?? "" };
  },
  "job.completed": (f) => {
    const job = ofJob(f);
    return (
      job && {
        ...job,
        status: "completed",
        ...(f.request_id ? { request_id: f.request_id } : {}),
        webhook: f.webhook === "1",
      }
    );
  },
  "job.failed": ended,
  "job.cancelled": ended,
  "batch.created": (f) =>
    f.batch_id ? { batch_id: f.batch_id, status: "queued", total_jobs: count(f.total_jobs) } : undefined,
  "batch.completed": (f) => {
    const status = f.status;
    if (!f.batch_id || (status !== "completed" && status !== "failed" && status !== "partial")) {
      return undefined;
    }
    return {
      batch_id: f.batch_id,
      status,
      total_jobs: count(f.total_jobs),
      completed: count(f.completed),
      failed: count(f.failed),
      ...(f.webhook_url ? { webhook_url: f.webhook_url } : {}),
    };
  },
};

/**
 * The typed event of a stream entry; undefined for an entry without fields, an event this version
 * does not know, or one missing a field it cannot do without (its id). Fields it does not know are
 * left out.
 */
export function decodeStoreEvent(entry: StreamEntry): StoreEvent | undefined {
  const [entryId, flat] = entry;
  if (!flat) return undefined;
  const fields = fieldsOf(flat);
  const name = fields.event;
  if (!isStoreEventName(name)) return undefined;
  const body = DECODERS[name](fields);
  if (!body) return undefined;
  return { event: name, entryId, ...(fields.at ? { at: fields.at } : {}), ...body } as StoreEvent;
}

/** Every event of an XREAD or XREADGROUP reply, in order, with the id of the last entry read. */
export function decodeStreamReply(reply: StreamReply): { events: StoreEvent[]; lastId?: string } {
  const events: StoreEvent[] = [];
  let lastId: string | undefined;
  for (const [, entries] of reply ?? []) {
    for (const entry of entries) {
      lastId = entry[0];
      const event = decodeStoreEvent(entry);
      if (event) events.push(event);
    }
  }
  return { events, ...(lastId !== undefined ? { lastId } : {}) };
}

/** The messages on a job's pub/sub channel (JobEventHub, SSE), numbered by the job's seq. */
export const JOB_CHANNEL_EVENTS = ["status", "progress", "complete"] as const;
export type JobChannelEvent = (typeof JOB_CHANNEL_EVENTS)[number];

export type JobChannelMessage =
  | { seq: number; event: "status"; data: { status: "pending" | "processing"; message: string } }
  | {
      seq: number;
      event: "progress";
      data: { percent: number; message: string; eta_seconds?: number; steps?: Record<string, number> };
    }
  /** No result: a reader of `complete` reads the job (cjson would turn an empty array into {}). */
  | { seq: number; event: "complete"; data: { status: "completed" | "failed"; error?: string } };

/** The message of a channel's payload; undefined for one that is not JSON or not a job message. */
export function decodeJobChannelMessage(text: string): JobChannelMessage | undefined {
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof message !== "object" || message === null) return undefined;
  const { seq, event, data } = message as Record<string, unknown>;
  if (typeof seq !== "number" || !(JOB_CHANNEL_EVENTS as readonly unknown[]).includes(event))
    return undefined;
  if (typeof data !== "object" || data === null) return undefined;
  return message as JobChannelMessage;
}
