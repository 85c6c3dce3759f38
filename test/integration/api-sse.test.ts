// GET /api/v1/jobs/{id}/stream end to end: a real API on a real redis-server, the job driven through
// the store's transitions, read by a plain SSE client (test/support/sse.ts). What a client sees, in
// what order, that nothing is lost or told twice, that nothing is left behind when clients go away,
// heartbeats, authentication, and the end of streams at shutdown.
import { randomUUID } from "node:crypto";
import { rm } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { JobType } from "../../core/jobs/types.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { startTestRedis, type TestRedis } from "../support/redis.js";
import { openStream, type SseEvent, type SseStream } from "../support/sse.js";
import { claimJob, makeSpec, sleep } from "../support/store.js";

const KEY = "sse-test-key-0123456789abcdef";
const LEASE = 60_000;
const TYPE: JobType = "image_resize";
const RESULT = {
  output_url: "s3://media-test/out/a.webp",
  file_size: 1234,
  duration: 0.42,
  metadata: { width: 64, height: 48, format: "webp" },
};

/** Rejects when `promise` does not settle within ms. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls until check() is true; fails with `what` after ms. */
async function eventually(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`${what} (waited ${ms} ms)`);
    await sleep(20);
  }
}

const summary = (events: SseEvent[]) => events.map((e) => `${e.event}#${e.id ?? "-"}`).join(", ");
// Ids of the events that carry one. The opening snapshot of a processing job is a status frame and a
// progress frame for the same change: only the last of them carries the change's id.
const ids = (events: SseEvent[]) => events.filter((e) => e.id !== undefined).map((e) => Number(e.id));

describe("GET /api/v1/jobs/{id}/stream", () => {
  let redis: TestRedis;
  let stack: TestStack;
  const auth = { "x-api-key": KEY };
  const url = (id: string) => `${stack.baseUrl}/api/v1/jobs/${encodeURIComponent(id)}/stream`;
  const opened: SseStream[] = [];
  const open = async (id: string, headers: Record<string, string> = auth) => {
    const s = await openStream(url(id), headers);
    opened.push(s);
    return s;
  };
  const submit = async (type: JobType = TYPE) =>
    (await stack.services.store.submit([makeSpec(type)])).jobIds[0]!;
  const startJob = async (id: string, type: JobType = TYPE) => {
    await claimJob(stack.services.store, type, id, LEASE);
    assert.equal(await stack.services.store.start(id, LEASE), true, "the job started");
  };

  before(async () => {
    redis = await startTestRedis();
    stack = await startTestStack({
      apiKeys: [KEY],
      redis,
      config: { server: { sse_heartbeat: "200ms", write_timeout: "30s" } },
    });
  });
  after(async () => {
    for (const s of opened) s.close();
    await stack?.close();
    await redis?.stop();
  });

  test("an unknown job answers 404 with a JSON error, and leaves no subscription", async () => {
    const s = await open(randomUUID());
    assert.equal(s.status, 404);
    assert.match(String(s.headers["content-type"]), /^application\/json/);
    await within(s.closed, 5000, "the 404 response ends");
    const body = JSON.parse(s.body) as Record<string, unknown>;
    assert.deepEqual(Object.keys(body), ["error"]);
    assert.equal(typeof body.error, "string");
    await eventually(() => stack.services.events.activeChannels === 0, 5000, "no channel left subscribed");
  });

  test("with an API key configured the stream requires it (401 JSON without it or with a wrong one)", async () => {
    const id = await submit();
    const refused: Array<Record<string, string>> = [
      {},
      { "x-api-key": "wrong-key" },
      { authorization: "Bearer wrong-key" },
    ];
    for (const headers of refused) {
      const s = await open(id, headers);
      assert.equal(s.status, 401, `headers ${JSON.stringify(headers)}`);
      assert.match(String(s.headers["content-type"]), /^application\/json/);
      await within(s.closed, 5000, "the 401 response ends");
      assert.equal(typeof (JSON.parse(s.body) as { error: unknown }).error, "string");
      assert.equal(s.events.length, 0);
    }
    const accepted: Array<Record<string, string>> = [auth, { authorization: `Bearer ${KEY}` }];
    for (const headers of accepted) {
      const s = await open(id, headers);
      assert.equal(s.status, 200, `headers ${JSON.stringify(Object.keys(headers))}`);
      await s.waitFor((e) => e.event === "status");
      s.close();
    }
  });

  test("a pending job: status pending, then processing, progress, complete with the result; then the server closes", async () => {
    const id = await submit();
    const s = await open(id);
    assert.equal(s.status, 200);
    assert.match(String(s.headers["content-type"]), /^text\/event-stream/);
    const first = await s.waitFor(() => true);
    assert.equal(first.event, "status");
    const firstData = first.json as Record<string, unknown>;
    assert.equal(firstData.status, "pending");
    assert.equal(typeof firstData.message, "string");

    const store = stack.services.store;
    await startJob(id);
    assert.equal(await store.progress(id, 50, "halfway"), true);
    assert.equal(await store.complete(id, RESULT), true);

    await within(s.closed, 5000, "the server closes the stream after complete");
    assert.equal(s.error, undefined, "the stream ended cleanly, not by a reset");
    assert.deepEqual(
      s.events.map((e) => e.event),
      ["status", "status", "progress", "complete"],
      summary(s.events),
    );
    const [, processing, progress, complete] = s.events.map((e) => e.json as Record<string, unknown>);
    assert.equal(processing!.status, "processing");
    assert.equal(typeof processing!.message, "string");
    assert.deepEqual(progress, { percent: 50, message: "halfway" });
    assert.equal(complete!.status, "completed");
    assert.deepEqual(complete!.result, RESULT);
    assert.ok(
      ids(s.events).every((n) => Number.isInteger(n)),
      "every event carries a numeric id",
    );
    for (let i = 1; i < s.events.length; i++) {
      assert.ok(ids(s.events)[i]! > ids(s.events)[i - 1]!, `ids increase: ${summary(s.events)}`);
    }
  });

  test("a failed job: complete with status failed and the error, then closed", async () => {
    const id = await submit();
    const s = await open(id);
    await s.waitFor((e) => e.event === "status");
    await startJob(id);
    await s.waitFor((e) => e.event === "status" && (e.json as { status: string }).status === "processing");
    assert.equal(await stack.services.store.fail(id, "source image is truncated"), true);
    await within(s.closed, 5000, "the server closes the stream after complete");
    const last = s.events.at(-1)!;
    assert.equal(last.event, "complete", summary(s.events));
    const data = last.json as Record<string, unknown>;
    assert.equal(data.status, "failed");
    assert.equal(data.error, "source image is truncated");
  });

  test("connecting after the job finished: complete at once with the result (or the error), then closed", async () => {
    const store = stack.services.store;
    const done = await submit();
    await startJob(done);
    await store.complete(done, RESULT);
    const s = await open(done);
    assert.equal(s.status, 200);
    await within(s.closed, 5000, "the stream of a finished job ends");
    assert.deepEqual(
      s.events.map((e) => e.event),
      ["complete"],
      summary(s.events),
    );
    assert.deepEqual(s.events[0]!.json, { status: "completed", state: "completed", result: RESULT });

    const failed = await submit();
    await startJob(failed);
    await store.fail(failed, "ffmpeg exited with code 1");
    const f = await open(failed);
    await within(f.closed, 5000, "the stream of a failed job ends");
    assert.deepEqual(
      f.events.map((e) => e.event),
      ["complete"],
      summary(f.events),
    );
    const data = f.events[0]!.json as Record<string, unknown>;
    assert.equal(data.status, "failed");
    assert.equal(data.error, "ffmpeg exited with code 1");
  });

  test("an idle stream carries heartbeat comment lines (server.sse_heartbeat: 200ms)", async () => {
    const id = await submit();
    const s = await open(id);
    await s.waitFor((e) => e.event === "status");
    const comments = await s.waitForComments(3, 5000);
    assert.ok(comments.length >= 3);
    assert.equal(s.ended, false, "the idle stream stays open");
    assert.deepEqual(
      s.events.map((e) => e.event),
      ["status"],
      "heartbeats are comments, not events",
    );
    s.close();
  });

  test("a stream opened while the job is processing gives each event its own, increasing id", async () => {
    const id = await submit();
    await startJob(id);
    assert.equal(await stack.services.store.progress(id, 30, "a third"), true);
    const s = await open(id);
    await s.waitFor((e) => e.event === "progress");
    assert.equal(await stack.services.store.complete(id, RESULT), true);
    await within(s.closed, 5000, "the server closes the stream after complete");
    assert.equal((s.events[0]!.json as { status: string }).status, "processing", summary(s.events));
    const progress = s.events.find((e) => e.event === "progress")!.json as Record<string, unknown>;
    assert.equal(progress.percent, 30);
    assert.equal(s.events.at(-1)!.event, "complete");
    const seen = ids(s.events);
    for (let i = 1; i < seen.length; i++) {
      assert.ok(seen[i]! > seen[i - 1]!, `ids strictly increase along the stream: ${summary(s.events)}`);
    }
  });

  test("no lost events: 20 streams opened while the job starts and completes all end with complete", async () => {
    const store = stack.services.store;
    const id = await submit();
    // A few streams follow the job from the start; the others connect while it moves, spread over
    // the transitions (spacing only makes the interleavings varied; nothing depends on it).
    const early = await Promise.all(Array.from({ length: 4 }, () => open(id)));
    await Promise.all(early.map((s) => s.waitFor((e) => e.event === "status")));
    const opening = Promise.all(
      Array.from({ length: 16 }, async (_, i) => {
        await sleep(i * 4);
        return open(id);
      }),
    );
    const driving = (async () => {
      await claimJob(store, TYPE, id, LEASE);
      await sleep(10);
      await store.start(id, LEASE);
      await sleep(15);
      await store.progress(id, 50, "halfway");
      await sleep(15);
      await store.complete(id, RESULT);
    })();
    const [late] = await Promise.all([opening, driving]);
    const streams = [...early, ...late];
    await within(Promise.all(streams.map((s) => s.closed)), 10_000, "every stream ends");

    const order = ["status:pending", "status:processing", "progress", "complete"];
    for (const [n, s] of streams.entries()) {
      const where = `stream ${n}: ${summary(s.events)}`;
      assert.equal(s.status, 200, where);
      assert.equal(s.error, undefined, where);
      const last = s.events.at(-1);
      assert.equal(last?.event, "complete", where);
      assert.deepEqual(last.json, { status: "completed", state: "completed", result: RESULT }, where);
      assert.equal(s.events.filter((e) => e.event === "complete").length, 1, where);
      // No event told twice: each (event, id) once, ids never go back, states never go back.
      const keys = s.events.map((e) => `${e.event}#${e.id}`);
      assert.equal(new Set(keys).size, keys.length, where);
      const seen = ids(s.events);
      assert.ok(
        seen.every((v, i) => Number.isInteger(v) && (i === 0 || v >= seen[i - 1]!)),
        where,
      );
      const ranks = s.events.map((e) =>
        order.indexOf(e.event === "status" ? `status:${(e.json as { status: string }).status}` : e.event),
      );
      assert.ok(
        ranks.every((r, i) => r >= 0 && (i === 0 || r >= ranks[i - 1]!)),
        `events follow the job's order: ${where}`,
      );
      const progress = s.events.filter(
        (e) => e.event === "progress" && (e.json as { percent: number }).percent === 50,
      );
      assert.ok(progress.length <= 1, where);
    }
  });

  test("no leak: clients that disconnect mid-stream leave no subscription and no open stream behind", async () => {
    const events = stack.services.events;
    await eventually(() => events.activeChannels === 0, 5000, "earlier streams are gone");
    const a = await submit();
    const b = await submit("image_colors");
    const streams = [
      ...(await Promise.all(Array.from({ length: 5 }, () => open(a)))),
      ...(await Promise.all(Array.from({ length: 3 }, () => open(b)))),
    ];
    await Promise.all(streams.map((s) => s.waitFor((e) => e.event === "status")));
    assert.equal(events.activeChannels, 2, "one channel per job, however many streams follow it");
    await startJob(a);
    await Promise.all(
      streams
        .slice(0, 5)
        .map((s) => s.waitFor((e) => (e.json as { status?: string }).status === "processing")),
    );

    for (const s of streams) s.close();
    await eventually(() => events.activeChannels === 0, 5000, "every channel is unsubscribed");
    const logged = (job: string, msg: string) =>
      stack.logs.filter((l) => l.job_id === job && l.msg === msg).length;
    await eventually(
      () => logged(a, "sse stream closed") === 5 && logged(b, "sse stream closed") === 3,
      5000,
      "the API ends its bookkeeping of every stream (one 'sse stream closed' per stream)",
    );
    assert.equal(logged(a, "sse stream opened"), 5);
    assert.equal(logged(b, "sse stream opened"), 3);

    // Transitions after the clients left reach nobody and break nothing; a new client still works.
    assert.equal(await stack.services.store.complete(a, RESULT), true);
    const again = await open(a);
    await within(again.closed, 5000, "a finished job's stream ends");
    assert.equal(again.events.at(-1)?.event, "complete");
    await eventually(() => events.activeChannels === 0, 5000, "no channel left after the last stream");
  });
});

describe("GET /api/v1/jobs/{id}/stream at shutdown", () => {
  let redis: TestRedis;
  let stack: TestStack;
  let apiClosed = false;

  before(async () => {
    redis = await startTestRedis();
    stack = await startTestStack({ redis });
  });
  after(async () => {
    if (!stack) return;
    if (apiClosed) {
      // The API is closed already (by the test); close the rest without closing it twice.
      await stack.services.close();
      await stack.s3.close();
      await rm(stack.config.dataDir, { recursive: true, force: true });
    } else {
      await stack.close();
    }
    await redis?.stop();
  });

  test("api.close() ends an open stream: the client sees an error event, then the connection closes", async () => {
    const id = (await stack.services.store.submit([makeSpec(TYPE)])).jobIds[0]!;
    const s = await openStream(`${stack.baseUrl}/api/v1/jobs/${id}/stream`);
    assert.equal(s.status, 200);
    await s.waitFor((e) => e.event === "status");
    const closing = stack.api.close();
    apiClosed = true;
    await within(s.closed, 5000, "the stream ends at shutdown");
    await within(closing, 10_000, "api.close() finishes");
    assert.deepEqual(
      s.events.map((e) => e.event),
      ["status", "error"],
      summary(s.events),
    );
    assert.equal(typeof (s.events[1]!.json as { error?: unknown }).error, "string");
    assert.equal(s.error, undefined, "the server ended the stream cleanly");
    await eventually(() => stack.services.events.activeChannels === 0, 5000, "no channel left subscribed");
  });
});
