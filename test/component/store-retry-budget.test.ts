// The retry budget, enforced by the store wherever a job goes back to its queue (requeue.lua,
// reap.lua): a processing job already charged its budget of runs fails instead, through the same path
// as any failure; a job only claimed always goes back; a hand-back neither fails nor costs an attempt.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { JobStore } from "../../core/store/store.js";
import {
  claimAndStart,
  claimJob,
  createStore,
  makeSpec,
  rawJob,
  sleep,
  storeSuite,
  streamEvents,
} from "../support/store.js";

const BUDGET = 3;
let store: JobStore;
const suite = storeSuite((s) => (store = s), { maxAttempts: BUDGET });

const LEASE = 30_000;
const A = "image_resize";

async function submitOne(overrides = {}): Promise<string> {
  return (await store.submit([makeSpec(A, overrides)])).jobIds[0]!;
}

/** Runs the job `n` times, each run ended by a counted re-queue that must give it back. */
async function runAndRequeue(id: string, n: number): Promise<void> {
  for (let run = 1; run <= n; run++) {
    assert.equal(await claimAndStart(store, A), id);
    assert.equal(await store.requeueJob(id, `transient ${run}`), "requeued", `run ${run} goes back`);
  }
}

describe("requeueJob", () => {
  test("below the budget the job goes back; at it, it fails with the reason and the attempts", async () => {
    const id = await submitOne();
    await runAndRequeue(id, BUDGET - 1);
    assert.equal((await store.getJob(id))?.attempts, BUDGET - 1);

    assert.equal(await claimAndStart(store, A), id);
    assert.equal(await store.requeueJob(id, "runner exited with code 1"), "failed");
    const job = await store.getJob(id);
    assert.equal(job?.status, "failed");
    assert.equal(job?.error, `runner exited with code 1 (gave up after ${BUDGET} attempts)`);
    assert.deepEqual(await store.redis.zrange(store.keys.pending(A), 0, -1), [], "not queued again");
    assert.equal(await store.redis.zscore(store.keys.active(A), id), null, "lease gone");
    const c = (await store.counters())[A];
    assert.deepEqual([c.pending, c.processing, c.failed], [0, 0, 1]);
    const failed = await streamEvents(store, "job.failed");
    assert.deepEqual(
      failed.map((e) => [e.fields.job_id, e.fields.was]),
      [[id, "processing"]],
    );
    assert.equal((await streamEvents(store, "job.requeued")).length, BUDGET - 1);
    assert.equal(await store.requeueJob(id, "again"), "unchanged", "a failed job stays failed");
  });

  test("a failure by the budget says the job has a webhook and stops a fail_fast batch", async () => {
    const { jobIds, batchId } = await store.submit(
      [makeSpec(A, { webhook_url: "https://example.com/h" }), makeSpec(A)],
      { failFast: true },
    );
    const [first, second] = jobIds as [string, string];
    await runAndRequeue(first, BUDGET - 1);
    assert.equal(await claimAndStart(store, A), first);
    assert.equal(await store.requeueJob(first, "lost"), "failed");

    assert.equal((await streamEvents(store, "job.failed"))[0]?.fields.webhook, "1");
    const other = await store.getJob(second);
    assert.equal(other?.status, "failed");
    assert.match(other?.error ?? "", /stopped by the failure of job/);
    assert.equal((await streamEvents(store, "job.cancelled"))[0]?.fields.job_id, second);
    const batch = await store.getBatch(batchId!);
    assert.deepEqual([batch?.status, batch?.failed, batch?.stopped_by], ["failed", 2, first]);
    assert.equal((await streamEvents(store, "batch.completed")).length, 1);
  });

  test("a job only claimed goes back whatever its attempts: this run was not charged yet", async () => {
    const id = await submitOne();
    await store.redis.hset(store.keys.job(id), "attempts", String(BUDGET + 5));
    await claimJob(store, A, id);
    assert.equal(await store.requeueJob(id, "claimed, never started"), "requeued");
    const job = await store.getJob(id);
    assert.equal(job?.status, "pending");
    assert.equal(job?.attempts, BUDGET + 5, "nothing charged, nothing refunded");
    assert.equal(await store.claim(A, LEASE, "w"), id, "claimable again");
  });

  test("a hand-back at the budget goes back and refunds its run: the job keeps its whole budget", async () => {
    const id = await submitOne();
    await runAndRequeue(id, BUDGET - 1);
    assert.equal(await claimAndStart(store, A), id);
    assert.equal((await store.getJob(id))?.attempts, BUDGET);
    assert.equal(await store.requeueJob(id, "the controller stopped", { handback: true }), "requeued");
    let job = await store.getJob(id);
    assert.equal(job?.status, "pending");
    assert.equal(job?.attempts, BUDGET - 1, "the interrupted run is refunded");
    assert.equal((await streamEvents(store, "job.requeued")).at(-1)?.fields.reason, "the controller stopped");

    // Its last run still has the whole budget behind it: fails only once it is spent.
    assert.equal(await claimAndStart(store, A), id);
    assert.equal(await store.requeueJob(id, "transient"), "failed");
    job = await store.getJob(id);
    assert.equal(job?.error, `transient (gave up after ${BUDGET} attempts)`);
  });

  test("a budget of 1 fails a job at its first counted re-queue", async () => {
    const strict = createStore(suite.url, { maxAttempts: 1 });
    const id = (await strict.submit([makeSpec(A)])).jobIds[0]!;
    assert.equal(await claimAndStart(strict, A), id);
    assert.equal(await strict.requeueJob(id, "boom"), "failed");
    assert.equal((await strict.getJob(id))?.error, "boom (gave up after 1 attempt)");
  });

  test("a store made without a budget refuses to re-queue or reap, and changes nothing", async () => {
    const unbudgeted = createStore(suite.url, { maxAttempts: undefined });
    const id = (await unbudgeted.submit([makeSpec(A)])).jobIds[0]!;
    assert.equal(await claimAndStart(unbudgeted, A), id);
    const before = await rawJob(unbudgeted, id);
    await assert.rejects(unbudgeted.requeueJob(id, "x"), /retry budget/);
    await assert.rejects(unbudgeted.reap(), /retry budget/);
    assert.deepEqual(await rawJob(unbudgeted, id), before);
  });
});

describe("reap", () => {
  test("an expired lease past the budget fails the job instead of running it again", async () => {
    const id = await submitOne();
    await runAndRequeue(id, BUDGET - 1);
    assert.equal(await claimAndStart(store, A, 1), id, "the last run, under a 1 ms lease");
    await sleep(10);

    assert.deepEqual(await store.reap(), [{ id, outcome: "failed" }]);
    const job = await store.getJob(id);
    assert.equal(job?.status, "failed");
    assert.equal(job?.error, `its executor stopped renewing the lease (gave up after ${BUDGET} attempts)`);
    assert.equal(await store.claim(A, LEASE, "w"), null, "never claimed again");
    assert.deepEqual(await store.reap(), [], "nothing left to reap");
  });

  test("expired leases below the budget, or of jobs only claimed, go back; live ones stay", async () => {
    const [running, claimed, live] = (await store.submit([makeSpec(A), makeSpec(A), makeSpec(A)])).jobIds as [
      string,
      string,
      string,
    ];
    assert.equal(await claimAndStart(store, A, 1), running);
    assert.equal(await store.claim(A, 1, "w"), claimed);
    assert.equal(await claimAndStart(store, A, LEASE), live);
    await store.redis.hset(store.keys.job(claimed), "attempts", String(BUDGET));
    await sleep(10);

    const reaped = await store.reap();
    assert.deepEqual(
      reaped.sort((a, b) => a.id.localeCompare(b.id)),
      [
        { id: running, outcome: "requeued" },
        { id: claimed, outcome: "requeued" },
      ].sort((a, b) => a.id.localeCompare(b.id)),
    );
    assert.equal((await store.getJob(running))?.status, "pending");
    assert.equal((await store.getJob(claimed))?.status, "pending");
    assert.equal((await store.getJob(live))?.status, "processing");
    assert.equal(
      (await streamEvents(store, "job.requeued")).at(-1)?.fields.reason,
      "its executor stopped renewing the lease",
    );
  });

  test("an executor that retried the job itself reports its last failure with the attempts it made", async () => {
    const id = await submitOne();
    assert.equal(await claimAndStart(store, A), id);
    assert.equal(await store.fail(id, "the runner exited with code 1", { attempts: 3 }), true);
    assert.equal((await store.getJob(id))?.error, "the runner exited with code 1 (gave up after 3 attempts)");
    const once = await submitOne();
    assert.equal(await claimAndStart(store, A), once);
    assert.equal(await store.fail(once, "the runner exited with code 1", { attempts: 1 }), true);
    assert.equal(
      (await store.getJob(once))?.error,
      "the runner exited with code 1",
      "a single attempt gave nothing up",
    );
  });
});
