import type { Batch, Job, JobSummary, TimelineEntry } from "../jobs/records.js";
import type { BatchStatus, JobState, JobStatus, JobType } from "../jobs/types.js";
import { replies, StoreBase } from "./base.js";
import { decodeBatch, decodeJob, decodeSummary, SUMMARY_FIELDS, type Hash } from "./codec.js";
import { keyOf, storedBatchId } from "./keys.js";
import { batchScope, canSee, EVERYONE, shownBatchId, type Viewer } from "./visibility.js";

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

/** What a search looks for (lua/list.lua): each term given narrows it. */
export interface SearchTerms {
  /** Jobs whose id starts with this. */
  idPrefix?: string;
  /** Jobs submitted with this request_id. */
  requestId?: string;
  /** Jobs whose source, "bucket/key", starts with this. */
  sourcePrefix?: string;
  /** Jobs whose output, "dest_bucket/dest_key", starts with this. */
  destPrefix?: string;
}

/** A search: its terms, all of which a job matches, and `any`, terms of which one is enough. */
export interface JobSearch extends SearchTerms {
  any?: SearchTerms;
}

/**
 * The most search-index entries one list call reads (lua/list.lua search_max): a search whose terms
 * match more is refused (SearchTooBroadError), so that no call costs more than sorting this many.
 */
export const SEARCH_MAX = 10_000;

export interface JobListFilter extends ListFilter {
  status?: JobStatus;
  /** Only jobs of this state: failed and cancelled apart (jobs failed before the state index are not found). */
  state?: JobState;
  /** Only jobs of this type: those submitted since the type index exists (lua/submit.lua). */
  type?: JobType;
  /** Only the jobs of this batch. */
  batchId?: string;
  /**
   * Only the jobs a search finds (the search indexes: jobs submitted since they exist), at most
   * SEARCH_MAX index entries.
   */
  search?: JobSearch;
  /**
   * Only the jobs of this client (those it submitted as a client that is not an admin: its own
   * indexes). For a viewer that sees everyone's; a client viewer lists its own whatever this says.
   */
  client?: string;
}

/**
 * The reads of jobs and batches as a viewer may see them: one record, a job's timeline, a batch's
 * jobs, and the lists and searches (lua/list.lua, which writes nothing).
 */
export abstract class Lists extends StoreBase {
  /** The job, or undefined when there is none or `viewer` may not see it (the same answer). */
  async getJob(id: string, viewer: Viewer = EVERYONE): Promise<Job | undefined> {
    return (await this.getJobWithSeq(id, viewer))?.job;
  }

  /** The job hash's change counter together with the record, read in one round trip. */
  async getJobWithSeq(id: string, viewer: Viewer = EVERYONE): Promise<{ job: Job; seq: number } | undefined> {
    const hash = (await this.redis.hgetall(this.keys.job(id))) as Hash;
    const job = canSee(viewer, hash.client) ? decodeJob(hash) : undefined;
    if (job?.batch_id !== undefined) job.batch_id = shownBatchId(job.batch_id, viewer);
    return job ? { job, seq: Number(hash.seq ?? 0) } : undefined;
  }

  /** The name of the client that submitted a job; undefined when none is recorded (or no such job). */
  async jobClient(id: string): Promise<string | undefined> {
    return (await this.redis.hget(this.keys.job(id), "client")) || undefined;
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
   * A page of the jobs `viewer` may see, newest first (created_ms descending, ties by id descending,
   * bytewise), filtered (lua/list.lua). `total` counts every job matching the filter, whatever the
   * page; `next`, present when jobs follow the page, is where the next page starts (`after`).
   */
  async listJobs(filter: JobListFilter): Promise<{ jobs: JobSummary[]; total: number; next?: ListPosition }> {
    const viewer = filter.viewer ?? EVERYONE;
    // A batch's jobs: those of the batch `viewer` knows by that id (findBatch).
    const page = await this.list("jobs", filter, {
      ...(filter.type ? { type: filter.type } : {}),
      ...(filter.state ? { state: filter.state } : {}),
      ...(filter.batchId !== undefined
        ? { batch_id: (await this.findBatch(filter.batchId, viewer))?.storedId ?? filter.batchId }
        : {}),
      ...(filter.search ? { search: searchArg(filter.search), search_max: SEARCH_MAX } : {}),
      ...(filter.client !== undefined && "all" in viewer ? { client: filter.client } : {}),
      fields: SUMMARY_FIELDS,
    });
    const jobs = page.records.flatMap((fields) => {
      const summary = decodeSummary(fields as Array<string | null>);
      return summary ? [summary] : [];
    });
    return { jobs, total: page.total, ...(page.next ? { next: page.next } : {}) };
  }

  /**
   * The batch `viewer` knows by `id`, or undefined when there is none or `viewer` may not see it:
   * for a client that is not an admin, the batch it gave that id (stored as "<client>/<id>":
   * keys.ts storedBatchId), else one stored under the id itself (a generated id, or one recorded
   * before ids were kept apart per client) if it is the client's. `storedId` is what the store's
   * other calls take.
   */
  async findBatch(
    id: string,
    viewer: Viewer = EVERYONE,
  ): Promise<{ batch: Batch; storedId: string } | undefined> {
    const scope = batchScope(viewer);
    const pipeline = this.redis.pipeline().hgetall(this.keys.batch(id));
    if (scope !== undefined) pipeline.hgetall(this.keys.batch(storedBatchId(id, scope)));
    const [plain, own] = (await replies(pipeline, `batch ${id}`)) as [Hash, Hash | undefined];
    if (own?.id) return foundBatch(own, storedBatchId(id, scope), viewer);
    return canSee(viewer, plain.client) ? foundBatch(plain, id, viewer) : undefined;
  }

  /** The batch `viewer` knows by `id`, or undefined when there is none or `viewer` may not see it. */
  async getBatch(id: string, viewer: Viewer = EVERYONE): Promise<Batch | undefined> {
    return (await this.findBatch(id, viewer))?.batch;
  }

  /** The jobs of the batch stored as `storedId` (findBatch). */
  async batchJobs(storedId: string): Promise<JobSummary[]> {
    const ids = await this.redis.lrange(this.keys.batchJobs(storedId), 0, -1);
    if (ids.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hmget(this.keys.job(id), ...SUMMARY_FIELDS);
    const rows = (await replies(pipeline, "job summaries")) as Array<Array<string | null>>;
    return rows.flatMap((fields) => {
      const summary = decodeSummary(fields);
      return summary ? [summary] : [];
    });
  }

  /** A page of the batches `viewer` may see, newest first, as listJobs pages jobs. */
  async listBatches(
    filter: ListFilter & { status?: BatchStatus },
  ): Promise<{ batches: Batch[]; total: number; next?: ListPosition }> {
    const viewer = filter.viewer ?? EVERYONE;
    const page = await this.list("batches", filter, {});
    const batches = page.records.flatMap((flat) => {
      const batch = decodeBatch(hashOf(flat as string[]));
      return batch ? [{ ...batch, id: shownBatchId(batch.id, viewer) }] : [];
    });
    return { batches, total: page.total, ...(page.next ? { next: page.next } : {}) };
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
}

/** A batch found under `storedId`, its id as `viewer` is shown it; undefined when the hash is none. */
function foundBatch(hash: Hash, storedId: string, viewer: Viewer) {
  const batch = decodeBatch(hash);
  return batch ? { batch: { ...batch, id: shownBatchId(batch.id, viewer) }, storedId } : undefined;
}

/** A search as the list script takes it. */
function searchArg(search: JobSearch): Record<string, unknown> {
  const terms = (t: SearchTerms) => ({
    ...(t.idPrefix !== undefined ? { id_prefix: t.idPrefix } : {}),
    ...(t.requestId !== undefined ? { request_id: t.requestId } : {}),
    ...(t.sourcePrefix !== undefined ? { source_prefix: t.sourcePrefix } : {}),
    ...(t.destPrefix !== undefined ? { dest_prefix: t.destPrefix } : {}),
  });
  return { ...terms(search), ...(search.any ? { any: terms(search.any) } : {}) };
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
