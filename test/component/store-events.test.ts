// The store's events as TS reads them (events.ts): every entry the scripts write decodes to its
// typed event with every field it carries, unknown events and fields are passed over, and the
// messages of a job's channel decode too.
import { readFileSync } from "node:fs";
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  decodeJobChannelMessage,
  decodeStoreEvent,
  decodeStreamReply,
  fieldsOf,
  JOB_CHANNEL_EVENTS,
  STORE_EVENT_NAMES,
  type StoreEvent,
} from "../../core/store/events.js";
import type { JobStore } from "../../core/store/store.js";
import { SCRIPT_NAMES } from "../../core/store/scripts.js";
import { claimAndStart, collectChannel, makeSpec, storeSuite } from "../support/store.js";

let store: JobStore;
storeSuite((s) => (store = s));

const A = "image_resize";

/** Every entry of the stream, raw and decoded. */
async function entries(): Promise<Array<{ raw: Record<string, string>; event: StoreEvent | undefined }>> {
  const all = await store.redis.xrange(store.keys.events(), "-", "+");
  return all.map(([id, flat]) => ({ raw: fieldsOf(flat), event: decodeStoreEvent([id, flat]) }));
}

test("every event the scripts write decodes, with each of its fields", async () => {
  // A fail_fast batch with webhooks: created, started, requeued, completed, failed, cancelled, and
  // the batch's completion; one more job, alone, for a plain creation.
  const { jobIds, batchId } = await store.submit(
    [makeSpec(A, { webhook_url: "https://example.com/h", request_id: "req-1" }), makeSpec(A), makeSpec(A)],
    { failFast: true, webhookUrl: "https://example.com/b" },
  );
  const [done, broken, cancelled] = jobIds as [string, string, string];
  assert.equal(await claimAndStart(store, A), done);
  assert.equal(await store.requeueJob(done, "transient"), "requeued");
  assert.equal(await claimAndStart(store, A), done);
  await store.complete(done, { ok: true });
  assert.equal(await claimAndStart(store, A), broken);
  await store.fail(broken, "boom");

  const all = await entries();
  const names = new Set(all.map((e) => e.event?.event));
  for (const name of STORE_EVENT_NAMES) assert.ok(names.has(name), `${name} was written`);
  for (const { raw, event } of all) {
    assert.ok(event, `${raw.event} decodes`);
    assert.equal(event.at, raw.at);
    for (const field of Object.keys(raw)) {
      if (field === "event" || field === "at") continue;
      assert.ok(field in event, `${raw.event}'s ${field} is typed`);
    }
  }

  const of = (name: string, id: string) =>
    all.map((e) => e.event).find((e) => e?.event === name && "job_id" in e && e.job_id === id);
  assert.deepEqual(stripEntry(of("job.completed", done)), {
    event: "job.completed",
    job_id: done,
    type: A,
    batch_id: batchId,
    status: "completed",
    request_id: "req-1",
    webhook: true,
  });
  assert.deepEqual(stripEntry(of("job.requeued", done)), {
    event: "job.requeued",
    job_id: done,
    type: A,
    batch_id: batchId,
    status: "pending",
    reason: "transient",
  });
  assert.deepEqual(stripEntry(of("job.cancelled", cancelled)), {
    event: "job.cancelled",
    job_id: cancelled,
    type: A,
    batch_id: batchId,
    status: "failed",
    was: "pending",
    webhook: false,
  });
  const batch = all.map((e) => e.event).find((e) => e?.event === "batch.completed");
  assert.deepEqual(stripEntry(batch), {
    event: "batch.completed",
    batch_id: batchId,
    status: "partial",
    total_jobs: 3,
    completed: 1,
    failed: 2,
    webhook_url: "https://example.com/b",
  });
});

function stripEntry(event: StoreEvent | undefined) {
  assert.ok(event);
  const { entryId, at, ...rest } = event;
  assert.match(entryId, /^\d+-\d+$/);
  assert.ok(at);
  return rest;
}

test("unknown events, unknown fields, entries without fields or without an id are passed over", () => {
  assert.equal(decodeStoreEvent(["1-0", ["event", "job.teleported", "job_id", "j"]]), undefined);
  assert.equal(decodeStoreEvent(["1-0", null]), undefined);
  assert.equal(decodeStoreEvent(["1-0", ["event", "job.cancelled", "type", A]]), undefined, "no job_id");
  assert.equal(
    decodeStoreEvent(["1-0", ["event", "batch.completed", "batch_id", "b", "status", "odd"]]),
    undefined,
  );
  assert.deepEqual(
    decodeStoreEvent([
      "1-0",
      ["event", "job.cancelled", "job_id", "j", "type", A, "colour", "blue", "dangling"],
    ]),
    {
      event: "job.cancelled",
      entryId: "1-0",
      job_id: "j",
      type: A,
      status: "failed",
      was: "processing",
      webhook: false,
    },
  );
});

test("an XREAD reply decodes to its events and the last entry read, unknown ones included", () => {
  const reply: Parameters<typeof decodeStreamReply>[0] = [
    [
      "{media}:events",
      [
        ["1-0", ["event", "job.cancelled", "job_id", "j1", "type", A]],
        ["2-0", ["event", "something.new"]],
      ],
    ],
  ];
  const { events, lastId } = decodeStreamReply(reply);
  assert.equal(lastId, "2-0");
  assert.deepEqual(
    events.map((e) => (e.event === "job.cancelled" ? e.job_id : e.event)),
    ["j1"],
  );
  assert.deepEqual(decodeStreamReply(null), { events: [] });
});

test("the scripts write only the events and channel messages events.ts names", () => {
  const lua = ["lib", ...SCRIPT_NAMES]
    .map((name) => readFileSync(new URL(`../../core/store/lua/${name}.lua`, import.meta.url), "utf8"))
    .join("\n");
  const recorded = [...lua.matchAll(/record\(\s*'([^']+)'/g)].map((m) => m[1]!);
  for (const name of recorded) assert.ok((STORE_EVENT_NAMES as readonly string[]).includes(name), name);
  const published = [...lua.matchAll(/publish\(\s*\w+,\s*'([^']+)'/g)].map((m) => m[1]!);
  assert.ok(published.length >= 3);
  for (const name of published) assert.ok((JOB_CHANNEL_EVENTS as readonly string[]).includes(name), name);
});

test("a job's channel messages decode; anything else on the channel is passed over", async () => {
  const id = (await store.submit([makeSpec(A)])).jobIds[0]!;
  const channel = await collectChannel(store.redis, store.keys.jobChannel(id));
  await claimAndStart(store, A);
  await store.progress(id, 40, "halfway");
  await store.fail(id, "broken");
  const raw = await channel.waitFor(3);
  await channel.close();
  const decoded = raw.map((m) => decodeJobChannelMessage(JSON.stringify(m)));
  assert.deepEqual(decoded, [
    { seq: 1, event: "status", data: { status: "processing", message: "processing started" } },
    { seq: 2, event: "progress", data: { percent: 40, message: "halfway" } },
    { seq: 3, event: "complete", data: { status: "failed", error: "broken" } },
  ]);
  for (const text of [
    "not json",
    "null",
    '{"seq":1,"event":"teleport","data":{}}',
    '{"event":"status","data":{}}',
  ]) {
    assert.equal(decodeJobChannelMessage(text), undefined, text);
  }
});
