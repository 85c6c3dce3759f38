// What the store does for webhooks: terminal events say whether the job has a webhook, and
// lua/webhook.lua records an attempt on the record and in the counters, acknowledging the event in
// the notifier's group only on a final result.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { JobStore } from "../../core/store/store.js";
import { claimAndStart, ISO_MS_UTC, makeSpec, storeSuite, streamEvents } from "../support/store.js";

let store: JobStore;
const GROUP = "notifier";
storeSuite(async (s) => {
  store = s;
  await store.redis.xgroup("CREATE", store.keys.events(), GROUP, "0", "MKSTREAM");
});

async function pendingIds(): Promise<string[]> {
  const rows = (await store.redis.xpending(store.keys.events(), GROUP, "-", "+", 100)) as Array<[string]>;
  return rows.map((r) => r[0]);
}

async function readAll(): Promise<void> {
  await store.redis.xreadgroup("GROUP", GROUP, "c1", "COUNT", 1000, "STREAMS", store.keys.events(), ">");
}

test("terminal events carry webhook=1 only for jobs with a webhook_url", async () => {
  const [withHook] = (
    await store.submit([makeSpec("image_colors", { webhook_url: "https://example.com/h" })])
  ).jobIds;
  const [without] = (await store.submit([makeSpec("image_colors")])).jobIds;
  const a = await claimAndStart(store, "image_colors");
  const b = await claimAndStart(store, "image_colors");
  assert.deepEqual([a, b], [withHook, without]);
  await store.complete(a, { colors: [], percentages: [] });
  await store.fail(b, "broken");
  const ends = (await streamEvents(store)).filter(
    (e) => e.event === "job.completed" || e.event === "job.failed",
  );
  assert.equal(ends.find((e) => e.fields.job_id === a)?.fields.webhook, "1");
  assert.equal(ends.find((e) => e.fields.job_id === b)?.fields.webhook, undefined);
});

test("a retry is recorded without acknowledging; a final result acknowledges and ends the delivery", async () => {
  const [id] = (await store.submit([makeSpec("image_colors", { webhook_url: "https://example.com/h" })]))
    .jobIds;
  await claimAndStart(store, "image_colors");
  await store.complete(id!, { colors: [], percentages: [] });
  await readAll();
  const entry = (await streamEvents(store, "job.completed"))[0]!.id;
  const next = Date.now() + 60_000;
  const common = { kind: "job" as const, id: id!, webhookId: `msg_${entry}`, group: GROUP, entryId: entry };

  assert.equal(
    await store.recordWebhookAttempt({
      ...common,
      result: "retry",
      summary: "HTTP 503",
      statusCode: 503,
      nextAttemptAt: next,
    }),
    1,
  );
  assert.ok((await pendingIds()).includes(entry));
  let job = await store.getJob(id!);
  assert.deepEqual(job?.webhook_delivery, {
    id: `msg_${entry}`,
    status: "pending",
    attempts: 1,
    last_attempt_at: job?.webhook_delivery?.last_attempt_at,
    last_result: "HTTP 503",
    last_status_code: 503,
    next_attempt_at: new Date(next).toISOString(),
  });
  assert.match(job.webhook_delivery.last_attempt_at, ISO_MS_UTC);

  assert.equal(
    await store.recordWebhookAttempt({
      ...common,
      result: "retry",
      summary: "connect ECONNREFUSED",
      nextAttemptAt: next,
    }),
    2,
  );
  job = await store.getJob(id!);
  assert.equal(job?.webhook_delivery?.last_status_code, undefined, "no status code from a network error");

  assert.equal(
    await store.recordWebhookAttempt({
      ...common,
      result: "delivered",
      summary: "HTTP 204",
      statusCode: 204,
    }),
    3,
  );
  assert.ok(!(await pendingIds()).includes(entry), "acknowledged");
  job = await store.getJob(id!);
  assert.equal(job?.webhook_delivery?.status, "delivered");
  assert.equal(job?.webhook_delivery?.next_attempt_at, undefined);
  assert.match(job?.webhook_delivery?.delivered_at ?? "", ISO_MS_UTC);
  assert.deepEqual(await store.webhookDeliveries(), { delivered: 1, retry: 2, failed: 0, refused: 0 });
});

test("batch records get the delivery too; an expired record still counts and acknowledges", async () => {
  const { batchId } = await store.submit([makeSpec("image_colors")], {
    failFast: false,
    webhookUrl: "https://example.com/b",
  });
  const jobId = await claimAndStart(store, "image_colors");
  await store.fail(jobId, "broken");
  await readAll();
  const entry = (await streamEvents(store, "batch.completed"))[0]!;
  assert.equal(entry.fields.webhook_url, "https://example.com/b");
  const common = { webhookId: `msg_${entry.id}`, group: GROUP, entryId: entry.id };
  assert.equal(
    await store.recordWebhookAttempt({
      ...common,
      kind: "batch",
      id: batchId!,
      result: "failed",
      summary: "HTTP 404",
      statusCode: 404,
    }),
    1,
  );
  assert.equal((await store.getBatch(batchId!))?.webhook_delivery?.status, "failed");

  assert.equal(
    await store.recordWebhookAttempt({
      ...common,
      kind: "job",
      id: "gone",
      result: "refused",
      summary: "refused",
    }),
    0,
  );
  assert.equal(
    await store.redis.exists(store.keys.job("gone")),
    0,
    "no record is created for an expired one",
  );
  assert.deepEqual(await store.webhookDeliveries(), { delivered: 0, retry: 0, failed: 1, refused: 1 });
});

test("a bad result or next attempt is refused before anything is written", async () => {
  const base = { kind: "job" as const, id: "x", webhookId: "m", summary: "s", group: GROUP, entryId: "0-1" };
  await assert.rejects(
    store.recordWebhookAttempt({ ...base, result: "maybe" as never }),
    /invalid webhook result/,
  );
  await assert.rejects(
    store.recordWebhookAttempt({ ...base, result: "retry", nextAttemptAt: Number.NaN }),
    /invalid next attempt/,
  );
  assert.deepEqual(await store.webhookDeliveries(), { delivered: 0, retry: 0, failed: 0, refused: 0 });
});

test("a job cancelled by its batch's fail_fast says it has a webhook too", async () => {
  const hook = { webhook_url: "https://example.com/h" };
  await store.submit([makeSpec("image_colors", hook), makeSpec("image_colors", hook)], { failFast: true });
  const first = await claimAndStart(store, "image_colors");
  await store.fail(first, "broken");
  const cancelled = await streamEvents(store, "job.cancelled");
  assert.equal(cancelled.length, 1);
  assert.equal(cancelled[0]!.fields.webhook, "1");
});
