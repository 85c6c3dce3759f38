// The figures per minute as the transition scripts note them: jobs ended, durations, queue depths.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { JobStore } from "../../core/store/store.js";
import { claimAndStart, claimJob, makeSpec, storeSuite } from "../support/store.js";

let store: JobStore;
storeSuite((s) => (store = s), { maxAttempts: 3 });

const A = "image_resize";

test("what ended, the completed ones' durations and the queue's depth, per minute", async () => {
  const before = (await store.history(1)).points[0]!.by_type[A]!;
  assert.deepEqual([before.completed, before.failed, before.pending, before.p50_seconds], [0, 0, 0, null]);
  const { jobIds } = await store.submit([makeSpec(A), makeSpec(A), makeSpec(A)]);
  assert.equal((await store.history(1)).points[0]!.by_type[A]!.pending, 3);
  const done = await claimAndStart(store, A);
  assert.equal(await store.complete(done, {}), true);
  assert.equal(await store.cancel("job", jobIds[2]!, "cancelled by request"), "cancelled");
  const history = await store.history(3);
  assert.equal(history.points.length, 3);
  // Summed over the window, in case a minute ended during the test.
  const sum = (field: "completed" | "failed") => history.points.reduce((n, p) => n + p.by_type[A]![field], 0);
  assert.deepEqual([sum("completed"), sum("failed")], [1, 1]);
  const now = history.points.at(-1)!;
  assert.deepEqual([now.by_type[A]!.pending, now.pending], [1, 1]);
  const ended = history.points.find((p) => p.by_type[A]!.completed === 1)!;
  assert.ok(ended.by_type[A]!.p50_seconds! > 0 && ended.by_type[A]!.p50_seconds! <= 0.1);
  // Two minutes ago, before the first change: the depth it started from, not the depth after it.
  assert.equal(history.points[0]!.by_type[A]!.pending, 0);
});

test("a client that is not an admin is told of its own jobs; an admin, of everyone's", async () => {
  const alice = { client: "alice" };
  const bob = { client: "bob" };
  const own = (
    await store.submit([makeSpec(A), makeSpec(A), makeSpec(A)], undefined, { name: "alice", admin: false })
  ).jobIds as [string, string, string];
  await store.submit([makeSpec(A), makeSpec(A)], undefined, { name: "bob", admin: false });
  await store.submit([makeSpec(A)], undefined, { name: "root", admin: true });
  await claimJob(store, A, own[0]);
  assert.equal(await store.start(own[0], 60_000), true);
  assert.equal(await store.complete(own[0], {}), true);
  assert.equal(await store.cancel("job", own[1], "cancelled by request"), "cancelled");

  const window = async (viewer?: { client: string }) => {
    const history = await store.history(3, 1, Date.now(), viewer);
    const sum = (field: "completed" | "failed") =>
      history.points.reduce((n, p) => n + p.by_type[A]![field], 0);
    const now = history.points.at(-1)!;
    const ended = history.points.find((p) => p.by_type[A]!.completed > 0);
    return {
      completed: sum("completed"),
      failed: sum("failed"),
      pending: now.by_type[A]!.pending,
      total: now.pending,
      timed: ended?.by_type[A]!.p50_seconds !== null && ended !== undefined,
      before: history.points[0]!.by_type[A]!.pending,
    };
  };
  assert.deepEqual(await window(alice), {
    completed: 1,
    failed: 1,
    pending: 1,
    total: 1,
    timed: true,
    before: 0,
  });
  assert.deepEqual(await window(bob), {
    completed: 0,
    failed: 0,
    pending: 2,
    total: 2,
    timed: false,
    before: 0,
  });
  assert.deepEqual(await window({ client: "carol" }), {
    completed: 0,
    failed: 0,
    pending: 0,
    total: 0,
    timed: false,
    before: 0,
  });
  assert.deepEqual(await window(), { completed: 1, failed: 1, pending: 4, total: 4, timed: true, before: 0 });
});
