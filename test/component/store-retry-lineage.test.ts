// A retry's lineage in the store (lua/submit.lua with a retry): the new job carries retry_of and the
// failed one retried_as, written in one script; a job retried before answers its retry and makes
// nothing, unless forced, so concurrent retries of one job make exactly one job.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { retrySpec } from "../../core/jobs/spec.js";
import { CANCELLED_BY_REQUEST } from "../../core/policy.js";
import { IllegalTransitionError, NotFoundError } from "../../core/store/errors.js";
import type { JobStore } from "../../core/store/store.js";
import { makeSpec, rawStats, sameStore, storeSuite, storeKeys } from "../support/store.js";

let store: JobStore;
const suite = storeSuite((s) => (store = s));

const T = "image_colors";

/** A job cancelled while pending: failed, ready to retry. */
async function failedJob(): Promise<string> {
  const id = (await store.submit([makeSpec(T)])).jobIds[0]!;
  assert.equal(await store.cancel("job", id, CANCELLED_BY_REQUEST), "cancelled");
  return id;
}

async function retryOf(id: string, force = false) {
  const job = await store.getJob(id);
  assert.ok(job);
  return store.retry(retrySpec(job, "req-1"), { force });
}

describe("retry lineage", () => {
  test("the retry carries retry_of, the failed job retried_as and a timeline entry", async () => {
    const id = await failedJob();
    const outcome = await retryOf(id);
    assert.ok("jobIds" in outcome);
    const newId = outcome.jobIds[0]!;
    assert.equal((await store.getJob(newId))?.retry_of, id);
    assert.equal((await store.getJob(newId))?.status, "pending");
    assert.equal((await store.getJob(id))?.retried_as, newId);
    const timeline = await store.jobTimeline(id);
    assert.deepEqual(
      timeline?.filter((e) => e.event === "retried").map((e) => e.message),
      [newId],
    );
  });

  test("a second retry answers the first and writes nothing; a forced one makes the newest", async () => {
    const id = await failedJob();
    const first = await retryOf(id);
    assert.ok("jobIds" in first);
    const keys = await storeKeys(store);
    const submitted = (await rawStats(store, T)).submitted_total;
    assert.deepEqual(await retryOf(id), { retriedAs: first.jobIds[0] });
    assert.deepEqual(await storeKeys(store), keys, "no key added");
    assert.equal((await rawStats(store, T)).submitted_total, submitted, "nothing submitted");

    const forced = await retryOf(id, true);
    assert.ok("jobIds" in forced);
    assert.notEqual(forced.jobIds[0], first.jobIds[0]);
    assert.equal((await store.getJob(id))?.retried_as, forced.jobIds[0], "retried_as names the newest");
    assert.deepEqual(await retryOf(id), { retriedAs: forced.jobIds[0] });
  });

  test("20 concurrent retries of one job, on 20 connections, make one job", async () => {
    const id = await failedJob();
    const job = (await store.getJob(id))!;
    const stores = Array.from({ length: 20 }, () => sameStore(suite.url, store));
    const outcomes = await Promise.all(stores.map((s) => s.retry(retrySpec(job, "req"))));
    const made = outcomes.flatMap((o) => ("jobIds" in o ? o.jobIds : []));
    assert.equal(made.length, 1, "one retry made");
    for (const o of outcomes) {
      if ("retriedAs" in o) assert.equal(o.retriedAs, made[0], "the others name it");
    }
    assert.equal((await store.getJob(id))?.retried_as, made[0]);
    assert.equal((await store.listJobs({ limit: 100 })).total, 2, "the failed job and its one retry");
  });

  test("a job that has not failed, or does not exist, is refused by the script", async () => {
    const pending = (await store.submit([makeSpec(T)])).jobIds[0]!;
    const job = (await store.getJob(pending))!;
    await assert.rejects(store.retry(retrySpec(job, "r")), IllegalTransitionError);
    await assert.rejects(
      store.retry(retrySpec({ ...job, id: "no-such-job" }, "r")),
      (err: unknown) => err instanceof NotFoundError && /no-such-job does not exist/.test(err.message),
    );
    assert.equal((await store.getJob(pending))?.retried_as, undefined);
    assert.equal((await store.listJobs({ limit: 100 })).total, 1, "nothing made");
  });
});
