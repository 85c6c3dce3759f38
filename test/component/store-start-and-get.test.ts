// startAndGet: start.lua's transition and the job's record in one round trip (the runner's first
// call), with start's refusals handed back beside the record instead of thrown.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { IllegalTransitionError, NotFoundError } from "../../core/store/errors.js";
import type { JobStore } from "../../core/store/store.js";
import { makeSpec, storeSuite, streamEvents } from "../support/store.js";

let store: JobStore;
storeSuite((s) => (store = s));

const LEASE = 30_000;
const TYPE = "image_resize";

async function claimed(): Promise<string> {
  const { jobIds } = await store.submit([makeSpec(TYPE)]);
  const id = await store.claim(TYPE, LEASE, "test-owner");
  assert.equal(id, jobIds[0]);
  return id;
}

describe("startAndGet", () => {
  test("starts a claimed job and returns its record as processing, with the started event", async () => {
    const id = await claimed();
    const { started, job, refused } = await store.startAndGet(id, LEASE);
    assert.equal(started, true);
    assert.equal(refused, undefined);
    assert.equal(job?.id, id);
    assert.equal(job?.status, "processing");
    assert.equal(job?.attempts, 1);
    assert.ok(job?.started_at, "started_at is set");
    const events = (await streamEvents(store, "job.started")).filter((e) => e.fields.job_id === id);
    assert.equal(events.length, 1);
    const timeline = (await store.jobTimeline(id))!.map((e) => e.event);
    assert.deepEqual(
      timeline.filter((e) => e === "started"),
      ["started"],
    );
  });

  test("a job already processing is a duplicate: not started again, no second attempt", async () => {
    const id = await claimed();
    assert.equal(await store.start(id, LEASE), true);
    const { started, job, refused } = await store.startAndGet(id, LEASE);
    assert.equal(started, false);
    assert.equal(refused, undefined);
    assert.equal(job?.status, "processing");
    assert.equal(job?.attempts, 1);
  });

  test("a job that ended is refused and comes back with its status, unchanged", async () => {
    const id = await claimed();
    await store.start(id, LEASE);
    await store.complete(id, { ok: true });
    const { started, job, refused } = await store.startAndGet(id, LEASE);
    assert.equal(started, false);
    assert.ok(refused instanceof IllegalTransitionError, String(refused));
    assert.equal(job?.status, "completed");
    assert.equal(job?.attempts, 1);
  });

  test("a pending job nobody claimed is refused and stays pending", async () => {
    const { jobIds } = await store.submit([makeSpec(TYPE)]);
    const { started, job, refused } = await store.startAndGet(jobIds[0]!, LEASE);
    assert.equal(started, false);
    assert.ok(refused instanceof IllegalTransitionError);
    assert.match(refused.message, /not claimed/);
    assert.equal(job?.status, "pending");
  });

  test("a job that does not exist: refused with NotFoundError, no record", async () => {
    const { started, job, refused } = await store.startAndGet("00000000-0000-4000-8000-000000000000", LEASE);
    assert.equal(started, false);
    assert.equal(job, undefined);
    assert.ok(refused instanceof NotFoundError);
  });
});
