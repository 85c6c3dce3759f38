// The store's state machine, one transition at a time: what each script changes (the job hash, the
// queues, the indexes, the counters, the events stream, the job's pub/sub channel) and what it
// refuses or ignores. Batches: store-batches.test.ts; races: store-concurrency.test.ts.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { JOB_DURATION_BUCKETS } from "../../core/metrics.js";
import { ConflictError, IllegalTransitionError, NotFoundError } from "../../core/store/errors.js";
import type { JobStore } from "../../core/store/store.js";
import {
  claimAndStart,
  collectChannel,
  createStore,
  ISO_MS_UTC,
  makeSpec,
  rawJob,
  rawStats,
  sleep,
  storeKeys,
  storeSuite,
  streamEvents,
  UUID_V4,
} from "../support/store.js";

let store: JobStore;
const suite = storeSuite((s) => (store = s));

const LEASE = 30_000;
const A = "image_resize";
const B = "image_colors";

function assertNearNow(iso: string | undefined, what: string) {
  assert.ok(iso, `${what} is set`);
  assert.match(iso, ISO_MS_UTC, `${what} is ISO 8601 UTC with milliseconds`);
  assert.ok(Math.abs(Date.parse(iso) - Date.now()) < 5000, `${what} (${iso}) is close to now`);
}

async function submitOne(type: typeof A | typeof B = A): Promise<string> {
  const { jobIds } = await store.submit([makeSpec(type)]);
  return jobIds[0]!;
}

async function pendingList(type: string) {
  return store.redis.zrange(store.keys.pending(type), 0, -1);
}

async function statusIndex(status: string) {
  return store.redis.zrange(store.keys.jobsByStatus(status), 0, -1);
}

async function counters(type: typeof A | typeof B) {
  return (await store.counters())[type];
}

describe("submit", () => {
  test("records one pending job with its fields, indexes, counters and a job.created event", async () => {
    const spec = makeSpec(A, { parameters: { width: 640 } });
    const res = await store.submit([spec]);
    assert.equal(res.jobIds.length, 1);
    assert.deepEqual(res.queuePositions, [1]);
    assert.equal(res.batchId, undefined);
    const id = res.jobIds[0]!;
    assert.match(id, UUID_V4);

    const job = await store.getJob(id);
    assert.ok(job);
    assert.equal(job.id, id);
    assert.equal(job.type, A);
    assert.equal(job.status, "pending");
    assert.equal(job.source_bucket, spec.source_bucket);
    assert.equal(job.source_key, spec.source_key);
    assert.equal(job.dest_bucket, spec.dest_bucket);
    assert.equal(job.dest_key, spec.dest_key);
    assert.deepEqual(job.parameters, { width: 640 });
    assert.equal(job.attempts, 0);
    assertNearNow(job.created_at, "created_at");
    assert.equal(job.updated_at, job.created_at);
    for (const absent of ["started_at", "completed_at", "result", "error", "progress", "batch_id"] as const) {
      assert.equal(job[absent], undefined, `${absent} is absent`);
    }
    const raw = await rawJob(store, id);
    assert.equal(
      new Date(Number(raw.created_ms)).toISOString(),
      job.created_at,
      "created_at renders created_ms",
    );
    assert.equal(raw.seq, "0");

    assert.deepEqual(await pendingList(A), [id]);
    assert.deepEqual(await store.redis.zrange(store.keys.jobsByCreated(), 0, -1), [id]);
    assert.deepEqual(await statusIndex("pending"), [id]);
    assert.deepEqual(await rawStats(store, A), { pending: 1, submitted_total: 1 });
    const events = await streamEvents(store);
    assert.equal(events.length, 1);
    assert.deepEqual(events[0]!.fields, {
      event: "job.created",
      at: job.created_at,
      job_id: id,
      type: A,
      status: "pending",
    });
  });

  test("several jobs in one call: distinct ids, positions counted per type, queues in order", async () => {
    const specs = [makeSpec(A), makeSpec(B), makeSpec(A), makeSpec(A), makeSpec(B)];
    const res = await store.submit(specs);
    assert.equal(new Set(res.jobIds).size, 5);
    for (const id of res.jobIds) assert.match(id, UUID_V4);
    assert.deepEqual(res.queuePositions, [1, 1, 2, 3, 2]);
    const ids = res.jobIds;
    assert.deepEqual(await pendingList(A), [ids[0], ids[2], ids[3]]);
    assert.deepEqual(await pendingList(B), [ids[1], ids[4]]);
    for (const [i, id] of ids.entries()) assert.equal((await store.getJob(id))?.type, specs[i]!.type);

    const next = await store.submit([makeSpec(A), makeSpec(B)]);
    assert.deepEqual(next.queuePositions, [4, 3]);
    assert.equal((await counters(A)).pending, 4);
    assert.equal((await counters(A)).submittedTotal, 4);
    assert.equal((await counters(B)).pending, 3);
    assert.equal((await store.listJobs({ limit: 100 })).total, 7);
    assert.equal((await statusIndex("pending")).length, 7);
    assert.equal((await streamEvents(store, "job.created")).length, 7);
  });

  test("parameters and every optional field round-trip; absent ones stay absent", async () => {
    const parameters = {
      width: 800,
      ratio: 0.75,
      enlarge: false,
      fit: "contain",
      nested: { list: [1, "two", null], empty: [], obj: {} },
      text: 'héllo ✓ 😀 "quoted" / back\\slash',
    };
    const spec = makeSpec(A, {
      parameters,
      webhook_url: "https://hooks.example.com/done?x=1",
      webhook_style: "chat",
      request_id: "req-42",
      resources: { cpu: "500m", memory: "512Mi" },
      timeout_seconds: 120,
    });
    const [id] = (await store.submit([spec])).jobIds;
    const job = await store.getJob(id!);
    assert.ok(job);
    assert.deepEqual(job.parameters, parameters);
    assert.equal(job.webhook_url, "https://hooks.example.com/done?x=1");
    assert.equal(job.webhook_style, "chat");
    assert.equal(job.request_id, "req-42");
    assert.deepEqual(job.resources, { cpu: "500m", memory: "512Mi" });
    assert.equal(job.timeout_seconds, 120);

    const [plainId] = (
      await store.submit([{ type: B, source_bucket: "b-1", source_key: "k", parameters: {} }])
    ).jobIds;
    const plain = await store.getJob(plainId!);
    assert.ok(plain);
    assert.deepEqual(plain.parameters, {});
    for (const absent of [
      "dest_bucket",
      "dest_key",
      "webhook_url",
      "webhook_style",
      "request_id",
      "resources",
      "timeout_seconds",
    ] as const) {
      assert.equal(plain[absent], undefined, `${absent} is absent`);
    }
  });

  test("a batch id that exists → ConflictError, and nothing is written", async () => {
    await store.submit([makeSpec(A)], { id: "batch-x", failFast: false });
    const keysBefore = await storeKeys(store);
    const dump = async () =>
      Promise.all([
        store.counters(),
        pendingList(A),
        pendingList(B),
        store.redis.xlen(store.keys.events()),
        store.redis.zrange(store.keys.jobsByCreated(), 0, -1),
        store.getBatch("batch-x"),
        store.batchJobs("batch-x"),
      ]);
    const before = await dump();

    await assert.rejects(
      store.submit([makeSpec(A), makeSpec(B)], { id: "batch-x", failFast: true }),
      ConflictError,
    );

    assert.deepEqual(await storeKeys(store), keysBefore);
    assert.deepEqual(await dump(), before);
  });
});

describe("claim", () => {
  test("FIFO per type, under a lease; the job stays pending; other queues untouched", async () => {
    const a = (await store.submit([makeSpec(A), makeSpec(A), makeSpec(A)])).jobIds;
    const [b] = (await store.submit([makeSpec(B)])).jobIds;

    const first = await store.claim(A, LEASE, "worker-1");
    assert.equal(first, a[0]);
    const job = await store.getJob(first);
    assert.equal(job?.status, "pending");
    const raw = await rawJob(store, first);
    assert.equal(raw.claimed_by, "worker-1");
    const leaseUntil = Number(raw.lease_until);
    assert.ok(Math.abs(leaseUntil - (Date.now() + LEASE)) < 5000, "lease_until ≈ now + lease");
    assert.equal(Number(await store.redis.zscore(store.keys.active(A), first)), leaseUntil);
    assert.deepEqual(await pendingList(A), [a[1], a[2]]);
    assert.deepEqual(await pendingList(B), [b]);
    assert.equal((await counters(A)).pending, 3, "a claimed job still counts as pending");
    assert.equal((await counters(A)).processing, 0);
    assert.deepEqual((await statusIndex("pending")).sort(), [...a, b].sort());

    assert.equal(await store.claim(A, LEASE, "worker-2"), a[1]);
    assert.equal(await store.claim(A, LEASE, "worker-2"), a[2]);
    assert.equal(await store.claim(A, LEASE, "worker-2"), null);
    assert.equal(await store.redis.zcard(store.keys.active(A)), 3);
    assert.deepEqual(await pendingList(B), [b]);
    assert.equal(await store.claim(B, LEASE, "worker-3"), b);
  });

  test("an empty or unknown queue gives null", async () => {
    assert.equal(await store.claim("analyze", LEASE, "w"), null);
    await store.submit([makeSpec(A)]);
    assert.equal(await store.claim(B, LEASE, "w"), null);
  });

  test("claimFirst tries the types in the order given, in one call, and names the type it took from", async () => {
    const [b1, b2] = (await store.submit([makeSpec(B), makeSpec(B)])).jobIds;
    const [a1] = (await store.submit([makeSpec(A)])).jobIds;
    // "analyze" is empty; A comes before B in this order, so A's job goes first, then B's in turn.
    assert.deepEqual(await store.claimFirst(["analyze", A, B], LEASE, "w"), { id: a1, type: A });
    assert.deepEqual(await store.claimFirst(["analyze", A, B], LEASE, "w"), { id: b1, type: B });
    assert.deepEqual(await store.claimFirst([B, A], LEASE, "w"), { id: b2, type: B });
    assert.equal(await store.claimFirst([A, B, "analyze"], LEASE, "w"), null);
    assert.equal(await store.claimFirst([], LEASE, "w"), null);
    assert.equal((await rawJob(store, b1!)).claimed_by, "w");
    assert.equal(await store.redis.zcard(store.keys.active(B)), 2);
  });

  test("skips jobs failed while pending and entries whose job is gone", async () => {
    const [a1, a2, a3] = (await store.submit([makeSpec(A), makeSpec(A), makeSpec(A)])).jobIds;
    assert.equal(await store.fail(a1!, "cancelled by user", { cancelled: true }), true);
    await store.redis.zadd(store.keys.pending(A), -1, "00000000-0000-4000-8000-000000000000");
    assert.equal(await store.claim(A, LEASE, "w"), a2);
    assert.equal(await store.claim(A, LEASE, "w"), a3);
    assert.equal(await store.claim(A, LEASE, "w"), null);
    assert.equal(await store.redis.zscore(store.keys.active(A), a1!), null);
  });

  // Store bug (reported): claim.lua LPOPs the job before ZADD fails on the NaN lease deadline, and
  // Redis does not undo a script's writes when it errors: the job is left pending in no queue.
  test("a claim refused for an invalid lease leaves the job claimable", async () => {
    const id = await submitOne();
    await store.claim(A, Number.NaN, "w").catch(() => null);
    const queued = (await pendingList(A)).includes(id);
    const leased = (await store.redis.zscore(store.keys.active(A), id)) !== null;
    assert.ok(queued || leased, "the job is still in its queue or held under a lease");
  });
});

describe("start", () => {
  test("claimed pending → processing: attempts, started_at, lease, index, counters, message, event", async () => {
    const id = await submitOne();
    const channel = await collectChannel(store.redis, store.keys.jobChannel(id));
    assert.equal(await store.claim(A, LEASE, "w"), id);
    assert.equal(await store.start(id, 2 * LEASE), true);

    const job = await store.getJob(id);
    assert.ok(job);
    assert.equal(job.status, "processing");
    assert.equal(job.attempts, 1);
    assert.equal(job.progress, 0);
    assertNearNow(job.started_at, "started_at");
    assert.equal(job.updated_at, job.started_at);
    const raw = await rawJob(store, id);
    assert.ok(Math.abs(Number(raw.lease_until) - (Date.now() + 2 * LEASE)) < 5000, "lease renewed by start");
    assert.equal(Number(await store.redis.zscore(store.keys.active(A), id)), Number(raw.lease_until));
    assert.deepEqual(await statusIndex("pending"), []);
    assert.deepEqual(await statusIndex("processing"), [id]);
    const c = await counters(A);
    assert.equal(c.pending, 0);
    assert.equal(c.processing, 1);

    const [message] = await channel.waitFor(1);
    assert.deepEqual(message, {
      seq: 1,
      event: "status",
      data: { status: "processing", message: "processing started" },
    });
    assert.equal((await store.getJobWithSeq(id))?.seq, 1);
    const started = await streamEvents(store, "job.started");
    assert.equal(started.length, 1);
    assert.equal(started[0]!.fields.job_id, id);
    assert.equal(started[0]!.fields.status, "processing");
    await channel.close();
  });

  test("a duplicate start returns false and changes nothing", async () => {
    const id = await submitOne();
    await claimAndStart(store, A);
    const before = await rawJob(store, id);
    const statsBefore = await rawStats(store, A);
    await sleep(2);
    assert.equal(await store.start(id, LEASE), false);
    assert.deepEqual(await rawJob(store, id), before);
    assert.deepEqual(await rawStats(store, A), statsBefore);
    assert.equal((await streamEvents(store, "job.started")).length, 1);
  });

  test("an unclaimed pending job cannot start", async () => {
    const id = await submitOne();
    const before = await rawJob(store, id);
    await assert.rejects(store.start(id, LEASE), IllegalTransitionError);
    assert.deepEqual(await rawJob(store, id), before);
    assert.deepEqual(await pendingList(A), [id]);
    assert.equal((await counters(A)).pending, 1);
  });

  test("a completed or failed job cannot start; an unknown one is not found", async () => {
    await store.submit([makeSpec(A), makeSpec(A), makeSpec(A)]);
    const done = await claimAndStart(store, A);
    await store.complete(done, {});
    const failedRunning = await claimAndStart(store, A);
    await store.fail(failedRunning, "boom");
    const claimedThenFailed = (await store.claim(A, LEASE, "w"))!;
    await store.fail(claimedThenFailed, "boom");
    for (const id of [done, failedRunning, claimedThenFailed]) {
      await assert.rejects(store.start(id, LEASE), IllegalTransitionError);
    }
    assert.equal((await store.getJob(done))?.status, "completed");
    assert.equal((await store.getJob(failedRunning))?.status, "failed");
    await assert.rejects(store.start("no-such-job", LEASE), NotFoundError);
  });
});

describe("progress", () => {
  test("recorded and published while processing, clamped to 0–100", async () => {
    const id = await submitOne();
    await claimAndStart(store, A);
    const channel = await collectChannel(store.redis, store.keys.jobChannel(id));
    assert.equal(await store.progress(id, 42.5, "half-way"), true);
    assert.equal((await store.getJob(id))?.progress, 42.5);
    assert.equal(await store.progress(id, 150), true);
    assert.equal((await store.getJob(id))?.progress, 100);
    assert.equal(await store.progress(id, -3, "back"), true);
    assert.equal((await store.getJob(id))?.progress, 0);
    const messages = await channel.waitFor(3);
    assert.deepEqual(messages, [
      { seq: 2, event: "progress", data: { percent: 42.5, message: "half-way" } },
      { seq: 3, event: "progress", data: { percent: 100, message: "" } },
      { seq: 4, event: "progress", data: { percent: 0, message: "back" } },
    ]);
    await channel.close();
  });

  test("ignored (false) unless processing", async () => {
    const [unclaimed, claimed, done, failed] = (
      await store.submit([makeSpec(B), makeSpec(A), makeSpec(A), makeSpec(A)])
    ).jobIds as [string, string, string, string];
    assert.equal(await store.claim(A, LEASE, "w"), claimed);
    await claimAndStart(store, A);
    await store.complete(done, {});
    await claimAndStart(store, A);
    await store.fail(failed, "boom");
    for (const id of [unclaimed, claimed, done, failed]) {
      const before = await rawJob(store, id);
      assert.equal(await store.progress(id, 50, "late"), false);
      assert.deepEqual(await rawJob(store, id), before, "nothing changes");
      assert.equal((await store.getJob(id))?.progress, undefined);
    }
    assert.equal(await store.progress("no-such-job", 50), false);
  });

  // Store bug (reported): NaN passes the clamp in progress.lua, is written to the hash, seq is
  // incremented, then cjson refuses to encode NaN in publish(): the script errors half-applied.
  test("a NaN percent changes nothing (no NaN progress, no seq without a message)", async () => {
    const id = await submitOne();
    await claimAndStart(store, A);
    const before = await rawJob(store, id);
    await store.progress(id, Number.NaN).catch(() => false);
    assert.deepEqual(await rawJob(store, id), before);
    assert.equal((await store.getJob(id))?.progress, 0);
  });
});

describe("complete", () => {
  test("processing → completed: result, times, counters, histogram, indexes, event, message", async () => {
    const id = await submitOne();
    await claimAndStart(store, A);
    await store.progress(id, 60);
    const channel = await collectChannel(store.redis, store.keys.jobChannel(id));
    await sleep(20);
    const result = { output_url: "s3://b/k", file_size: 123, metadata: { width: 1, height: 2 }, tags: [] };
    assert.equal(await store.complete(id, result), true);

    const job = await store.getJob(id);
    assert.ok(job);
    assert.equal(job.status, "completed");
    assert.deepEqual(job.result, result, "an empty array stays an array");
    assert.equal(job.progress, undefined, "progress is dropped from a finished job");
    assertNearNow(job.completed_at, "completed_at");
    assert.equal(job.updated_at, job.completed_at);
    assert.ok(
      job.duration_seconds !== undefined && job.duration_seconds >= 0.015 && job.duration_seconds < 5,
    );
    assert.equal(job.error, undefined);
    const raw = await rawJob(store, id);
    assert.equal(raw.claimed_by, undefined);
    assert.equal(raw.lease_until, undefined);
    assert.equal(await store.redis.zscore(store.keys.active(A), id), null);
    assert.deepEqual(await statusIndex("processing"), []);
    assert.deepEqual(await statusIndex("completed"), [id]);
    assert.deepEqual(await rawStats(store, A), {
      pending: 0,
      processing: 0,
      completed: 1,
      submitted_total: 1,
      completed_total: 1,
    });
    const expiry = Number(await store.redis.zscore(store.keys.expiry(), `job:${id}`));
    assert.ok(Math.abs(expiry - (Date.now() + 7 * 24 * 3600 * 1000)) < 5000, "kept for the retention");

    const hist = (await store.durationHistograms())[A];
    assert.equal(hist.count, 1);
    assert.ok(Math.abs(hist.sum - job.duration_seconds) < 1e-9);
    assert.deepEqual(
      hist.buckets,
      JOB_DURATION_BUCKETS.map((bound) => (job.duration_seconds! <= bound ? 1 : 0)),
    );
    assert.equal((await store.durationHistograms())[B].count, 0);

    const [message] = await channel.waitFor(1);
    assert.deepEqual(message, { seq: 3, event: "complete", data: { status: "completed" } });
    const completed = await streamEvents(store, "job.completed");
    assert.equal(completed.length, 1);
    assert.equal(completed[0]!.fields.job_id, id);
    assert.equal(completed[0]!.fields.status, "completed");
    await channel.close();
  });

  test("a duplicate returns false and leaves the record unchanged", async () => {
    const id = await submitOne();
    await claimAndStart(store, A);
    await store.complete(id, { n: 1 });
    const before = await rawJob(store, id);
    await sleep(2);
    assert.equal(await store.complete(id, { n: 2 }), false);
    assert.deepEqual(await rawJob(store, id), before);
    assert.deepEqual((await store.getJob(id))?.result, { n: 1 });
    assert.equal((await counters(A)).completed, 1);
    assert.equal((await counters(A)).completedTotal, 1);
    assert.equal((await store.durationHistograms())[A].count, 1);
    assert.equal((await streamEvents(store, "job.completed")).length, 1);
  });

  test("a pending job (claimed or not) cannot complete", async () => {
    const [claimed, unclaimed] = (await store.submit([makeSpec(A), makeSpec(A)])).jobIds as [string, string];
    await store.claim(A, LEASE, "w");
    for (const id of [claimed, unclaimed]) {
      const before = await rawJob(store, id);
      await assert.rejects(store.complete(id, {}), IllegalTransitionError);
      assert.deepEqual(await rawJob(store, id), before);
    }
    assert.equal((await counters(A)).pending, 2);
    await assert.rejects(store.complete("no-such-job", {}), NotFoundError);
  });

  test("after a failure it returns false and the job stays failed", async () => {
    const id = await submitOne();
    await claimAndStart(store, A);
    await store.fail(id, "cancelled by user", { cancelled: true });
    assert.equal(await store.complete(id, { late: true }), false);
    const job = await store.getJob(id);
    assert.equal(job?.status, "failed");
    assert.equal(job?.error, "cancelled by user");
    assert.equal(job?.result, undefined);
    const c = await counters(A);
    assert.deepEqual([c.processing, c.completed, c.failed, c.completedTotal], [0, 0, 1, 0]);
    assert.equal((await store.durationHistograms())[A].count, 0);
  });
});

describe("fail", () => {
  test("processing → failed: error, times, counters, indexes, lease gone, event, message", async () => {
    const id = await submitOne();
    await claimAndStart(store, A);
    const channel = await collectChannel(store.redis, store.keys.jobChannel(id));
    assert.equal(await store.fail(id, "decoder exploded"), true);
    const job = await store.getJob(id);
    assert.ok(job);
    assert.equal(job.status, "failed");
    assert.equal(job.error, "decoder exploded");
    assert.equal(job.result, undefined);
    assert.equal(job.progress, undefined);
    assertNearNow(job.completed_at, "completed_at");
    assert.ok(job.duration_seconds !== undefined && job.duration_seconds >= 0);
    assert.equal(await store.redis.zscore(store.keys.active(A), id), null);
    assert.equal(await store.renewLease(id, LEASE), false);
    assert.deepEqual(await statusIndex("processing"), []);
    assert.deepEqual(await statusIndex("failed"), [id]);
    assert.deepEqual(await rawStats(store, A), {
      pending: 0,
      processing: 0,
      failed: 1,
      submitted_total: 1,
      failed_total: 1,
    });
    assert.ok(await store.redis.zscore(store.keys.expiry(), `job:${id}`));
    const [message] = await channel.waitFor(1);
    assert.deepEqual(message, {
      seq: 2,
      event: "complete",
      data: { status: "failed", error: "decoder exploded" },
    });
    const failed = await streamEvents(store, "job.failed");
    assert.equal(failed.length, 1);
    assert.equal(failed[0]!.fields.job_id, id);
    assert.equal(failed[0]!.fields.was, "processing");
    assert.equal((await streamEvents(store, "job.cancelled")).length, 0);
    await channel.close();
  });

  test("pending → failed: leaves its queue (claimed or not) and is never claimed", async () => {
    const [claimed, unclaimed, other] = (await store.submit([makeSpec(A), makeSpec(A), makeSpec(A)]))
      .jobIds as [string, string, string];
    assert.equal(await store.claim(A, LEASE, "w"), claimed);
    assert.equal(await store.fail(claimed, "cancelled", { cancelled: true }), true);
    assert.equal(await store.fail(unclaimed, "cancelled", { cancelled: true }), true);
    assert.equal(await store.redis.zcard(store.keys.active(A)), 0);
    assert.deepEqual(await pendingList(A), [other]);
    assert.equal(await store.claim(A, LEASE, "w"), other);
    assert.equal(await store.claim(A, LEASE, "w"), null);
    const job = await store.getJob(unclaimed);
    assert.equal(job?.status, "failed");
    assert.equal(job?.duration_seconds, undefined, "a job that never started has no duration");
    assert.equal(job?.started_at, undefined);
    const c = await counters(A);
    assert.deepEqual([c.pending, c.failed, c.failedTotal], [1, 2, 2]);
    const cancelled = await streamEvents(store, "job.cancelled");
    assert.deepEqual(
      cancelled.map((e) => [e.fields.job_id, e.fields.was]),
      [
        [claimed, "pending"],
        [unclaimed, "pending"],
      ],
    );
  });

  test("a duplicate returns false and changes nothing", async () => {
    const id = await submitOne();
    await claimAndStart(store, A);
    await store.fail(id, "first");
    const before = await rawJob(store, id);
    const statsBefore = await rawStats(store, A);
    await sleep(2);
    assert.equal(await store.fail(id, "second"), false);
    assert.deepEqual(await rawJob(store, id), before);
    assert.deepEqual(await rawStats(store, A), statsBefore);
    assert.equal((await streamEvents(store, "job.failed")).length, 1);
  });

  test("a completed job cannot fail; an unknown one is not found", async () => {
    const id = await submitOne();
    await claimAndStart(store, A);
    await store.complete(id, { ok: true });
    const before = await rawJob(store, id);
    await assert.rejects(store.fail(id, "too late"), IllegalTransitionError);
    assert.deepEqual(await rawJob(store, id), before);
    assert.equal((await counters(A)).failed, 0);
    await assert.rejects(store.fail("no-such-job", "x"), NotFoundError);
  });
});

describe("requeue", () => {
  test("processing → pending at the head of its queue; claimed again before the others", async () => {
    const [first, second] = (await store.submit([makeSpec(A), makeSpec(A)])).jobIds as [string, string];
    await claimAndStart(store, A);
    await store.progress(first, 30);
    const channel = await collectChannel(store.redis, store.keys.jobChannel(first));
    assert.equal(await store.requeueJob(first, "lease expired"), "requeued");

    const job = await store.getJob(first);
    assert.equal(job?.status, "pending");
    const raw = await rawJob(store, first);
    for (const gone of ["claimed_by", "lease_until", "progress"])
      assert.equal(raw[gone], undefined, `${gone} removed`);
    assert.equal(await store.redis.zscore(store.keys.active(A), first), null);
    assert.deepEqual(await pendingList(A), [first, second]);
    assert.deepEqual((await statusIndex("pending")).sort(), [first, second].sort());
    assert.deepEqual(await statusIndex("processing"), []);
    const c = await counters(A);
    assert.deepEqual([c.pending, c.processing], [2, 0]);
    const [message] = await channel.waitFor(1);
    assert.deepEqual(message, {
      seq: 3,
      event: "status",
      data: { status: "pending", message: "requeued: lease expired" },
    });
    const requeued = await streamEvents(store, "job.requeued");
    assert.equal(requeued.length, 1);
    assert.equal(requeued[0]!.fields.reason, "lease expired");

    assert.equal(await store.claim(A, LEASE, "w2"), first);
    assert.equal(await store.start(first, LEASE), true);
    assert.equal((await store.getJob(first))?.attempts, 2);
    await channel.close();
  });

  test("a claimed, not started job goes back to the head; counters unchanged", async () => {
    const [first, second] = (await store.submit([makeSpec(A), makeSpec(A)])).jobIds as [string, string];
    assert.equal(await store.claim(A, LEASE, "w"), first);
    assert.equal(await store.requeueJob(first, "executor shutting down"), "requeued");
    assert.deepEqual(await pendingList(A), [first, second]);
    assert.equal(await store.redis.zcard(store.keys.active(A)), 0);
    assert.equal((await counters(A)).pending, 2);
    assert.equal(await store.claim(A, LEASE, "w"), first);
  });

  test("returns false for finished jobs and for pending jobs nobody claimed", async () => {
    const [done, failed, waiting] = (await store.submit([makeSpec(A), makeSpec(A), makeSpec(A)])).jobIds as [
      string,
      string,
      string,
    ];
    await claimAndStart(store, A);
    await store.complete(done, {});
    await claimAndStart(store, A);
    await store.fail(failed, "boom");
    for (const id of [done, failed, waiting]) {
      const before = await rawJob(store, id);
      assert.equal(await store.requeueJob(id, "again"), "unchanged");
      assert.deepEqual(await rawJob(store, id), before);
    }
    assert.deepEqual(await pendingList(A), [waiting], "nothing pushed twice");
    assert.equal((await streamEvents(store, "job.requeued")).length, 0);
    await assert.rejects(store.requeueJob("no-such-job", "x"), NotFoundError);
  });
});

describe("renewLease", () => {
  test("true while claimed or processing, false otherwise", async () => {
    const [claimed, running, waiting, done, failed] = (
      await store.submit([makeSpec(A), makeSpec(A), makeSpec(A), makeSpec(B), makeSpec(B)])
    ).jobIds as [string, string, string, string, string];
    assert.equal(await store.claim(A, 1000, "w"), claimed);
    assert.equal(await store.claim(A, 1000, "w"), running);
    await store.start(running, 1000);
    await claimAndStart(store, B);
    await store.complete(done, {});
    await claimAndStart(store, B);
    await store.fail(failed, "x");

    for (const id of [claimed, running]) {
      assert.equal(await store.renewLease(id, 90_000), true);
      const until = Number((await rawJob(store, id)).lease_until);
      assert.ok(Math.abs(until - (Date.now() + 90_000)) < 5000);
      assert.equal(Number(await store.redis.zscore(store.keys.active(A), id)), until);
    }
    for (const id of [waiting, done, failed, "no-such-job"]) {
      assert.equal(await store.renewLease(id, 90_000), false, id);
    }
    assert.equal((await rawJob(store, waiting)).lease_until, undefined);
  });
});

describe("prune", () => {
  test("removes finished jobs and batches after the retention, leaves live ones alone", async () => {
    store = createStore(suite.url, { retentionMs: 50 });
    const [done, failed, running, waiting] = (
      await store.submit([makeSpec(A), makeSpec(A), makeSpec(A), makeSpec(A)])
    ).jobIds as [string, string, string, string];
    const batch = await store.submit([makeSpec(B), makeSpec(B)], { failFast: false });
    await claimAndStart(store, A);
    await store.complete(done, {});
    await claimAndStart(store, A);
    await store.fail(failed, "boom");
    await claimAndStart(store, A);
    for (const id of batch.jobIds) {
      await claimAndStart(store, B);
      await store.complete(id, {});
    }
    assert.equal((await store.getBatch(batch.batchId!))?.status, "completed");
    const before = await store.queueStats();
    assert.deepEqual(
      [
        before.total_jobs,
        before.total_pending,
        before.total_processing,
        before.total_completed,
        before.total_failed,
      ],
      [6, 1, 1, 3, 1],
    );

    await sleep(80);
    assert.equal(await store.prune(), 5, "4 jobs and 1 batch");

    for (const id of [done, failed, ...batch.jobIds]) assert.equal(await store.getJob(id), undefined);
    assert.equal(await store.getBatch(batch.batchId!), undefined);
    assert.equal(await store.redis.exists(store.keys.batchJobs(batch.batchId!)), 0);
    assert.equal((await store.getJob(running))?.status, "processing");
    assert.equal((await store.getJob(waiting))?.status, "pending");
    const list = await store.listJobs({ limit: 10 });
    assert.equal(list.total, 2);
    assert.deepEqual(list.jobs.map((j) => j.id).sort(), [running, waiting].sort());
    assert.equal((await store.listJobs({ status: "completed", limit: 10 })).total, 0);
    assert.equal((await store.listJobs({ status: "failed", limit: 10 })).total, 0);
    assert.equal((await store.listBatches({ limit: 10 })).total, 0);
    assert.equal((await store.listBatches({ status: "completed", limit: 10 })).total, 0);
    const stats = await store.queueStats();
    assert.deepEqual(
      [
        stats.total_jobs,
        stats.total_pending,
        stats.total_processing,
        stats.total_completed,
        stats.total_failed,
      ],
      [2, 1, 1, 0, 0],
    );
    assert.deepEqual(await rawStats(store, B), {
      pending: 0,
      processing: 0,
      completed: 0,
      submitted_total: 2,
      completed_total: 2,
    });
    assert.equal(await store.redis.zcard(store.keys.expiry()), 0);
    assert.equal(await store.prune(), 0);
    assert.equal(await store.claim(A, LEASE, "w"), waiting);
  });

  test("keeps finished jobs within the retention, and honours the limit", async () => {
    const ids = (await store.submit([makeSpec(A), makeSpec(A)])).jobIds;
    for (const id of ids) {
      await claimAndStart(store, A);
      await store.complete(id, {});
    }
    assert.equal(await store.prune(), 0);
    for (const id of ids) assert.equal((await store.getJob(id))?.status, "completed");

    const short = createStore(suite.url, { retentionMs: 1 });
    const shortIds = (await short.submit([makeSpec(A), makeSpec(A), makeSpec(A)])).jobIds;
    for (const id of shortIds) {
      await claimAndStart(short, A);
      await short.complete(id, {});
    }
    await sleep(10);
    assert.equal(await short.prune(2), 2);
    assert.equal((await short.listJobs({ limit: 10 })).total, 1);
    assert.equal(await short.prune(2), 1);
    assert.equal((await short.counters())[A].completed, 0);
  });
});

describe("listing", () => {
  test("listJobs: newest first, status filter, limit, total", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      ids.push(await submitOne(i % 2 ? B : A));
      await sleep(3);
    }
    const all = await store.listJobs({ limit: 10 });
    assert.equal(all.total, 4);
    assert.deepEqual(
      all.jobs.map((j) => j.id),
      [...ids].reverse(),
    );
    const summary = all.jobs[0]!;
    assert.deepEqual(Object.keys(summary).sort(), [
      "created_at",
      "id",
      "output",
      "source",
      "state",
      "status",
      "type",
    ]);
    assert.equal(summary.type, B);
    assert.equal(summary.status, "pending");

    const top = await store.listJobs({ limit: 2 });
    assert.equal(top.total, 4);
    assert.deepEqual(
      top.jobs.map((j) => j.id),
      [ids[3], ids[2]],
    );

    await claimAndStart(store, A);
    await store.fail(ids[2]!, "cancelled", { cancelled: true });
    const processing = await store.listJobs({ status: "processing", limit: 10 });
    assert.deepEqual(
      processing.jobs.map((j) => [j.id, j.status]),
      [[ids[0], "processing"]],
    );
    assert.equal(processing.total, 1);
    const pending = await store.listJobs({ status: "pending", limit: 1 });
    assert.equal(pending.total, 2);
    assert.deepEqual(
      pending.jobs.map((j) => j.id),
      [ids[3]],
    );
    assert.deepEqual(
      (await store.listJobs({ status: "failed", limit: 5 })).jobs.map((j) => j.id),
      [ids[2]],
    );
    assert.deepEqual(await store.listJobs({ status: "completed", limit: 5 }), { jobs: [], total: 0 });
  });

  test("listBatches: newest first, status filter, limit, total", async () => {
    const batches: string[] = [];
    for (let i = 0; i < 3; i++) {
      batches.push((await store.submit([makeSpec(A)], { failFast: false })).batchId!);
      await sleep(3);
    }
    const all = await store.listBatches({ limit: 10 });
    assert.equal(all.total, 3);
    assert.deepEqual(
      all.batches.map((b) => b.id),
      [...batches].reverse(),
    );
    const top = await store.listBatches({ limit: 1 });
    assert.equal(top.total, 3);
    assert.deepEqual(
      top.batches.map((b) => b.id),
      [batches[2]],
    );
    await claimAndStart(store, A);
    const processing = await store.listBatches({ status: "processing", limit: 10 });
    assert.deepEqual(
      processing.batches.map((b) => [b.id, b.status]),
      [[batches[0], "processing"]],
    );
    assert.equal((await store.listBatches({ status: "queued", limit: 10 })).total, 2);
    assert.deepEqual(await store.listBatches({ status: "partial", limit: 10 }), { batches: [], total: 0 });
  });
});

describe("SSE support", () => {
  test("seq strictly increases over a job's life and the hash holds the last one published", async () => {
    const id = await submitOne();
    const channel = await collectChannel(store.redis, store.keys.jobChannel(id));
    await claimAndStart(store, A);
    await store.progress(id, 10);
    await store.requeueJob(id, "retry");
    await claimAndStart(store, A);
    for (const p of [20, 50, 80]) await store.progress(id, p);
    await store.complete(id, { ok: true });
    await store.progress(id, 99);
    const messages = await channel.waitFor(8);
    await sleep(20);
    assert.equal(messages.length, 8, "nothing published after the end");
    assert.deepEqual(
      messages.map((m) => m.seq),
      [1, 2, 3, 4, 5, 6, 7, 8],
    );
    assert.deepEqual(
      messages.map((m) => m.event),
      ["status", "progress", "status", "status", "progress", "progress", "progress", "complete"],
    );
    const snapshot = await store.getJobWithSeq(id);
    assert.equal(snapshot?.seq, messages.at(-1)!.seq);
    assert.equal(snapshot?.job.status, "completed");
    assert.equal(await store.getJobWithSeq("no-such-job"), undefined);
    await channel.close();
  });
});
