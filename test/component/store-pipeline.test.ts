// What the store keeps of a pipeline: each step's percent beside the overall one (progress.lua, and
// on the job's channel that SSE follows), gone once the job ends or goes back to its queue; and a
// failure that carries a result (fail.lua: a pipeline's completed steps with keep_partial).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { JobStore } from "../../core/store/store.js";
import { claimAndStart, collectChannel, makeSpec, rawJob, storeSuite } from "../support/store.js";

let store: JobStore;
storeSuite((s) => (store = s));

const LEASE = 30_000;

async function running(): Promise<string> {
  await store.submit([makeSpec("image_resize")]);
  return claimAndStart(store, "image_resize", LEASE);
}

describe("a pipeline's progress per step", () => {
  test("recorded and published with the percent; kept by a report without them; gone when the job ends", async () => {
    const id = await running();
    const channel = await collectChannel(store.redis, store.keys.jobChannel(id));
    assert.equal(await store.progress(id, 25, "step a", undefined, { a: 50, b: 0 }), true);
    assert.deepEqual((await store.getJob(id))?.steps_progress, { a: 50, b: 0 });
    assert.equal(await store.progress(id, 30, "step a"), true);
    assert.deepEqual((await store.getJob(id))?.steps_progress, { a: 50, b: 0 }, "kept");
    assert.deepEqual(
      (await channel.waitFor(2)).map((m) => m.data),
      [
        { percent: 25, message: "step a", steps: { a: 50, b: 0 } },
        { percent: 30, message: "step a" },
      ],
    );
    await channel.close();
    await store.complete(id, { steps: {} });
    assert.equal((await store.getJob(id))?.steps_progress, undefined, "only while processing");
  });

  test("steps that are not a JSON object are refused and nothing is written", async () => {
    const id = await running();
    await store.progress(id, 10, "", undefined, { a: 10 });
    const before = await rawJob(store, id);
    const script = (
      store as unknown as { script(name: string, ...args: unknown[]): Promise<unknown> }
    ).script.bind(store);
    for (const steps of ["{", "7"]) {
      await assert.rejects(script("progress", id, 60, "", "", steps), /invalid steps/);
      assert.deepEqual(await rawJob(store, id), before, `nothing written for ${steps}`);
    }
  });

  test("a run given back to its queue starts without the last run's steps", async () => {
    const id = await running();
    await store.progress(id, 10, "", undefined, { a: 10 });
    assert.equal(await store.requeueJob(id, "runner lost", { handback: true }), "requeued");
    assert.equal((await rawJob(store, id)).steps_progress, undefined);
  });
});

describe("a failure with a result", () => {
  test("recorded with the error; a failure without one records none", async () => {
    const id = await running();
    const result = { steps: { a: { output_url: "s3://b/a.jpg" }, b: { error: "broken" } } };
    assert.equal(await store.fail(id, "step b (image_resize): broken", { result }), true);
    const job = await store.getJob(id);
    assert.equal(job?.status, "failed");
    assert.equal(job?.error, "step b (image_resize): broken");
    assert.deepEqual(job?.result, result);
    const plain = await running();
    await store.fail(plain, "broken");
    assert.equal((await store.getJob(plain))?.result, undefined);
  });
});

describe("what an attempt did before a transient failure (partial.lua)", () => {
  const partial = { steps: { a: { output_url: "s3://b/a.jpg" }, b: { error: "store unavailable" } } };

  /** Requeues a processing job after a transient failure until its budget (3) is spent. */
  async function spendRetries(id: string): Promise<void> {
    for (let attempt = 1; attempt <= 3; attempt++) {
      const outcome = await store.requeueJob(id, "step b (image_resize): store unavailable");
      if (outcome === "failed") return;
      assert.equal(outcome, "requeued");
      await claimAndStart(store, "image_resize", LEASE);
      assert.equal(await store.partial(id, partial), true);
    }
    assert.fail("the budget was not spent");
  }

  test("the retries spent, it is the failed job's result, and the record keeps no copy", async () => {
    const id = await running();
    assert.equal(await store.partial(id, partial), true);
    await spendRetries(id);
    const job = await store.getJob(id);
    assert.equal(job?.status, "failed");
    assert.match(job?.error ?? "", /store unavailable \(gave up after 3 attempts\)$/);
    assert.deepEqual(job?.result, partial);
    assert.equal((await rawJob(store, id)).partial_result, undefined);
  });

  test("a failure with a result of its own keeps it; a completion and a cancellation drop the partial", async () => {
    const own = await running();
    await store.partial(own, partial);
    const result = { steps: { a: { output_url: "s3://b/a.jpg" }, b: { error: "not decodable" } } };
    await store.fail(own, "step b (image_resize): not decodable", { result });
    assert.deepEqual((await store.getJob(own))?.result, result);

    const done = await running();
    await store.partial(done, partial);
    await store.complete(done, { steps: { a: {}, b: {} } });
    assert.deepEqual((await store.getJob(done))?.result, { steps: { a: {}, b: {} } });
    assert.equal((await rawJob(store, done)).partial_result, undefined);

    const cancelled = await running();
    await store.partial(cancelled, partial);
    assert.equal(await store.cancel("job", cancelled, "cancelled by its client"), "cancelled");
    assert.equal((await store.getJob(cancelled))?.result, undefined);
    assert.equal((await rawJob(store, cancelled)).partial_result, undefined);
  });

  test("only while processing; a result that is not a JSON object is refused", async () => {
    const id = await running();
    await store.complete(id, { steps: {} });
    assert.equal(await store.partial(id, partial), false);
    const live = await running();
    const script = (
      store as unknown as { script(name: string, ...args: unknown[]): Promise<unknown> }
    ).script.bind(store);
    await assert.rejects(script("partial", live, "{"), /invalid result/);
    assert.equal((await rawJob(store, live)).partial_result, undefined);
  });
});
