// The runner's estimate of a job's seconds left, in the store: progress.lua writes it with the
// percent (a report without one removes the last), publishes it on the job's channel, refuses a
// bad one without writing anything; a finished job shows none, and a run started again starts
// without one.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { JobStore } from "../../core/store/store.js";
import { claimAndStart, collectChannel, makeSpec, rawJob, storeSuite } from "../support/store.js";

let store: JobStore;
storeSuite((s) => (store = s));

const LEASE = 30_000;
const TYPE = "audio_convert";

async function running(): Promise<string> {
  await store.submit([makeSpec(TYPE)]);
  return claimAndStart(store, TYPE, LEASE);
}

describe("progress with an estimate of the time left", () => {
  test("recorded with the percent, published with it, removed by a report without one", async () => {
    const id = await running();
    const channel = await collectChannel(store.redis, store.keys.jobChannel(id));
    assert.equal(await store.progress(id, 20, "converting", 41.6), true);
    let job = await store.getJob(id);
    assert.equal(job?.progress, 20);
    assert.equal(job?.eta_seconds, 42, "whole seconds");
    assert.equal(await store.progress(id, 30, "converting"), true);
    job = await store.getJob(id);
    assert.equal(job?.progress, 30);
    assert.equal(job?.eta_seconds, undefined, "no estimate: the last one goes");
    assert.equal(await store.progress(id, 40, "converting", 0), true);
    assert.equal((await store.getJob(id))?.eta_seconds, 0);
    assert.deepEqual(
      (await channel.waitFor(3)).map((m) => m.data),
      [
        { percent: 20, message: "converting", eta_seconds: 42 },
        { percent: 30, message: "converting" },
        { percent: 40, message: "converting", eta_seconds: 0 },
      ],
    );
    await channel.close();
  });

  test("a bad estimate: the store drops it; the script refuses it and writes nothing", async () => {
    const id = await running();
    await store.progress(id, 10, "", 5);
    assert.equal(await store.progress(id, 20, "", -1), true);
    assert.equal((await store.getJob(id))?.eta_seconds, undefined, "dropped, so the last one goes");
    await store.progress(id, 30, "", 5);
    const before = await rawJob(store, id);
    const script = (
      store as unknown as { script(name: string, ...args: unknown[]): Promise<unknown> }
    ).script.bind(store);
    for (const eta of ["-1", "soon", "inf"]) {
      await assert.rejects(script("progress", id, 60, "", eta), /invalid eta/);
      assert.deepEqual(await rawJob(store, id), before, `nothing written for ${eta}`);
    }
  });

  test("a finished job shows none; a run started again starts without one", async () => {
    const done = await running();
    await store.progress(done, 50, "", 12);
    await store.complete(done, {});
    const completed = await store.getJob(done);
    assert.equal(completed?.eta_seconds, undefined);
    assert.equal(completed?.progress, undefined);

    const again = await running();
    await store.progress(again, 50, "", 12);
    assert.equal(await store.requeueJob(again, "executor stopped", { handback: true }), "requeued");
    assert.equal((await rawJob(store, again)).eta_seconds, undefined, "requeued without it");
    assert.equal(await claimAndStart(store, TYPE, LEASE), again);
    const restarted = await store.getJob(again);
    assert.equal(restarted?.progress, 0);
    assert.equal(restarted?.eta_seconds, undefined);
  });
});
