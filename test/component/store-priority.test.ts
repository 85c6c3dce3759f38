// Priorities in the store: the order claim takes jobs in (higher priority first, equal priorities in
// submission order), the queue positions submit answers, where a job given back goes, and queues an
// earlier version left as lists.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { JobStore } from "../../core/store/store.js";
import { makeSpec, rawJob, storeSuite } from "../support/store.js";

let store: JobStore;
storeSuite((s) => (store = s), { maxAttempts: 3 });

const LEASE = 30_000;
const A = "image_resize";
const B = "image_colors";

/** Submits one job per priority (undefined: none given), each on its own; returns their ids. */
async function submitEach(priorities: Array<number | undefined>, type: typeof A | typeof B = A) {
  const ids: string[] = [];
  for (const priority of priorities) {
    const spec = makeSpec(type, priority === undefined ? {} : { priority });
    ids.push((await store.submit([spec])).jobIds[0]!);
  }
  return ids;
}

/** Claims until the queue is empty; the ids in the order they came out. */
async function drain(type: string = A): Promise<string[]> {
  const order: string[] = [];
  for (
    let id = await store.claim(type as typeof A, LEASE, "w");
    id;
    id = await store.claim(type as typeof A, LEASE, "w")
  ) {
    order.push(id);
  }
  return order;
}

describe("priorities", () => {
  test("higher priority is claimed first; 0, 10, -10, 50 come out as 50, 10, 0, -10", async () => {
    const [p0, p10, m10, p50] = await submitEach([0, 10, -10, 50]);
    assert.deepEqual(await drain(), [p50, p10, p0, m10]);
  });

  test("equal priorities keep submission order, with or without a priority given", async () => {
    const ids = await submitEach([undefined, 5, 0, undefined, 5, 0, -50, 50, -50, 50]);
    const [n1, f1, z1, n2, f2, z2, low1, top1, low2, top2] = ids;
    assert.deepEqual(await drain(), [top1, top2, f1, f2, n1, z1, n2, z2, low1, low2]);
  });

  test("the extremes of the range keep their order among many submissions", async () => {
    const spec = (priority: number) => makeSpec(A, { priority });
    const first = await store.submit(Array.from({ length: 50 }, () => spec(-50)));
    const second = await store.submit(Array.from({ length: 50 }, () => spec(50)));
    const third = await store.submit(Array.from({ length: 50 }, () => spec(-50)));
    assert.deepEqual(await drain(), [...second.jobIds, ...first.jobIds, ...third.jobIds]);
  });

  test("queue_position counts the jobs ahead by this order, once the whole submission is queued", async () => {
    await submitEach([0, 0]);
    const [ahead] = await submitEach([10]);
    assert.ok(ahead);
    const {
      queuePositions: [behind],
    } = await store.submit([makeSpec(A, { priority: -10 })]);
    assert.equal(behind, 4);
    const {
      queuePositions: [top],
    } = await store.submit([makeSpec(A, { priority: 50 })]);
    assert.equal(top, 1);
    // One submission: an entry is placed among all the others of the call, later ones included.
    const batch = await store.submit([
      makeSpec(A),
      makeSpec(A, { priority: 20 }),
      makeSpec(A, { priority: -20 }),
    ]);
    // 50, 20 (new), 10, 0, 0, 0 (new), -10, -20 (new)
    assert.deepEqual(batch.queuePositions, [6, 2, 8]);
    // Queues are apart: another type's queue starts at 1.
    assert.deepEqual((await store.submit([makeSpec(B, { priority: -5 })])).queuePositions, [1]);
  });

  test("a job given back returns to its place: behind higher priorities, ahead of later equals", async () => {
    const [early, high] = await submitEach([0, 10]);
    assert.equal(await store.claim(A, LEASE, "w"), high);
    assert.equal(await store.claim(A, LEASE, "w"), early);
    const [later] = await submitEach([0]);
    const [higher] = await submitEach([20]);
    assert.equal(await store.requeueJob(early!, "executor stopping", { handback: true }), "requeued");
    assert.equal(await store.requeueJob(high!, "executor stopping", { handback: true }), "requeued");
    assert.deepEqual(await drain(), [higher, high, early, later]);
  });

  test("a reaped job keeps its priority", async () => {
    const [low, high] = await submitEach([-1, 1]);
    assert.equal(await store.claim(A, 1, "gone"), high);
    await store.start(high!, 1);
    await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(
      (await store.reap()).map((r) => [r.id, r.outcome]),
      [[high, "requeued"]],
    );
    assert.deepEqual(await drain(), [high, low]);
  });

  test("the record shows a priority other than 0", async () => {
    const [given, zero, none] = await submitEach([-7, 0, undefined]);
    assert.equal((await store.getJob(given!))?.priority, -7);
    assert.equal((await store.getJob(zero!))?.priority, undefined);
    assert.equal((await store.getJob(none!))?.priority, undefined);
  });

  test("a pending job that fails leaves its queue", async () => {
    const [a, b] = await submitEach([3, 3]);
    assert.equal(await store.fail(a!, "cancelled by request", { cancelled: true }), true);
    assert.deepEqual(await store.redis.zrange(store.keys.pending(A), 0, -1), [b]);
  });
});

describe("a queue left as a list by an earlier version", () => {
  /** Turns the type's queue into the list an earlier version kept: the same jobs, first in, first out. */
  async function asList(type: string): Promise<string[]> {
    const key = store.keys.pending(type);
    const ids = await store.redis.zrange(key, 0, -1);
    await store.redis.del(key);
    await store.redis.rpush(key, ...ids);
    for (const id of ids) await store.redis.hdel(store.keys.job(id), "queue_seq");
    return ids;
  }

  test("is taken from in its order, and a new submission with a priority goes ahead of it", async () => {
    const old = await submitEach([undefined, undefined, undefined]);
    assert.deepEqual(await asList(A), old);
    assert.equal(await store.redis.type(store.keys.pending(A)), "list");
    const [urgent] = await submitEach([1]);
    assert.equal(await store.redis.type(store.keys.pending(A)), "zset");
    const [later] = await submitEach([undefined]);
    assert.deepEqual(await drain(), [urgent, ...old, later]);
  });

  test("a claim converts it too, and every job keeps its order", async () => {
    const old = await submitEach([undefined, undefined]);
    await asList(A);
    assert.equal(await store.claim(A, LEASE, "w"), old[0]);
    assert.ok((await rawJob(store, old[1]!)).queue_seq, "numbered in the queue's order");
    assert.deepEqual(await drain(), [old[1]]);
  });

  test("a pending job cancelled while its queue is a list leaves it", async () => {
    const [a, b] = await submitEach([undefined, undefined]);
    await asList(A);
    assert.equal(await store.cancel("job", a!, "cancelled by request"), "cancelled");
    assert.deepEqual(await store.redis.lrange(store.keys.pending(A), 0, -1), [b]);
    assert.deepEqual(await drain(), [b]);
  });

  test("a job given back while its queue is a list goes ahead of the jobs submitted after it", async () => {
    const [a, b] = await submitEach([undefined, undefined]);
    assert.equal(await store.claim(A, LEASE, "w"), a);
    await asList(A);
    await store.redis.hdel(store.keys.job(a!), "queue_seq");
    assert.equal(await store.requeueJob(a!, "executor stopping", { handback: true }), "requeued");
    assert.deepEqual(await drain(), [a, b]);
  });
});
