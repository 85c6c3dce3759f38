// The lists of the store (lua/list.lua): the type index that submit keeps and prune removes, the
// order (created_ms descending, ties by id descending byte by byte), paging from a position that
// outlives its record, and every combination of filters against a model of what they mean.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import type { JobStatus, JobType } from "../../core/jobs/types.js";
import { storedBatchId } from "../../core/store/keys.js";
import type { JobListFilter, JobStore, ListPosition } from "../../core/store/store.js";
import { EVERYONE, type Submitter, type Viewer } from "../../core/store/visibility.js";
import { claimAndStart, claimJob, makeSpec, sleep, storeKeys, storeSuite } from "../support/store.js";

let store: JobStore;
storeSuite((s) => (store = s), { retentionMs: 50 });

const BY_ALICE: Submitter = { name: "alice", admin: false };
const BY_ROOT: Submitter = { name: "root", admin: true };
const ALICE: Viewer = { client: "alice" };

/** Every page of a job list, from the first on: the ids in order, each page's total and size. */
async function pageJobs(filter: Omit<JobListFilter, "after">) {
  const ids: string[] = [];
  const totals: number[] = [];
  let after: ListPosition | undefined;
  for (let pages = 0; ; pages++) {
    assert.ok(pages < 10_000, "paging ends");
    const page = await store.listJobs({ ...filter, ...(after ? { after } : {}) });
    assert.ok(page.jobs.length <= filter.limit, "a page holds at most limit jobs");
    ids.push(...page.jobs.map((j) => j.id));
    totals.push(page.total);
    if (!page.next) break;
    assert.ok(page.jobs.length > 0, "a page with a next position is not empty");
    assert.equal(page.next.id, page.jobs.at(-1)!.id, "the next page starts after the last job of this one");
    after = page.next;
  }
  return { ids, totals };
}

/** Bytewise, as Redis orders the members of one score. */
const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** Newest first, ties by id descending (byte by byte). */
function listOrder(a: { ms: number; id: string }, b: { ms: number; id: string }): number {
  return b.ms - a.ms || byteOrder(b.id, a.id);
}

interface Planted {
  id: string;
  ms: number;
  type: JobType;
  status: JobStatus;
  client?: string;
  batch?: string;
}

/**
 * Writes jobs as submit.lua and the transitions leave them (hash, shared indexes, the client's
 * copies, the batch's list), with chosen creation times and ids, so ties and id orders can be set up.
 */
async function plant(jobs: Planted[]): Promise<void> {
  const k = store.keys;
  const multi = store.redis.multi();
  for (const job of jobs) {
    multi.hset(k.job(job.id), {
      id: job.id,
      type: job.type,
      status: job.status,
      created_at: new Date(job.ms).toISOString(),
      created_ms: job.ms,
      ...(job.batch ? { batch_id: job.batch } : {}),
      ...(job.client ? { client: job.client } : {}),
    });
    multi.zadd(k.jobsByCreated(), job.ms, job.id);
    multi.zadd(k.jobsByStatus(job.status), job.ms, job.id);
    multi.zadd(k.jobsByType(job.type), job.ms, job.id);
    if (job.client) {
      multi.zadd(k.clientIndex(job.client, "jobs"), job.ms, job.id);
      multi.zadd(k.clientIndex(job.client, "jobs", job.status), job.ms, job.id);
      multi.zadd(k.jobsByType(job.type, job.client), job.ms, job.id);
    }
    if (job.batch) multi.rpush(k.batchJobs(job.batch), job.id);
  }
  await multi.exec();
}

describe("the type index", () => {
  test("submit indexes every job by type, in the client's copy too (not an admin's); prune removes both", async () => {
    const mine = await store.submit([makeSpec("analyze"), makeSpec("image_colors")], undefined, BY_ALICE);
    const theirs = await store.submit([makeSpec("analyze")], { failFast: false }, BY_ROOT);
    const nobody = await store.submit([makeSpec("analyze")]);
    const k = store.keys;
    assert.deepEqual(
      (await store.redis.zrange(k.jobsByType("analyze"), 0, -1)).sort(),
      [mine.jobIds[0]!, theirs.jobIds[0]!, nobody.jobIds[0]!].sort(),
    );
    assert.deepEqual(await store.redis.zrange(k.jobsByType("image_colors"), 0, -1), [mine.jobIds[1]]);
    assert.deepEqual(await store.redis.zrange(k.jobsByType("analyze", "alice"), 0, -1), [mine.jobIds[0]]);
    assert.deepEqual(await store.redis.zrange(k.jobsByType("analyze", "root"), 0, -1), []);
    const created = Number(await store.redis.zscore(k.jobsByCreated(), mine.jobIds[0]!));
    assert.equal(Number(await store.redis.zscore(k.jobsByType("analyze"), mine.jobIds[0]!)), created);

    for (let i = 0; i < 4; i++)
      await store.complete(await claimAndStart(store, i < 3 ? "analyze" : "image_colors"), {});
    await sleep(80);
    assert.equal(await store.prune(), 5, "four jobs and the batch");
    const left = (await storeKeys(store)).filter((key) => key.includes(":type:"));
    assert.deepEqual(left, [], "no type index entry outlives its job");
  });

  test("the type filter finds what the index holds: a job recorded before it existed is not found by it", async () => {
    const { jobIds } = await store.submit([makeSpec("analyze"), makeSpec("analyze")]);
    await store.redis.zrem(store.keys.jobsByType("analyze"), jobIds[0]!);
    const page = await store.listJobs({ limit: 10, type: "analyze" });
    assert.deepEqual(
      page.jobs.map((j) => j.id),
      [jobIds[1]],
    );
    assert.equal(page.total, 1);
    assert.equal((await store.listJobs({ limit: 10 })).total, 2, "the unfiltered list holds both");
  });
});

describe("order and positions", () => {
  test("ties are ordered by id descending byte by byte (capitals before small letters), whatever the index", async () => {
    const ids = ["a", "B", "b", "A", "_", "Ab", "aB", "0"];
    await plant(ids.map((id) => ({ id, ms: 5000, type: "analyze", status: "pending", batch: "b1" })));
    await plant([{ id: "later", ms: 5001, type: "analyze", status: "pending" }]);
    const expected = ["later", ...[...ids].sort(byteOrder).reverse()];
    assert.deepEqual(expected.slice(1), ["b", "aB", "a", "_", "B", "Ab", "A", "0"]);
    for (const filter of [
      {},
      { type: "analyze" as const },
      { status: "pending" as const, type: "analyze" as const },
    ]) {
      for (const limit of [1, 2, 3, 100]) {
        const { ids: listed, totals } = await pageJobs({ limit, ...filter });
        assert.deepEqual(listed, expected, `${JSON.stringify(filter)} by ${limit}`);
        assert.ok(totals.every((t) => t === expected.length));
      }
    }
    const batch = await pageJobs({ limit: 3, batchId: "b1" });
    assert.deepEqual(batch.ids, expected.slice(1), "a batch's jobs in the same order");
    assert.ok(batch.totals.every((t) => t === ids.length));
  });

  test("a position stays good when its job is gone or has left the filtered index", async () => {
    const { jobIds } = await store.submit(
      Array.from({ length: 9 }, () => makeSpec("image_colors")),
      {
        failFast: false,
      },
    );
    const order = (await store.listJobs({ limit: 100 })).jobs.map((j) => j.id);
    assert.deepEqual([...order].sort(), [...jobIds].sort());

    // The last job of the first page is cancelled: it leaves the pending index.
    const first = await store.listJobs({ limit: 3, status: "pending" });
    assert.deepEqual(
      first.jobs.map((j) => j.id),
      order.slice(0, 3),
    );
    assert.equal(await store.cancel("job", first.next!.id, "cancelled by request"), "cancelled");
    const second = await store.listJobs({ limit: 3, status: "pending", after: first.next! });
    assert.deepEqual(
      second.jobs.map((j) => j.id),
      order.slice(3, 6),
    );
    assert.equal(second.total, 8);

    // The job of a position deleted outright (as prune deletes): the next page is the same.
    const all = await store.listJobs({ limit: 4 });
    await store.redis.zrem(store.keys.jobsByCreated(), all.next!.id);
    const rest = await store.listJobs({ limit: 100, after: all.next! });
    assert.deepEqual(
      rest.jobs.map((j) => j.id),
      order.slice(4),
    );
  });

  test("a position past the end gives an empty page with the total; newer jobs do not shift a page", async () => {
    const old = await store.submit(
      Array.from({ length: 5 }, () => makeSpec("analyze")),
      { failFast: false },
    );
    const first = await store.listJobs({ limit: 2 });
    await sleep(3);
    await store.submit(
      Array.from({ length: 5 }, () => makeSpec("analyze")),
      { failFast: false },
    );
    const rest = await store.listJobs({ limit: 100, after: first.next! });
    assert.equal(rest.jobs.length, 3);
    assert.ok(rest.jobs.every((j) => old.jobIds.includes(j.id)));
    assert.equal(rest.total, 10);
    assert.equal(rest.next, undefined);
    const end = await store.listJobs({ limit: 5, after: { createdMs: 0, id: "0" } });
    assert.deepEqual(end.jobs, []);
    assert.equal(end.total, 10);
    assert.equal(end.next, undefined);
  });

  test("batches page the same way, with their status and time filters", async () => {
    const ids: string[] = [];
    let first: string | undefined;
    for (let i = 0; i < 7; i++) {
      const submitted = await store.submit(
        [makeSpec("analyze")],
        { id: `batch-${i}`, failFast: false },
        BY_ALICE,
      );
      ids.push(submitted.batchId!);
      first ??= submitted.jobIds[0];
      await sleep(2);
    }
    await store.submit([makeSpec("analyze")], { id: "someone-elses", failFast: false });
    // batch-0 completes (claimed by its id: alice and the job without a client take turns).
    await claimJob(store, "analyze", first!);
    await store.start(first!, 60_000);
    await store.complete(first!, {});
    const newestFirst = [...ids].reverse();
    const page = async (filter: {
      status?: "queued" | "completed";
      createdAfter?: number;
      createdBefore?: number;
    }) => {
      const out: string[] = [];
      let after: ListPosition | undefined;
      do {
        const p = await store.listBatches({
          limit: 2,
          viewer: ALICE,
          ...filter,
          ...(after ? { after } : {}),
        });
        out.push(...p.batches.map((b) => b.id));
        after = p.next;
      } while (after);
      return out;
    };
    assert.deepEqual(await page({}), newestFirst);
    assert.deepEqual(await page({ status: "queued" }), newestFirst.slice(0, 6));
    assert.deepEqual(await page({ status: "completed" }), ["batch-0"]);
    // The index holds the ids as stored: alice's own, apart from other clients' (keys.ts storedBatchId).
    const ms = async (id: string) =>
      Number(await store.redis.zscore(store.keys.batchesByCreated(), storedBatchId(id, "alice")));
    const window = { createdAfter: await ms("batch-2"), createdBefore: await ms("batch-5") };
    assert.deepEqual(await page(window), ["batch-4", "batch-3", "batch-2"]);
    const counted = await store.listBatches({ limit: 1, viewer: ALICE, status: "queued", ...window });
    assert.equal(counted.total, 3);
    assert.equal((await store.listBatches({ limit: 100 })).total, 8, "an admin lists everyone's");
  });
});

describe("filters against a model", () => {
  const TYPES: JobType[] = ["analyze", "image_colors", "image_resize"];
  const STATUSES: JobStatus[] = ["pending", "processing", "completed", "failed"];
  const TIMES = [1000, 1001, 1003, 1010];

  const jobArb = fc.record({
    ms: fc.constantFrom(...TIMES),
    type: fc.constantFrom(...TYPES),
    status: fc.constantFrom(...STATUSES),
    client: fc.constantFrom(undefined, "alice", "bob"),
    batch: fc.constantFrom(undefined, "b1", "b2"),
  });
  const idArb = fc.string({ unit: fc.constantFrom(..."aAbB_-09z"), minLength: 1, maxLength: 4 });
  const jobsArb = fc.uniqueArray(fc.tuple(idArb, jobArb), { maxLength: 60, selector: ([id]) => id });
  const bound = fc.option(fc.constantFrom(999, ...TIMES, 1002, 1011), { nil: undefined });
  const queryArb = fc.record({
    viewer: fc.constantFrom<Viewer>(EVERYONE, ALICE),
    status: fc.option(fc.constantFrom(...STATUSES), { nil: undefined }),
    type: fc.option(fc.constantFrom(...TYPES), { nil: undefined }),
    batchId: fc.option(fc.constantFrom("b1", "b2", "none"), { nil: undefined }),
    createdAfter: bound,
    createdBefore: bound,
    limit: fc.integer({ min: 1, max: 7 }),
  });

  test("every combination of status, type, batch, time window and viewer: the jobs, the order, the total on every page", async () => {
    await fc.assert(
      fc.asyncProperty(jobsArb, queryArb, async (entries, query) => {
        await store.redis.del(...(await storeKeys(store)), "unused");
        const jobs: Planted[] = entries.map(([id, job]) => ({
          id,
          ms: job.ms,
          type: job.type,
          status: job.status,
          ...(job.client ? { client: job.client } : {}),
          ...(job.batch ? { batch: job.batch } : {}),
        }));
        await plant(jobs);
        const expected = jobs
          .filter(
            (j) =>
              ("all" in query.viewer || j.client === query.viewer.client) &&
              (!query.status || j.status === query.status) &&
              (!query.type || j.type === query.type) &&
              (!query.batchId || j.batch === query.batchId) &&
              (query.createdAfter === undefined || j.ms >= query.createdAfter) &&
              (query.createdBefore === undefined || j.ms < query.createdBefore),
          )
          .sort(listOrder)
          .map((j) => j.id);
        const filter: Omit<JobListFilter, "after"> = { viewer: query.viewer, limit: query.limit };
        for (const key of ["status", "type", "batchId", "createdAfter", "createdBefore"] as const) {
          if (query[key] !== undefined) Object.assign(filter, { [key]: query[key] });
        }
        const { ids, totals } = await pageJobs(filter);
        assert.deepEqual(ids, expected);
        assert.ok(
          totals.every((t) => t === expected.length),
          `totals ${totals.join(",")} of ${expected.length}`,
        );
      }),
      { numRuns: 300 },
    );
  });
});
