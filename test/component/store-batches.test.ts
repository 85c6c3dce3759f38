// Batches in the store: their counters and status as their jobs move, the batch.completed event,
// and fail_fast (the first failure cancels the batch's pending and running jobs).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { Batch } from "../../core/jobs/records.js";
import type { JobStore } from "../../core/store/store.js";
import {
  claimAndStart,
  claimJob,
  collectChannel,
  ISO_MS_UTC,
  makeSpec,
  rawJob,
  storeSuite,
  streamEvents,
  UUID_V4,
} from "../support/store.js";

let store: JobStore;
storeSuite((s) => (store = s));

const LEASE = 30_000;
const A = "image_resize";
const B = "image_colors";

type Counts = Pick<Batch, "status" | "pending" | "processing" | "completed" | "failed" | "total_jobs">;
async function counts(batchId: string): Promise<Counts> {
  const b = await store.getBatch(batchId);
  assert.ok(b, `batch ${batchId} exists`);
  return {
    status: b.status,
    pending: b.pending,
    processing: b.processing,
    completed: b.completed,
    failed: b.failed,
    total_jobs: b.total_jobs,
  };
}

async function batchIndex(status: string) {
  return store.redis.zrange(store.keys.batchesByStatus(status), 0, -1);
}

/** Submits a batch of `n` jobs of type A (in that queue's order). */
async function submitBatch(n: number, failFast: boolean, id?: string) {
  const res = await store.submit(
    Array.from({ length: n }, () => makeSpec(A)),
    { failFast, ...(id ? { id } : {}) },
  );
  return { batchId: res.batchId!, ids: res.jobIds };
}

async function start(id: string) {
  await claimJob(store, A, id);
  assert.equal(await store.start(id, LEASE), true);
}

describe("batch submit", () => {
  test("records the batch queued, its jobs in order, indexes and a batch.created event", async () => {
    const specs = [makeSpec(A), makeSpec(B), makeSpec(A)];
    const res = await store.submit(specs, { failFast: true, webhookUrl: "https://hooks.example.com/batch" });
    assert.ok(res.batchId);
    assert.match(res.batchId, UUID_V4);
    assert.deepEqual(res.queuePositions, [1, 1, 2]);
    const batch = await store.getBatch(res.batchId);
    assert.ok(batch);
    assert.equal(batch.id, res.batchId);
    assert.equal(batch.fail_fast, true);
    assert.equal(batch.webhook_url, "https://hooks.example.com/batch");
    assert.equal(batch.stopped_by, undefined);
    assert.equal(batch.completed_at, undefined);
    assert.match(batch.created_at, ISO_MS_UTC);
    assert.ok(Math.abs(Date.parse(batch.created_at) - Date.now()) < 5000);
    assert.deepEqual(await counts(res.batchId), {
      status: "queued",
      total_jobs: 3,
      pending: 3,
      processing: 0,
      completed: 0,
      failed: 0,
    });
    assert.deepEqual(
      (await store.batchJobs(res.batchId)).map((j) => [j.id, j.type, j.status]),
      res.jobIds.map((id, i) => [id, specs[i]!.type, "pending"]),
    );
    for (const id of res.jobIds) assert.equal((await store.getJob(id))?.batch_id, res.batchId);
    assert.deepEqual(await store.redis.zrange(store.keys.batchesByCreated(), 0, -1), [res.batchId]);
    assert.deepEqual(await batchIndex("queued"), [res.batchId]);
    const created = await streamEvents(store, "batch.created");
    assert.equal(created.length, 1);
    assert.equal(created[0]!.fields.batch_id, res.batchId);
    assert.equal(created[0]!.fields.total_jobs, "3");
    assert.deepEqual(
      (await streamEvents(store, "job.created")).map((e) => e.fields.batch_id),
      [res.batchId, res.batchId, res.batchId],
    );
    assert.equal((await store.counters())[A].pending, 2);
  });

  test("a caller-chosen batch id is used; without a webhook none is recorded", async () => {
    const { batchId } = await submitBatch(1, false, "my-batch-1");
    assert.equal(batchId, "my-batch-1");
    const batch = await store.getBatch("my-batch-1");
    assert.equal(batch?.fail_fast, false);
    assert.equal(batch?.webhook_url, undefined);
    assert.equal(await store.getBatch("no-such-batch"), undefined);
    assert.deepEqual(await store.batchJobs("no-such-batch"), []);
  });
});

describe("batch status", () => {
  test("queued → processing on the first start → completed when every job succeeded", async () => {
    const { batchId, ids } = await submitBatch(3, false);
    const [j1, j2, j3] = ids as [string, string, string];

    await start(j1);
    assert.deepEqual(await counts(batchId), {
      status: "processing",
      total_jobs: 3,
      pending: 2,
      processing: 1,
      completed: 0,
      failed: 0,
    });
    assert.deepEqual(await batchIndex("queued"), []);
    assert.deepEqual(await batchIndex("processing"), [batchId]);

    await start(j2);
    assert.deepEqual(await counts(batchId), {
      status: "processing",
      total_jobs: 3,
      pending: 1,
      processing: 2,
      completed: 0,
      failed: 0,
    });
    assert.equal(await store.complete(j1, { n: 1 }), true);
    assert.deepEqual(await counts(batchId), {
      status: "processing",
      total_jobs: 3,
      pending: 1,
      processing: 1,
      completed: 1,
      failed: 0,
    });
    await store.complete(j2, { n: 2 });
    await start(j3);
    assert.equal((await store.getBatch(batchId))?.completed_at, undefined);
    await store.complete(j3, { n: 3 });

    const batch = await store.getBatch(batchId);
    assert.deepEqual(await counts(batchId), {
      status: "completed",
      total_jobs: 3,
      pending: 0,
      processing: 0,
      completed: 3,
      failed: 0,
    });
    assert.match(batch?.completed_at ?? "", ISO_MS_UTC);
    assert.deepEqual(await batchIndex("processing"), []);
    assert.deepEqual(await batchIndex("completed"), [batchId]);
    assert.ok(await store.redis.zscore(store.keys.expiry(), `batch:${batchId}`));
    const done = await streamEvents(store, "batch.completed");
    assert.equal(done.length, 1);
    assert.deepEqual(done[0]!.fields, {
      event: "batch.completed",
      at: batch!.completed_at!,
      batch_id: batchId,
      status: "completed",
      total_jobs: "3",
      completed: "3",
      failed: "0",
    });
    const all = await streamEvents(store);
    assert.equal(all.at(-1)!.event, "batch.completed", "after the last job's event");
    assert.deepEqual(
      (await store.batchJobs(batchId)).map((j) => [j.id, j.status]),
      ids.map((id) => [id, "completed"]),
    );
  });

  test("failed when no job succeeded", async () => {
    const { batchId, ids } = await submitBatch(2, false);
    await start(ids[0]!);
    await store.fail(ids[0]!, "boom");
    assert.deepEqual(await counts(batchId), {
      status: "processing",
      total_jobs: 2,
      pending: 1,
      processing: 0,
      completed: 0,
      failed: 1,
    });
    assert.equal((await store.getJob(ids[1]!))?.status, "pending", "without fail_fast the others go on");
    await store.fail(ids[1]!, "cancelled", { cancelled: true });
    assert.deepEqual(await counts(batchId), {
      status: "failed",
      total_jobs: 2,
      pending: 0,
      processing: 0,
      completed: 0,
      failed: 2,
    });
    assert.deepEqual(await batchIndex("failed"), [batchId]);
    const done = await streamEvents(store, "batch.completed");
    assert.deepEqual(
      done.map((e) => [e.fields.status, e.fields.completed, e.fields.failed]),
      [["failed", "0", "2"]],
    );
  });

  test("fail_fast=false: a failure does not stop the others; the batch ends partial", async () => {
    const webhook = "https://hooks.example.com/b";
    const res = await store.submit([makeSpec(A), makeSpec(A), makeSpec(A)], {
      failFast: false,
      webhookUrl: webhook,
    });
    const batchId = res.batchId!;
    const [j1, j2, j3] = res.jobIds as [string, string, string];
    await start(j1);
    await start(j2);
    await store.fail(j1, "bad input");
    assert.equal((await store.getJob(j2))?.status, "processing");
    assert.equal((await store.getJob(j3))?.status, "pending");
    assert.equal((await store.getBatch(batchId))?.stopped_by, undefined);
    assert.equal((await streamEvents(store, "job.cancelled")).length, 0);
    assert.equal(await store.complete(j2, {}), true);
    await start(j3);
    assert.equal(await store.complete(j3, {}), true);
    assert.deepEqual(await counts(batchId), {
      status: "partial",
      total_jobs: 3,
      pending: 0,
      processing: 0,
      completed: 2,
      failed: 1,
    });
    assert.deepEqual(await batchIndex("partial"), [batchId]);
    const done = await streamEvents(store, "batch.completed");
    assert.equal(done.length, 1);
    assert.deepEqual(
      [
        done[0]!.fields.status,
        done[0]!.fields.completed,
        done[0]!.fields.failed,
        done[0]!.fields.webhook_url,
      ],
      ["partial", "2", "1", webhook],
    );
  });

  test("requeue moves the batch's counters back; the batch stays processing", async () => {
    const { batchId, ids } = await submitBatch(2, true);
    await start(ids[0]!);
    assert.equal(await store.requeueJob(ids[0]!, "lease expired"), "requeued");
    assert.deepEqual(await counts(batchId), {
      status: "processing",
      total_jobs: 2,
      pending: 2,
      processing: 0,
      completed: 0,
      failed: 0,
    });
    await start(ids[0]!);
    assert.equal((await counts(batchId)).processing, 1);
  });
});

describe("fail_fast", () => {
  test("the first failure cancels pending and running siblings, naming the failing job", async () => {
    const res = await store.submit([makeSpec(A), makeSpec(A), makeSpec(A), makeSpec(A), makeSpec(B)], {
      failFast: true,
    });
    const batchId = res.batchId!;
    const [culprit, running, claimed, waiting, otherType] = res.jobIds as [
      string,
      string,
      string,
      string,
      string,
    ];
    await start(culprit);
    await start(running);
    await claimJob(store, A, claimed);
    const runningChannel = await collectChannel(store.redis, store.keys.jobChannel(running));

    assert.equal(await store.fail(culprit, "decoder exploded"), true);

    const reason = `cancelled: batch ${batchId} stopped by the failure of job ${culprit}`;
    assert.equal((await store.getJob(culprit))?.error, "decoder exploded");
    for (const id of [running, claimed, waiting, otherType]) {
      const job = await store.getJob(id);
      assert.equal(job?.status, "failed", id);
      assert.equal(job?.error, reason);
      assert.equal((await rawJob(store, id)).cancelled, "1");
    }
    const batch = await store.getBatch(batchId);
    assert.equal(batch?.stopped_by, culprit);
    assert.equal(batch?.cancelled, 4, "of its 5 failed, the 4 it stopped were cancelled");
    assert.deepEqual(await counts(batchId), {
      status: "failed",
      total_jobs: 5,
      pending: 0,
      processing: 0,
      completed: 0,
      failed: 5,
    });
    assert.match(batch?.completed_at ?? "", ISO_MS_UTC);

    // Nothing left to run: queues and leases are empty.
    assert.equal(await store.redis.zcard(store.keys.pending(A)), 0);
    assert.equal(await store.redis.zcard(store.keys.pending(B)), 0);
    assert.equal(await store.redis.zcard(store.keys.active(A)), 0);
    assert.equal(await store.claim(A, LEASE, "w"), null);
    assert.equal(await store.claim(B, LEASE, "w"), null);
    assert.equal(await store.renewLease(running, LEASE), false);
    const stats = await store.counters();
    assert.deepEqual(
      [stats[A].pending, stats[A].processing, stats[A].failed, stats[A].failedTotal],
      [0, 0, 4, 4],
    );
    assert.deepEqual([stats[B].pending, stats[B].failed], [0, 1]);

    // Events: the failure, then one cancellation per sibling, then the batch's end, exactly once.
    const ends = new Set(["job.failed", "job.cancelled", "job.completed", "batch.completed"]);
    const events = (await streamEvents(store)).filter((e) => ends.has(e.event));
    assert.deepEqual(
      events.map((e) => [e.event, e.fields.job_id ?? e.fields.batch_id, e.fields.was]),
      [
        ["job.failed", culprit, "processing"],
        ["job.cancelled", running, "processing"],
        ["job.cancelled", claimed, "pending"],
        ["job.cancelled", waiting, "pending"],
        ["job.cancelled", otherType, "pending"],
        ["batch.completed", batchId, undefined],
      ],
    );
    assert.equal(events.at(-1)!.fields.status, "failed");

    const [message] = await runningChannel.waitFor(1);
    assert.deepEqual(message, { seq: 2, event: "complete", data: { status: "failed", error: reason } });
    await runningChannel.close();

    // A late report from the cancelled job's executor changes nothing.
    assert.equal(await store.complete(running, { late: true }), false);
    assert.equal(await store.fail(running, "late failure"), false);
    assert.equal(await store.progress(running, 90), false);
    assert.equal((await store.getJob(running))?.status, "failed");
    assert.equal((await store.getJob(running))?.error, reason);
    assert.equal((await store.counters())[A].completed, 0);
    assert.equal((await streamEvents(store, "batch.completed")).length, 1);
  });

  test("with one job completed before the failure the batch ends partial", async () => {
    const { batchId, ids } = await submitBatch(3, true);
    const [ok, culprit, waiting] = ids as [string, string, string];
    await start(ok);
    await store.complete(ok, { fine: true });
    await start(culprit);
    await store.fail(culprit, "boom");
    assert.equal((await store.getJob(ok))?.status, "completed", "a finished job is left alone");
    assert.equal((await store.getJob(waiting))?.status, "failed");
    assert.equal((await store.getBatch(batchId))?.stopped_by, culprit);
    assert.deepEqual(await counts(batchId), {
      status: "partial",
      total_jobs: 3,
      pending: 0,
      processing: 0,
      completed: 1,
      failed: 2,
    });
    const done = await streamEvents(store, "batch.completed");
    assert.deepEqual(
      done.map((e) => [e.fields.status, e.fields.completed, e.fields.failed]),
      [["partial", "1", "2"]],
    );
    assert.equal(await store.complete(waiting, {}), false);
  });

  test("a failure while every job is still pending takes the batch from queued to failed", async () => {
    const { batchId, ids } = await submitBatch(3, true);
    assert.equal(await store.fail(ids[2]!, "cancelled by user", { cancelled: true }), true);
    assert.equal((await store.getBatch(batchId))?.stopped_by, ids[2]);
    assert.deepEqual(await counts(batchId), {
      status: "failed",
      total_jobs: 3,
      pending: 0,
      processing: 0,
      completed: 0,
      failed: 3,
    });
    assert.deepEqual(await batchIndex("queued"), []);
    assert.deepEqual(await batchIndex("failed"), [batchId]);
    await assert.rejects(store.start(ids[0]!, LEASE));
    assert.equal(await store.claim(A, LEASE, "w"), null);
  });

  test("other batches and lone jobs are not touched", async () => {
    const stopped = await submitBatch(2, true);
    const other = await submitBatch(2, true);
    const [lone] = (await store.submit([makeSpec(A)])).jobIds;
    await start(stopped.ids[0]!);
    await store.fail(stopped.ids[0]!, "boom");
    assert.equal((await counts(stopped.batchId)).status, "failed");
    assert.deepEqual(await counts(other.batchId), {
      status: "queued",
      total_jobs: 2,
      pending: 2,
      processing: 0,
      completed: 0,
      failed: 0,
    });
    assert.equal((await store.getJob(lone!))?.status, "pending");
    assert.deepEqual(await store.redis.zrange(store.keys.pending(A), 0, -1), [...other.ids, lone]);
    await claimAndStart(store, A);
    assert.equal((await counts(other.batchId)).status, "processing");
  });
});
