// Idempotent submits over HTTP (the Idempotency-Key header on the single-job routes, the batch
// route and retry): the same key and request replays the first answer, byte for byte, marked
// Idempotent-Replayed, and creates nothing; another request under the key is 422; a key whose first
// request is in flight is 409; keys are per client and live limits.idempotency_ttl; a request
// refused before or after taking its key leaves nothing stored under it.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { startTestStack, type TestStack } from "../support/api.js";

let stack: TestStack;
/** A stack on the same redis-server whose keys live 1 s, without authentication. */
let brief: TestStack;
const ALICE = "alice-key-0123456789";
const BOB = "bob-key-0123456789";

before(async () => {
  stack = await startTestStack({
    config: {
      server: {
        clients: [
          { name: "alice", keys: [ALICE] },
          { name: "bob", keys: [BOB] },
        ],
      },
    },
  });
  brief = await startTestStack({ redis: stack.redis, config: { limits: { idempotency_ttl: "1s" } } });
});
after(async () => {
  await brief?.close();
  await stack?.close();
});

type Body = Record<string, unknown>;
const COLORS = "/api/v1/jobs/image/colors";
const BATCH = "/api/v1/jobs/batch";
const colorsBody = (key = "uploads/photo.jpg") => ({ source_bucket: "media-in", source_key: key });

interface Answer {
  status: number;
  text: string;
  body: Body;
  replayed: string | null;
}

async function post(
  path: string,
  options: { idem?: string; json?: unknown; key?: string; on?: TestStack; requestId?: string } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.idem !== undefined) headers["idempotency-key"] = options.idem;
  if (options.requestId) headers["x-request-id"] = options.requestId;
  const on = options.on ?? stack;
  const res = await on.request(path, {
    method: "POST",
    headers,
    ...(options.json !== undefined ? { json: options.json } : {}),
    key: on === stack ? (options.key ?? ALICE) : null,
  });
  const text = await res.text();
  return {
    status: res.status,
    text,
    body: (text ? JSON.parse(text) : {}) as Body,
    replayed: res.headers.get("idempotent-replayed"),
  };
}

const jobCount = (on: TestStack = stack) =>
  on.services.store.redis.zcard(on.services.store.keys.jobsByCreated());
const batchCount = () => stack.services.store.redis.zcard(stack.services.store.keys.batchesByCreated());
const stored = (client: string | undefined, key: string, on: TestStack = stack) =>
  on.services.store.redis.hgetall(on.services.store.keys.idempotency(client, key));

/** A failed job of alice's, to retry. */
async function failedJob(): Promise<string> {
  const res = await post(COLORS, { json: colorsBody() });
  assert.equal(res.status, 202, res.text);
  const id = res.body.job_id as string;
  assert.equal(
    (await stack.request(`/api/v1/jobs/${id}/cancel`, { method: "POST", key: ALICE })).status,
    200,
  );
  return id;
}

describe("the same key and request", () => {
  test("100 concurrent submits create one job: one first answer, the others replays or 409", async () => {
    const idem = randomUUID();
    const before = await jobCount();
    const answers = await Promise.all(
      Array.from({ length: 100 }, () => post(COLORS, { idem, json: colorsBody() })),
    );
    assert.equal(await jobCount(), before + 1, "exactly one job");
    const first = answers.filter((a) => a.status === 202 && a.replayed === null);
    const replays = answers.filter((a) => a.status === 202 && a.replayed === "true");
    const inFlight = answers.filter((a) => a.status === 409);
    assert.equal(first.length, 1, "one original answer");
    assert.equal(first.length + replays.length + inFlight.length, 100, "nothing but 202 and 409");
    for (const replay of replays) assert.equal(replay.text, first[0]!.text, "a replay is the first body");
    for (const refused of inFlight) assert.match(String(refused.body.error), /still in flight/);

    const later = await post(COLORS, { idem, json: colorsBody() });
    assert.equal(later.status, 202);
    assert.equal(later.replayed, "true");
    assert.equal(later.text, first[0]!.text);
    assert.equal(await jobCount(), before + 1);
  });

  test("a replay is the first answer, whatever the order of the body's fields or its request id", async () => {
    const idem = randomUUID();
    const first = await post(COLORS, { idem, json: { source_key: "a.jpg", source_bucket: "media-in" } });
    assert.equal(first.status, 202, first.text);
    assert.equal(first.replayed, null);
    const again = await post(COLORS, {
      idem,
      json: { source_bucket: "media-in", source_key: "a.jpg", color_count: 5 },
      requestId: "idem-replay-1",
    });
    assert.equal(again.status, 202);
    assert.equal(again.replayed, "true");
    assert.equal(again.text, first.text, "fields in another order, a default spelled out: the same request");
    const line = stack.logs.find((l) => l.request_id === "idem-replay-1" && l.event === "idempotent_replay");
    assert.ok(line, "one structured line for the replay, with the request id");
    assert.equal(line.job_id, first.body.job_id);
    assert.equal(JSON.stringify(line).includes("a.jpg"), false, "no body in the line");
  });

  test("a batch is replayed: 201, the same body, one batch", async () => {
    const idem = randomUUID();
    const json = {
      jobs: [
        { type: "image_colors", ...colorsBody() },
        { type: "image_colors", ...colorsBody("b") },
      ],
    };
    const [jobs, batches] = [await jobCount(), await batchCount()];
    const first = await post(BATCH, { idem, json });
    assert.equal(first.status, 201, first.text);
    assert.equal(first.replayed, null);
    const again = await post(BATCH, { idem, json });
    assert.equal(again.status, 201);
    assert.equal(again.replayed, "true");
    assert.equal(again.text, first.text);
    assert.equal(await batchCount(), batches + 1);
    assert.equal(await jobCount(), jobs + 2);
  });

  test("a batch with its own batch_id is replayed rather than refused as taken", async () => {
    const idem = randomUUID();
    const json = { batch_id: `idem-${randomUUID()}`, jobs: [{ type: "image_colors", ...colorsBody() }] };
    const first = await post(BATCH, { idem, json });
    assert.equal(first.status, 201, first.text);
    const again = await post(BATCH, { idem, json });
    assert.equal(again.status, 201, again.text);
    assert.equal(again.text, first.text);
    assert.equal((await post(BATCH, { json })).status, 409, "without the key the id is taken");
  });

  test("a retry is replayed: one new job", async () => {
    const id = await failedJob();
    const idem = randomUUID();
    const before = await jobCount();
    const first = await post(`/api/v1/jobs/${id}/retry`, { idem });
    assert.equal(first.status, 202, first.text);
    assert.equal(first.body.message, `image_colors job queued (retry of ${id})`);
    const again = await post(`/api/v1/jobs/${id}/retry`, { idem });
    assert.equal(again.status, 202);
    assert.equal(again.replayed, "true");
    assert.equal(again.text, first.text);
    assert.equal(await jobCount(), before + 1);
  });

  test("replays are counted in media_idempotent_requests_total", async () => {
    const idem = randomUUID();
    await post(COLORS, { idem, json: colorsBody() });
    const before = (await stack.services.store.idempotencyOutcomes()).replayed;
    await post(COLORS, { idem, json: colorsBody() });
    const metrics = await (await fetch(`${stack.baseUrl}/metrics`)).text();
    const match = /^media_idempotent_requests_total\{outcome="replayed"\} (\d+)$/m.exec(metrics);
    assert.ok(match, "the counter is served");
    assert.ok(Number(match[1]) >= before + 1);
  });
});

describe("another request under the key", () => {
  test("another body is 422, and the key still replays its own request", async () => {
    const idem = randomUUID();
    const first = await post(COLORS, { idem, json: colorsBody("one.jpg") });
    assert.equal(first.status, 202, first.text);
    const before = await jobCount();
    const other = await post(COLORS, { idem, json: colorsBody("two.jpg"), requestId: "idem-mismatch-1" });
    assert.equal(other.status, 422);
    assert.match(String(other.body.error), /Idempotency-Key was used for a different request/);
    assert.equal(other.replayed, null);
    const line = stack.logs.find(
      (l) => l.request_id === "idem-mismatch-1" && l.event === "idempotency_conflict",
    );
    assert.equal(line?.reason, "mismatch");
    assert.equal((await post(COLORS, { idem, json: colorsBody("one.jpg") })).text, first.text);
    assert.equal(await jobCount(), before);
  });

  test("another route is 422: a batch, or the retry of another job", async () => {
    const idem = randomUUID();
    assert.equal((await post(COLORS, { idem, json: colorsBody() })).status, 202);
    const batch = await post(BATCH, { idem, json: { jobs: [{ type: "image_colors", ...colorsBody() }] } });
    assert.equal(batch.status, 422, batch.text);

    const [a, b] = [await failedJob(), await failedJob()];
    const retryKey = randomUUID();
    assert.equal((await post(`/api/v1/jobs/${a}/retry`, { idem: retryKey })).status, 202);
    const other = await post(`/api/v1/jobs/${b}/retry`, { idem: retryKey });
    assert.equal(other.status, 422, other.text);
  });
});

describe("a key whose first request is in flight", () => {
  test("is 409 for the same request, 422 for another; once completed it replays", async () => {
    // The fingerprint of the request below, taken from a completed key (it does not depend on the key).
    const probe = randomUUID();
    assert.equal((await post(COLORS, { idem: probe, json: colorsBody("slow.jpg") })).status, 202);
    const { fingerprint } = await stored("alice", probe);
    assert.ok(fingerprint);

    // The first request with this key holds the lock and has not submitted yet.
    const key = { client: "alice", key: randomUUID(), fingerprint };
    const taken = await stack.services.store.takeIdempotencyKey(key, 60_000);
    assert.equal(taken.outcome, "new");
    const before = await jobCount();
    const busy = await post(COLORS, {
      idem: key.key,
      json: colorsBody("slow.jpg"),
      requestId: "idem-busy-1",
    });
    assert.equal(busy.status, 409);
    assert.match(String(busy.body.error), /Idempotency-Key is still in flight/);
    const line = stack.logs.find((l) => l.request_id === "idem-busy-1" && l.event === "idempotency_conflict");
    assert.equal(line?.reason, "in_flight");
    assert.equal((await post(COLORS, { idem: key.key, json: colorsBody("other.jpg") })).status, 422);
    assert.equal(await jobCount(), before);

    // The first request submits: the key now replays what it submitted.
    const submitted = await stack.services.store.submit(
      [
        {
          type: "image_colors",
          ...colorsBody("slow.jpg"),
          parameters: { color_count: 5, format: "hex" },
        },
      ],
      undefined,
      { name: "alice", admin: false },
      { key, token: (taken as { token: string }).token, ttlMs: 60_000 },
    );
    const replay = await post(COLORS, { idem: key.key, json: colorsBody("slow.jpg") });
    assert.equal(replay.status, 202);
    assert.equal(replay.replayed, "true");
    assert.equal(replay.body.job_id, submitted.jobIds[0]);
    assert.equal(await jobCount(), before + 1);
  });
});

describe("keys are per client", () => {
  test("the same key from two clients creates two jobs", async () => {
    const idem = randomUUID();
    const a = await post(COLORS, { idem, json: colorsBody(), key: ALICE });
    const b = await post(COLORS, { idem, json: colorsBody(), key: BOB });
    assert.equal(a.status, 202);
    assert.equal(b.status, 202);
    assert.equal(b.replayed, null);
    assert.notEqual(a.body.job_id, b.body.job_id);
  });
});

describe("a key's lifetime", () => {
  test("after limits.idempotency_ttl the key creates a new job", async () => {
    const idem = randomUUID();
    const first = await post(COLORS, { idem, json: colorsBody(), on: brief });
    assert.equal(first.status, 202, first.text);
    const redisKey = brief.services.store.keys.idempotency(undefined, idem);
    const ttl = await brief.services.store.redis.pttl(redisKey);
    assert.ok(ttl > 0 && ttl <= 1000, `kept for the configured 1s (PTTL ${ttl})`);
    // Until Redis has expired the record (bounded: a record that never expires fails the test).
    const deadline = Date.now() + 10_000;
    while ((await brief.services.store.redis.exists(redisKey)) === 1) {
      assert.ok(Date.now() < deadline, "the record expires");
      await new Promise((r) => setTimeout(r, 50));
    }
    const before = await jobCount(brief);
    const again = await post(COLORS, { idem, json: colorsBody(), on: brief });
    assert.equal(again.status, 202, again.text);
    assert.equal(again.replayed, null);
    assert.notEqual(again.body.job_id, first.body.job_id);
    assert.equal(await jobCount(brief), before + 1);
  });
});

describe("refused requests", () => {
  test("a key that is empty, longer than 255 characters or not printable ASCII is 400 naming the header", async () => {
    for (const [idem, message] of [
      ["", /header idempotency-key must not be empty/],
      ["k".repeat(256), /header idempotency-key must be at most 255 characters/],
      ["café", /header idempotency-key must be printable ASCII characters only/],
    ] as const) {
      const res = await post(COLORS, { idem, json: colorsBody() });
      assert.equal(res.status, 400, idem);
      assert.match(String(res.body.error), message);
    }
    const longest = await post(COLORS, { idem: "k".repeat(255), json: colorsBody() });
    assert.equal(longest.status, 202, longest.text);
  });

  test("a body refused with 400 stores nothing for its key", async () => {
    const idem = randomUUID();
    const bad = await post(COLORS, { idem, json: { source_bucket: "media-in" } });
    assert.equal(bad.status, 400);
    assert.deepEqual(await stored("alice", idem), {});
    const good = await post(COLORS, { idem, json: colorsBody() });
    assert.equal(good.status, 202, good.text);
    assert.equal(good.replayed, null);
  });

  test("a refusal after the key was taken (a retry of a pending job) releases it", async () => {
    const pending = await post(COLORS, { json: colorsBody() });
    const id = pending.body.job_id as string;
    const idem = randomUUID();
    const refused = await post(`/api/v1/jobs/${id}/retry`, { idem });
    assert.equal(refused.status, 409);
    assert.match(String(refused.body.error), /only a failed job can be retried/);
    assert.deepEqual(await stored("alice", idem), {}, "the key is free again");
    assert.equal(
      (await stack.request(`/api/v1/jobs/${id}/cancel`, { method: "POST", key: ALICE })).status,
      200,
    );
    const retried = await post(`/api/v1/jobs/${id}/retry`, { idem });
    assert.equal(retried.status, 202, retried.text);
    assert.equal(retried.replayed, null);
  });
});

describe("the OpenAPI document", () => {
  test("the submitting routes take Idempotency-Key and document 409, 422 and Idempotent-Replayed", async () => {
    const doc = (await (await fetch(`${stack.baseUrl}/docs/json`)).json()) as {
      paths: Record<string, Record<string, Body>>;
    };
    for (const [path, status] of [
      ["/api/v1/jobs/image/colors", "202"],
      ["/api/v1/jobs/batch", "201"],
      ["/api/v1/jobs/{id}/retry", "202"],
    ] as const) {
      const op = doc.paths[path]!.post!;
      const parameters = op.parameters as Array<{ in: string; name: string; schema: Body }>;
      const header = parameters.find((p) => p.in === "header" && p.name.toLowerCase() === "idempotency-key");
      assert.ok(header, `${path} takes Idempotency-Key`);
      assert.equal(header.schema.maxLength, 255);
      const responses = op.responses as Record<string, Body>;
      assert.ok(responses["409"] && responses["422"], `${path} documents 409 and 422`);
      const success = responses[status]!;
      assert.ok((success.headers as Body | undefined)?.["Idempotent-Replayed"], `${path} ${status}`);
      assert.ok((success.content as Body | undefined)?.["application/json"], `${path} ${status} is JSON`);
    }
  });
});
