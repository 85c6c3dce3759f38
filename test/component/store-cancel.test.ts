// A client's cancellation in the store (lua/cancel.lua): a pending job fails at once and can no longer
// be claimed, a processing one fails as a cancellation its executor acts on (job.cancelled), a second
// cancel changes nothing, an ended job says how it ended; a batch's unfinished jobs are cancelled
// together, its fail_fast does not turn them into failures of the first, and it ends by the usual rule.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { CANCELLED_BY_REQUEST } from "../../core/policy.js";
import { NotFoundError } from "../../core/store/errors.js";
import type { JobStore } from "../../core/store/store.js";
import { claimAndStart, makeSpec, rawJob, storeSuite, streamEvents } from "../support/store.js";

let store: JobStore;
storeSuite((s) => (store = s));

const A = "audio_convert";

async function submitOne(): Promise<string> {
  return (await store.submit([makeSpec(A)])).jobIds[0]!;
}

describe("cancelling a job", () => {
  test("a pending job fails at once, as a cancellation, and is never claimed", async () => {
    const id = await submitOne();
    assert.equal(await store.cancel("job", id, CANCELLED_BY_REQUEST), "cancelled");
    const job = await store.getJob(id);
    assert.equal(job?.status, "failed");
    assert.equal(job?.error, "cancelled by request");
    assert.ok(job?.cancelled_at && job.cancelled_at === job.completed_at, "cancelled_at is when it ended");
    assert.equal(job?.started_at, undefined, "it never started");
    assert.equal(await store.claim(A, 30_000, "executor"), null, "nothing left to claim");
    const events = (await streamEvents(store, "job.cancelled")).filter((e) => e.fields.job_id === id);
    assert.equal(events.length, 1);
    assert.equal(events[0]!.fields.was, "pending");
    const counters = (await store.counters())[A];
    assert.deepEqual([counters.pending, counters.failed, counters.cancelledTotal], [0, 1, 1]);
  });

  test("a processing job fails with job.cancelled (its executor stops it); a later result is dropped", async () => {
    const id = await submitOne();
    assert.equal(await claimAndStart(store, A), id);
    assert.equal(await store.cancel("job", id, CANCELLED_BY_REQUEST), "cancelled");
    assert.equal((await store.getJob(id))?.status, "failed");
    const [event] = (await streamEvents(store, "job.cancelled")).filter((e) => e.fields.job_id === id);
    assert.equal(event?.fields.was, "processing");
    assert.equal(
      await store.complete(id, { output_url: "s3://b/k" }),
      false,
      "the runner's late result is dropped",
    );
    assert.equal((await store.getJob(id))?.error, "cancelled by request");
  });

  test("a second cancel changes nothing; a completed or failed job says so; an unknown one is NOTFOUND", async () => {
    const id = await submitOne();
    await store.cancel("job", id, CANCELLED_BY_REQUEST);
    const before = await rawJob(store, id);
    assert.equal(await store.cancel("job", id, CANCELLED_BY_REQUEST), "unchanged");
    assert.deepEqual(await rawJob(store, id), before);
    assert.equal((await store.counters())[A].cancelledTotal, 1);

    const done = await submitOne();
    await claimAndStart(store, A);
    await store.complete(done, {});
    assert.equal(await store.cancel("job", done, CANCELLED_BY_REQUEST), "completed");
    assert.equal((await store.getJob(done))?.status, "completed");

    const failed = await submitOne();
    await claimAndStart(store, A);
    await store.fail(failed, "source s3://b/k not found");
    assert.equal(await store.cancel("job", failed, CANCELLED_BY_REQUEST), "failed");
    assert.equal((await store.getJob(failed))?.error, "source s3://b/k not found");

    await assert.rejects(store.cancel("job", "no-such-job", CANCELLED_BY_REQUEST), NotFoundError);
  });
});

describe("cancelling a batch", () => {
  test("its unfinished jobs are cancelled by request, not by fail_fast, and the batch ends", async () => {
    const { batchId, jobIds } = await store.submit([makeSpec(A), makeSpec(A), makeSpec(A)], {
      failFast: true,
    });
    const [done, running] = jobIds as [string, string, string];
    assert.equal(await claimAndStart(store, A), done);
    await store.complete(done, {});
    assert.equal(await claimAndStart(store, A), running);

    assert.equal(await store.cancel("batch", batchId!, CANCELLED_BY_REQUEST), "cancelled");
    const jobs = await Promise.all(jobIds.map((id) => store.getJob(id)));
    assert.deepEqual(
      jobs.map((j) => [j?.status, j?.error]),
      [
        ["completed", undefined],
        ["failed", "cancelled by request"],
        ["failed", "cancelled by request"],
      ],
    );
    const batch = await store.getBatch(batchId!);
    assert.equal(batch?.status, "partial");
    assert.deepEqual([batch?.failed, batch?.cancelled], [2, 2], "its failed jobs were all cancelled");
    assert.ok(batch?.cancelled_at);
    assert.equal(batch?.stopped_by, undefined, "no job's failure stopped it");
    assert.equal(
      (await streamEvents(store, "batch.completed")).filter((e) => e.fields.batch_id === batchId).length,
      1,
    );

    assert.equal(await store.cancel("batch", batchId!, CANCELLED_BY_REQUEST), "unchanged");
  });

  test("one job cancelled on its own is a failure of its fail_fast batch, which stops the others", async () => {
    const { batchId, jobIds } = await store.submit([makeSpec(A), makeSpec(A)], { failFast: true });
    const [cancelled, other] = jobIds as [string, string];
    assert.equal(await store.cancel("job", cancelled, CANCELLED_BY_REQUEST), "cancelled");
    assert.equal(
      (await store.getJob(other))?.error,
      `cancelled: batch ${batchId} stopped by the failure of job ${cancelled}`,
    );
    const batch = await store.getBatch(batchId!);
    assert.deepEqual(
      [batch?.status, batch?.stopped_by, batch?.cancelled_at],
      ["failed", cancelled, undefined],
    );
  });

  test("a batch that has ended says how; an unknown one is NOTFOUND", async () => {
    const { batchId, jobIds } = await store.submit([makeSpec(A)], { failFast: false });
    await claimAndStart(store, A);
    await store.complete(jobIds[0]!, {});
    assert.equal(await store.cancel("batch", batchId!, CANCELLED_BY_REQUEST), "completed");
    assert.equal((await store.getBatch(batchId!))?.cancelled_at, undefined);
    await assert.rejects(store.cancel("batch", "no-such-batch", CANCELLED_BY_REQUEST), NotFoundError);
  });
});
