// The warm runner pool's queue in the store: pool.lua takes a job its dispatcher claimed off its
// type's leases onto the pool's queue (up to a limit), pool_claim.lua gives it to a worker under a
// lease in the order it came, jobs cancelled while they wait are dropped, and from the worker's claim
// on the job is claimed, renewed, started, reaped and given back like any other; reap with an owner
// prefix leaves other executors' leases alone.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { JobStore } from "../../core/store/store.js";
import { claimJob, makeSpec, rawJob, sleep, storeSuite } from "../support/store.js";

let store: JobStore;
storeSuite((s) => (store = s));

const LEASE = 30_000;
const DISPATCHER = "kubernetes:media/test";
const WORKER = "pool:worker-1";

async function submit(n: number, type: "image_resize" | "image_colors" = "image_resize"): Promise<string[]> {
  return (await store.submit(Array.from({ length: n }, () => makeSpec(type)))).jobIds;
}

/** Claims the next job of `type` as the dispatcher and hands it to the pool. */
async function dispatch(type: "image_resize" | "image_colors", limit = 100): Promise<[string, number]> {
  const id = await store.claim(type, LEASE, DISPATCHER);
  assert.ok(id, `a ${type} job to claim`);
  return [id, await store.toPool(id, DISPATCHER, "test: pool", limit)];
}

describe("the pool's queue", () => {
  test("a handed job leaves its type's leases, waits pending, and a worker takes it under a lease", async () => {
    const [id] = await submit(1);
    const [, length] = await dispatch("image_resize");
    assert.equal(length, 1);
    assert.equal(await store.redis.zscore(store.keys.active("image_resize"), id!), null, "no lease");
    const waiting = await rawJob(store, id!);
    assert.equal(waiting.status, "pending");
    assert.equal(waiting.claimed_by, undefined);
    assert.equal(await store.poolLength(), 1);

    assert.deepEqual(await store.claimPooled(LEASE, WORKER, 100), { id, type: "image_resize" });
    assert.equal(await store.poolLength(), 0);
    assert.ok(Number(await store.redis.zscore(store.keys.active("image_resize"), id!)) > Date.now());
    assert.equal((await rawJob(store, id!)).claimed_by, WORKER);
    assert.equal(await store.start(id!, LEASE), true);
    assert.equal(await store.renewLease(id!, LEASE), true);
    assert.equal(await store.complete(id!, { ok: true }), true);
    const events = ((await store.jobTimeline(id!)) ?? []).map((e) => e.event);
    assert.deepEqual(events.slice(0, 5), ["submitted", "claimed", "pooled", "claimed", "started"]);
  });

  test("workers take jobs in the order they were handed over, across types", async () => {
    const resize = await submit(2);
    const colors = await submit(1, "image_colors");
    await dispatch("image_resize");
    await dispatch("image_colors");
    await dispatch("image_resize");
    const taken = [];
    for (let i = 0; i < 3; i++) taken.push((await store.claimPooled(LEASE, WORKER, 100))?.id);
    assert.deepEqual(taken, [resize[0], colors[0], resize[1]]);
    assert.equal(await store.claimPooled(LEASE, WORKER, 100), null, "empty");
  });

  test("a full queue leaves the job claimed by its dispatcher, to give back in its place", async () => {
    const ids = await submit(3);
    assert.equal((await dispatch("image_resize", 2))[1], 1);
    assert.equal((await dispatch("image_resize", 2))[1], 2);
    const [third, length] = await dispatch("image_resize", 2);
    assert.equal(third, ids[2]);
    assert.equal(length, 0, "full");
    assert.equal((await rawJob(store, third)).claimed_by, DISPATCHER, "still the dispatcher's claim");
    assert.equal(
      await store.requeueJob(third, "waiting for room in the pool", { handback: true }),
      "requeued",
    );
    assert.equal(
      await store.claim("image_resize", LEASE, DISPATCHER),
      third,
      "back at the head of its queue",
    );
  });

  test("workers hear of work on the pool's channel; dispatchers of room only when the queue was full", async () => {
    const heard: Array<[string, string]> = [];
    const sub = store.redis.duplicate();
    sub.on("message", (channel: string, message: string) => heard.push([channel, message]));
    await sub.subscribe(store.keys.poolChannel(), store.keys.queuesChannel());
    try {
      await submit(3);
      await dispatch("image_resize", 2);
      await dispatch("image_resize", 2);
      await store.claimPooled(LEASE, WORKER, 2);
      await store.claimPooled(LEASE, WORKER, 2);
      await sleep(100);
      const on = (channel: string) => heard.filter(([c]) => c === channel).map(([, m]) => m);
      assert.deepEqual(on(store.keys.poolChannel()), ["work", "work"], "one message per job handed over");
      assert.deepEqual(
        on(store.keys.queuesChannel()).filter((m) => m === "pool_room"),
        ["pool_room"],
        "only the claim from the full queue tells the dispatchers",
      );
    } finally {
      await sub.quit();
    }
  });

  test("only the dispatcher's own pending claim is handed over", async () => {
    const [id] = await submit(1);
    assert.equal(await store.toPool(id!, DISPATCHER, "not claimed", 10), -1, "unclaimed");
    await claimJob(store, "image_resize", id!);
    assert.equal(await store.toPool(id!, DISPATCHER, "another's", 10), -1, "claimed by another (test-owner)");
    assert.equal(await store.poolLength(), 0);
    await assert.rejects(store.toPool(id!, "test-owner", "bad limit", 0), /invalid pool queue limit/);
  });

  test("a job cancelled while it waits is dropped by the next worker's claim", async () => {
    const [first, second] = await submit(2);
    await dispatch("image_resize");
    await dispatch("image_resize");
    assert.equal(await store.cancel("job", first!, "cancelled by request"), "cancelled");
    assert.deepEqual(await store.claimPooled(LEASE, WORKER, 100), { id: second, type: "image_resize" });
    assert.equal(await store.poolLength(), 0);
  });

  test("a worker's expired lease is reaped by the pool's prefix; another executor's is not", async () => {
    const [pooled, own] = await submit(2);
    await dispatch("image_resize");
    assert.equal((await store.claimPooled(50, WORKER, 100))?.id, pooled);
    await store.start(pooled!, 50);
    assert.equal(await store.claim("image_resize", 50, DISPATCHER), own);
    await sleep(120);
    assert.deepEqual(await store.reap("pool:"), [{ id: pooled, outcome: "requeued" }]);
    assert.equal((await rawJob(store, pooled!)).status, "pending");
    assert.ok(
      await store.redis.zscore(store.keys.active("image_resize"), own!),
      "the dispatcher's claim stays",
    );
    assert.deepEqual(await store.reap(), [{ id: own, outcome: "requeued" }], "no prefix: every owner");
  });

  test("pool progress counts what waits and what workers took; a key of the wrong type is an error, not NaN", async () => {
    await submit(2);
    await dispatch("image_resize");
    await dispatch("image_resize");
    await store.claimPooled(LEASE, WORKER, 100);
    assert.deepEqual(await store.poolProgress(), { waiting: 1, taken: 1 });
    await store.redis.del(store.keys.pool());
    await store.redis.set(store.keys.pool(), "not a list");
    await assert.rejects(store.poolProgress(), /WRONGTYPE/);
  });
});
