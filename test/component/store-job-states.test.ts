// A job's state in the store: a failed job that was cancelled reads `cancelled` (its status stays
// failed), in its record and in list summaries; the scripts index failed and cancelled jobs apart
// (shared and per-client copies), so the list's state filter reads an index rather than scanning;
// the queues count the cancelled ones; prune takes all of it back.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { CANCELLED_BY_REQUEST } from "../../core/policy.js";
import type { JobStore } from "../../core/store/store.js";
import type { Submitter } from "../../core/store/visibility.js";
import { claimAndStart, makeSpec, rawStats, sleep, storeKeys, storeSuite } from "../support/store.js";

let store: JobStore;
storeSuite((s) => (store = s), { retentionMs: 50 });

const T = "image_colors";
const ALICE: Submitter = { name: "alice", admin: false };

/** A cancelled job, a job that failed on its own, a completed and a pending one, of `by`. */
async function fourJobs(by?: Submitter) {
  const { jobIds } = await store.submit([makeSpec(T), makeSpec(T), makeSpec(T), makeSpec(T)], undefined, by);
  const [cancelled, failed, completed, pending] = jobIds as [string, string, string, string];
  assert.equal(await store.cancel("job", cancelled, CANCELLED_BY_REQUEST), "cancelled");
  assert.equal(await claimAndStart(store, T), failed);
  assert.equal(await store.fail(failed, "source s3://b/k not found"), true);
  assert.equal(await claimAndStart(store, T), completed);
  assert.equal(await store.complete(completed, {}), true);
  return { cancelled, failed, completed, pending };
}

const ids = (page: { jobs: Array<{ id: string }> }) => page.jobs.map((j) => j.id).sort();

describe("job states", () => {
  test("a cancelled job reads cancelled, a failed one failed; status stays failed for both", async () => {
    const jobs = await fourJobs();
    for (const [id, status, state] of [
      [jobs.cancelled, "failed", "cancelled"],
      [jobs.failed, "failed", "failed"],
      [jobs.completed, "completed", "completed"],
      [jobs.pending, "pending", "pending"],
    ] as const) {
      const job = await store.getJob(id);
      assert.deepEqual([job?.status, job?.state], [status, state], id);
    }
    const summaries = (await store.listJobs({ limit: 10 })).jobs;
    assert.deepEqual(Object.fromEntries(summaries.map((j) => [j.id, [j.status, j.state]])), {
      [jobs.cancelled]: ["failed", "cancelled"],
      [jobs.failed]: ["failed", "failed"],
      [jobs.completed]: ["completed", "completed"],
      [jobs.pending]: ["pending", "pending"],
    });
  });

  test("the state filter: failed without the cancelled, cancelled alone; status=failed both", async () => {
    const jobs = await fourJobs();
    const cancelled = await store.listJobs({ limit: 10, state: "cancelled" });
    assert.deepEqual([ids(cancelled), cancelled.total], [[jobs.cancelled], 1]);
    const failed = await store.listJobs({ limit: 10, state: "failed" });
    assert.deepEqual([ids(failed), failed.total], [[jobs.failed], 1]);
    const both = await store.listJobs({ limit: 10, status: "failed" });
    assert.deepEqual(ids(both), [jobs.cancelled, jobs.failed].sort());
    assert.deepEqual(ids(await store.listJobs({ limit: 10, state: "pending" })), [jobs.pending]);
    assert.deepEqual(ids(await store.listJobs({ limit: 10, state: "completed" })), [jobs.completed]);
    assert.equal((await store.listJobs({ limit: 10, state: "cancelled", type: "analyze" })).total, 0);
    assert.equal((await store.listJobs({ limit: 10, state: "cancelled", type: T })).total, 1);
    assert.equal((await store.listJobs({ limit: 10, state: "cancelled", status: "completed" })).total, 0);
  });

  test("the indexes are the scripts': shared and the client's own copy, read by the filter", async () => {
    const jobs = await fourJobs(ALICE);
    const k = store.keys;
    assert.deepEqual(await store.redis.zrange(k.jobsByState("cancelled"), 0, -1), [jobs.cancelled]);
    assert.deepEqual(await store.redis.zrange(k.jobsByState("failed"), 0, -1), [jobs.failed]);
    assert.deepEqual(await store.redis.zrange(k.jobsByState("cancelled", "alice"), 0, -1), [jobs.cancelled]);
    assert.deepEqual(await store.redis.zrange(k.jobsByState("failed", "alice"), 0, -1), [jobs.failed]);
    const alice = { client: "alice" };
    assert.deepEqual(ids(await store.listJobs({ limit: 10, state: "cancelled", viewer: alice })), [
      jobs.cancelled,
    ]);
    assert.equal(
      (await store.listJobs({ limit: 10, state: "cancelled", viewer: { client: "bob" } })).total,
      0,
    );
    // The filter reads the index: a cancelled job missing from it (one that failed before it existed) is not found.
    await store.redis.zrem(k.jobsByState("cancelled", "alice"), jobs.cancelled);
    assert.equal((await store.listJobs({ limit: 10, state: "cancelled", viewer: alice })).total, 0);
  });

  test("a fail_fast batch's cancelled jobs are cancelled; the one that failed is failed", async () => {
    const { jobIds } = await store.submit([makeSpec(T), makeSpec(T), makeSpec(T)], { failFast: true });
    const first = await claimAndStart(store, T);
    await store.fail(first, "undecodable source");
    assert.deepEqual(ids(await store.listJobs({ limit: 10, state: "failed" })), [first]);
    assert.deepEqual(
      ids(await store.listJobs({ limit: 10, state: "cancelled" })),
      jobIds.filter((id) => id !== first).sort(),
    );
  });

  test("queues count the cancelled among the failed; history too; prune takes it all back", async () => {
    await fourJobs(ALICE);
    const stats = await store.queueStats();
    assert.deepEqual([stats.queues[T]?.failed, stats.queues[T]?.cancelled], [2, 1]);
    assert.deepEqual([stats.total_failed, stats.total_cancelled], [2, 1]);
    const now = (await store.history(1)).points.at(-1)!;
    assert.deepEqual([now.failed, now.cancelled], [2, 1]);
    assert.deepEqual([now.by_type[T]?.failed, now.by_type[T]?.cancelled], [2, 1]);

    await sleep(80);
    assert.equal(await store.prune(), 3, "the three finished jobs");
    assert.deepEqual([(await rawStats(store, T)).failed, (await rawStats(store, T)).cancelled], [0, 0]);
    assert.deepEqual(
      (await storeKeys(store)).filter((key) => key.includes(":state:")),
      [],
      "no state index entry outlives its job",
    );
  });

  test("prune does not count down a cancelled job that was never counted (failed before the count)", async () => {
    const { cancelled } = await fourJobs();
    // As a job cancelled by an earlier version: in no state index, not in the count.
    await store.redis.zrem(store.keys.jobsByState("cancelled"), cancelled);
    await store.redis.hincrby(store.keys.stats(T), "cancelled", -1);
    await store.submit([makeSpec(T)]).then(async ({ jobIds }) => store.cancel("job", jobIds[0]!, "x"));
    await sleep(80);
    await store.prune();
    assert.equal((await rawStats(store, T)).cancelled, 0, "the newer one was pruned too; no -1");
  });
});
