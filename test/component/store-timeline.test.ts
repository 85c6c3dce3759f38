// A job's timeline in the store: one entry per step of its life, written by the transition scripts
// themselves, progress reports folded into one entry per run, webhook attempts, deleted with the job.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { JobStore } from "../../core/store/store.js";
import { claimAndStart, makeSpec, storeSuite } from "../support/store.js";

let store: JobStore;
storeSuite((s) => (store = s), { maxAttempts: 3, retentionMs: 1 });

const A = "image_resize";
const names = async (id: string) => (await store.jobTimeline(id))!.map((e) => e.event);

describe("a job's timeline", () => {
  test("a run given back and run again: each step once, each run's latest progress", async () => {
    const {
      jobIds: [id],
    } = await store.submit([makeSpec(A, { priority: -2 })]);
    await claimAndStart(store, A);
    await store.progress(id!, 10, "downloading");
    await store.progress(id!, 40, "resizing");
    assert.equal(await store.requeueJob(id!, "runner lost"), "requeued");
    await claimAndStart(store, A);
    await store.progress(id!, 90, "uploading");
    assert.equal(await store.complete(id!, { output_url: "s3://b/k" }), true);
    const events = (await store.jobTimeline(id!))!;
    assert.deepEqual(
      events.map((e) => e.event),
      [
        "submitted",
        "claimed",
        "started",
        "progress",
        "requeued",
        "claimed",
        "started",
        "progress",
        "completed",
      ],
    );
    assert.equal(events[0]!.priority, -2);
    assert.equal(events[1]!.message, "test-owner");
    assert.deepEqual([events[2]!.attempt, events[6]!.attempt], [1, 2]);
    assert.deepEqual([events[3]!.percent, events[3]!.message], [40, "resizing"]);
    assert.equal(events[4]!.message, "runner lost");
    assert.deepEqual([events[7]!.percent, events[7]!.message], [90, "uploading"]);
  });

  test("a pending job cancelled: submitted, cancelled with its error", async () => {
    const {
      jobIds: [id],
    } = await store.submit([makeSpec(A)]);
    assert.equal(await store.cancel("job", id!, "cancelled by request"), "cancelled");
    const events = (await store.jobTimeline(id!))!;
    assert.deepEqual(
      events.map((e) => [e.event, e.message]),
      [
        ["submitted", undefined],
        ["cancelled", "cancelled by request"],
      ],
    );
  });

  test("a failure and its webhook attempts", async () => {
    const {
      jobIds: [id],
    } = await store.submit([makeSpec(A, { webhook_url: "https://example.com/hook" })]);
    await claimAndStart(store, A);
    await store.fail(id!, "source s3://b/k not found");
    const attempt = { kind: "job" as const, id: id!, webhookId: "wh-1", group: "g", entryId: "0-1" };
    await store.recordWebhookAttempt({
      ...attempt,
      result: "retry",
      summary: "HTTP 503",
      statusCode: 503,
      nextAttemptAt: Date.now() + 1000,
    });
    await store.recordWebhookAttempt({
      ...attempt,
      result: "delivered",
      summary: "HTTP 200",
      statusCode: 200,
    });
    const events = (await store.jobTimeline(id!))!;
    assert.deepEqual(await names(id!), ["submitted", "claimed", "started", "failed", "webhook", "webhook"]);
    assert.equal(events[3]!.message, "source s3://b/k not found");
    assert.deepEqual(
      events.slice(4).map((e) => [e.attempt, e.result, e.status_code, e.message]),
      [
        [1, "retry", 503, "HTTP 503"],
        [2, "delivered", 200, "HTTP 200"],
      ],
    );
  });

  test("a wait outside the service (Kueue's admission): noted once per wait, only on an open job", async () => {
    const {
      jobIds: [id],
    } = await store.submit([makeSpec(A)], undefined, { name: "alice", admin: false });
    assert.equal(await store.jobClient(id!), "alice");
    const waits = "its Kubernetes Job is suspended, waiting for Kueue to admit it (LocalQueue media)";
    assert.equal(await store.claim(A, 30_000, "test-owner"), id);
    assert.equal(await store.noteWaiting(id!, waits), true);
    assert.equal(await store.noteWaiting(id!, waits), false, "the same wait seen again");
    assert.equal(await store.start(id!, 30_000), true);
    // Taken back (preempted) after it started: a second wait.
    assert.equal(await store.noteWaiting(id!, waits), true);
    assert.deepEqual(await names(id!), ["submitted", "claimed", "waiting", "started", "waiting"]);
    const entry = (await store.jobTimeline(id!))![2]!;
    assert.equal(entry.message, waits);
    assert.equal(await store.complete(id!, { output_url: "s3://b/k" }), true);
    assert.equal(await store.noteWaiting(id!, waits), false, "an ended job waits for nothing");
    assert.equal(await store.noteWaiting("no-such-job", waits), false);
    assert.equal(await store.jobClient("no-such-job"), undefined);
  });

  test("only a viewer who may see the job reads it; it goes with the job", async () => {
    const {
      jobIds: [id],
    } = await store.submit([makeSpec(A)], undefined, { name: "alice", admin: false });
    assert.equal(await store.jobTimeline(id!, { client: "bob" }), undefined);
    assert.ok(await store.jobTimeline(id!, { client: "alice" }));
    assert.equal(await store.jobTimeline("no-such-job"), undefined);
    await store.fail(id!, "cancelled by request", { cancelled: true });
    await new Promise((r) => setTimeout(r, 5));
    await store.prune();
    assert.equal(await store.redis.exists(`${store.keys.job(id!)}:events`), 0);
  });
});
