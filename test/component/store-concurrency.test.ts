// Races on the store: many clients (each its own connection, as separate processes would be) doing
// the same or conflicting transitions at once. Each transition is one Lua script, so every outcome
// must look like some serial order: nothing lost, nothing done twice, counters consistent.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { JobType } from "../../core/jobs/types.js";
import type { JobStore } from "../../core/store/store.js";
import { claimAndStart, makeSpec, rawStats, sameStore, storeSuite, streamEvents } from "../support/store.js";

let store: JobStore;
const suite = storeSuite((s) => (store = s));

const LEASE = 30_000;
const A = "image_resize";
const B = "image_colors";

/** `n` stores on the test's key prefix, each with its own connection. */
function clients(n: number): JobStore[] {
  return Array.from({ length: n }, () => sameStore(suite.url, store));
}

/** Runs the same call from `n` clients at once; returns each outcome (value or error). */
async function race<T>(n: number, call: (client: JobStore, index: number) => Promise<T>) {
  const all = clients(n);
  await Promise.all(all.map((c) => c.ping()));
  return Promise.allSettled(all.map(call));
}

function wins(outcomes: Array<PromiseSettledResult<boolean>>): number {
  return outcomes.filter((o) => o.status === "fulfilled" && o.value).length;
}

async function assertCountersConsistent(type: JobType) {
  const raw = await rawStats(store, type);
  const n = (k: string) => raw[k] ?? 0;
  for (const k of ["pending", "processing", "completed", "failed"])
    assert.ok(n(k) >= 0, `${k} ≥ 0 (${n(k)})`);
  assert.equal(n("pending") + n("processing") + n("completed") + n("failed"), n("submitted_total"));
  assert.equal(n("completed"), n("completed_total"));
  assert.equal(n("failed"), n("failed_total"));
  for (const status of ["pending", "processing", "completed", "failed"]) {
    const indexed = await store.redis.zrange(store.keys.jobsByStatus(status), 0, -1);
    const ofType = (
      await Promise.all(indexed.map((id) => store.redis.hget(store.keys.job(id), "type")))
    ).filter((t) => t === type).length;
    assert.equal(ofType, n(status), `jobs:status:${status} agrees with the ${status} counter`);
  }
}

describe("concurrency", () => {
  test("20 submitters × 25 jobs: 500 jobs, queue of 500, positions a permutation of 1..500", async () => {
    const submitters = clients(20);
    const results = await Promise.all(
      submitters.map(async (client) => {
        const mine: Array<{ id: string; position: number }> = [];
        for (let i = 0; i < 25; i++) {
          const res = await client.submit([makeSpec(A)]);
          mine.push({ id: res.jobIds[0]!, position: res.queuePositions[0]! });
        }
        return mine;
      }),
    );
    const all = results.flat();
    assert.equal(all.length, 500);
    assert.equal(new Set(all.map((r) => r.id)).size, 500);
    assert.deepEqual(
      all.map((r) => r.position).sort((x, y) => x - y),
      Array.from({ length: 500 }, (_, i) => i + 1),
    );
    const queue = await store.redis.zrange(store.keys.pending(A), 0, -1);
    assert.equal(queue.length, 500);
    // Each job sits where its position said it would.
    for (const r of all) assert.equal(queue[r.position - 1], r.id);
    const c = (await store.counters())[A];
    assert.equal(c.pending, 500);
    assert.equal(c.submittedTotal, 500);
    assert.equal((await store.listJobs({ limit: 1 })).total, 500);
    assert.equal(await store.redis.zcard(store.keys.jobsByStatus("pending")), 500);
    assert.equal((await streamEvents(store, "job.created")).length, 500);
  });

  test("10 claimers on one queue of 100 jobs: each job claimed exactly once", async () => {
    const ids = (await store.submit(Array.from({ length: 100 }, () => makeSpec(A)))).jobIds;
    const claimers = clients(10);
    const claimed = await Promise.all(
      claimers.map(async (client, i) => {
        const mine: string[] = [];
        for (;;) {
          const id = await client.claim(A, LEASE, `claimer-${i}`);
          if (id === null) return mine;
          mine.push(id);
        }
      }),
    );
    const flat = claimed.flat();
    assert.equal(flat.length, 100, "no job claimed twice, none missed");
    assert.deepEqual([...flat].sort(), [...ids].sort());
    assert.ok(claimed.filter((mine) => mine.length > 0).length > 1, "the claimers really raced");
    assert.equal(await store.redis.zcard(store.keys.pending(A)), 0);
    assert.equal(await store.redis.zcard(store.keys.active(A)), 100);
    for (const [i, mine] of claimed.entries()) {
      for (const id of mine.slice(0, 3)) {
        assert.equal(await store.redis.hget(store.keys.job(id), "claimed_by"), `claimer-${i}`);
      }
    }
  });

  test("the same start, complete or fail sent 10 times at once: exactly one wins", async () => {
    const [toComplete, toFail] = (await store.submit([makeSpec(A), makeSpec(A)])).jobIds as [string, string];
    await store.claim(A, LEASE, "w");
    await store.claim(A, LEASE, "w");

    const starts = await race(10, (c) => c.start(toComplete, LEASE));
    assert.equal(wins(starts), 1);
    assert.ok(starts.every((o) => o.status === "fulfilled"));
    assert.equal((await store.getJob(toComplete))?.attempts, 1);
    assert.equal((await streamEvents(store, "job.started")).length, 1);
    assert.deepEqual([(await store.counters())[A].pending, (await store.counters())[A].processing], [1, 1]);

    const completes = await race(10, (c) => c.complete(toComplete, { ok: true }));
    assert.equal(wins(completes), 1);
    assert.ok(completes.every((o) => o.status === "fulfilled"));
    assert.equal((await store.durationHistograms())[A].count, 1);
    assert.equal((await streamEvents(store, "job.completed")).length, 1);

    await store.start(toFail, LEASE);
    const fails = await race(10, (c) => c.fail(toFail, "boom"));
    assert.equal(wins(fails), 1);
    assert.ok(fails.every((o) => o.status === "fulfilled"));
    assert.equal((await streamEvents(store, "job.failed")).length, 1);

    const c = (await store.counters())[A];
    assert.deepEqual(
      [c.pending, c.processing, c.completed, c.failed, c.completedTotal, c.failedTotal],
      [0, 0, 1, 1, 1, 1],
    );
    await assertCountersConsistent(A);
  });

  test("complete and fail racing on one job: one of them wins, the job ends in one state", async () => {
    for (let round = 0; round < 5; round++) {
      const [id] = (await store.submit([makeSpec(B)])).jobIds;
      await claimAndStart(store, B);
      // Alternate which kind is sent first, so both kinds win some rounds.
      const outcomes = await race(10, (c, i) =>
        (i + round) % 2 === 0 ? c.complete(id!, { round }) : c.fail(id!, "boom"),
      );
      assert.equal(wins(outcomes), 1, `round ${round}`);
      const job = await store.getJob(id!);
      assert.ok(job?.status === "completed" || job?.status === "failed");
      for (const o of outcomes) {
        // Only a fail arriving after the completion is refused (a completed job cannot fail).
        if (o.status === "rejected") {
          assert.equal(job.status, "completed");
          assert.equal((o.reason as Error).name, "IllegalTransitionError");
        }
      }
    }
    await assertCountersConsistent(B);
    const c = (await store.counters())[B];
    assert.equal(c.completed + c.failed, 5);
    assert.equal((await store.durationHistograms())[B].count, c.completed);
  });

  test("two jobs of a fail_fast batch failing at once: the batch ends exactly once, counters consistent", async () => {
    for (let round = 0; round < 10; round++) {
      const res = await store.submit(
        Array.from({ length: 4 }, () => makeSpec(A)),
        { failFast: true },
      );
      const batchId = res.batchId!;
      const [j1, j2] = res.jobIds as [string, string];
      await claimAndStart(store, A);
      await claimAndStart(store, A);
      const [c1, c2] = clients(2);
      const outcomes = await Promise.all([c1!.fail(j1, "boom 1"), c2!.fail(j2, "boom 2")]);
      assert.equal(outcomes.filter(Boolean).length, 1, "the second failure finds its job already cancelled");

      const batch = await store.getBatch(batchId);
      assert.ok(batch);
      assert.equal(batch.status, "failed");
      assert.ok(batch.stopped_by === j1 || batch.stopped_by === j2);
      assert.equal(batch.pending + batch.processing + batch.completed + batch.failed, batch.total_jobs);
      assert.deepEqual([batch.pending, batch.processing, batch.failed], [0, 0, 4]);
      const culprit = batch.stopped_by;
      const reason = `cancelled: batch ${batchId} stopped by the failure of job ${culprit}`;
      for (const id of res.jobIds.filter((id) => id !== culprit)) {
        assert.equal((await store.getJob(id))?.error, reason);
      }
      const ended = (await streamEvents(store, "batch.completed")).filter(
        (e) => e.fields.batch_id === batchId,
      );
      assert.equal(ended.length, 1, `round ${round}: batch.completed recorded once`);
    }
    await assertCountersConsistent(A);
    assert.equal((await store.counters())[A].failed, 40);
  });

  test("every job of a batch completing at once: batch.completed recorded once, status completed", async () => {
    const res = await store.submit(
      Array.from({ length: 10 }, () => makeSpec(A)),
      { failFast: false },
    );
    for (let i = 0; i < 10; i++) await claimAndStart(store, A);
    const finishers = clients(10);
    const outcomes = await Promise.all(finishers.map((c, i) => c.complete(res.jobIds[i]!, { i })));
    assert.ok(outcomes.every(Boolean));
    const batch = await store.getBatch(res.batchId!);
    assert.equal(batch?.status, "completed");
    assert.equal(batch?.completed, 10);
    assert.equal(batch?.processing, 0);
    assert.equal((await streamEvents(store, "batch.completed")).length, 1);
    await assertCountersConsistent(A);
  });

  test("claimers racing cancellations: a cancelled job is never handed out, none is lost", async () => {
    const ids = (await store.submit(Array.from({ length: 60 }, () => makeSpec(A)))).jobIds;
    const cancelled = new Set(ids.filter((_, i) => i % 2 === 0));
    const [canceller, ...claimers] = clients(6);
    const cancelOutcomes = Promise.all(
      [...cancelled].map((id) => canceller!.fail(id, "cancelled by user", { cancelled: true })),
    );
    const claimedLists = Promise.all(
      claimers.map(async (client) => {
        const mine: Array<{ id: string; wasPending: boolean }> = [];
        for (;;) {
          const id = await client.claim(A, LEASE, "w");
          if (id === null) return mine;
          // Start right away: only a job that was still pending (not cancelled) can start.
          const started = await client.start(id, LEASE).catch(() => false);
          mine.push({ id, wasPending: started });
        }
      }),
    );
    const [failedNow, claimed] = await Promise.all([cancelOutcomes, claimedLists]);
    assert.ok(failedNow.every(Boolean), "every cancellation applied (pending or processing)");
    const flat = claimed.flat();
    assert.equal(new Set(flat.map((c) => c.id)).size, flat.length, "no job claimed twice");
    for (const id of ids.filter((id) => !cancelled.has(id))) {
      assert.ok(
        flat.some((c) => c.id === id && c.wasPending),
        `job ${id} (not cancelled) was claimed and started`,
      );
    }
    assert.equal(await store.redis.zcard(store.keys.pending(A)), 0);
    const c = (await store.counters())[A];
    assert.deepEqual([c.pending, c.processing + c.failed], [0, 60]);
    assert.equal(c.failed, 30);
    await assertCountersConsistent(A);
  });
});
