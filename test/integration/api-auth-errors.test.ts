// Authentication (X-API-Key first, then Bearer; several keys; public endpoints; failures logged
// without the key; disabled with no keys) and the error contract: every error is `{error: string}`
// as JSON with the right status and no stack trace; X-Request-ID is honoured and echoed.
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startTestStack, type TestStack } from "../support/api.js";

type Body = Record<string, unknown>;

const K1 = randomBytes(32).toString("hex");
const K2 = randomBytes(32).toString("hex");
const WRONG = randomBytes(32).toString("hex");
const MAX_BODY = 2048;

const RESIZE = {
  source_bucket: "media-in",
  source_key: "uploads/photo.jpg",
  dest_bucket: "media-out",
  dest_key: "results/photo.jpg",
  width: 100,
  height: 100,
};

/** Every error answer that passed its own checks, checked again together (stack traces, paths). */
const errorAnswers: Array<{ what: string; status: number; contentType: string; text: string }> = [];

async function expectError(what: string, res: Response, status: number): Promise<string> {
  const text = await res.text();
  const contentType = res.headers.get("content-type") ?? "";
  assert.equal(res.status, status, `${what}: ${res.status} ${text}`);
  assert.match(contentType, /^application\/json/, `${what}: content-type`);
  const body = JSON.parse(text) as Body;
  assert.deepEqual(Object.keys(body), ["error"], `${what}: ${text}`);
  assert.equal(typeof body.error, "string");
  assert.ok((body.error as string).length > 0);
  errorAnswers.push({ what, status: res.status, contentType, text });
  return body.error as string;
}

function logText(line: Record<string, unknown>): string {
  return JSON.stringify(line);
}

describe("with API keys configured", () => {
  let stack: TestStack;

  before(async () => {
    stack = await startTestStack({ apiKeys: [K1, K2], config: { limits: { max_body_bytes: MAX_BODY } } });
  });
  after(async () => {
    await stack?.close();
  });

  const get = (headers: Record<string, string>) =>
    stack.request("/api/v1/jobs?limit=1", { key: null, headers });

  describe("authentication", () => {
    test("no key → 401 {error}", async () => {
      await expectError("no key", await get({}), 401);
      await expectError(
        "no key, POST",
        await stack.request("/api/v1/jobs/image/resize", { method: "POST", json: RESIZE, key: null }),
        401,
      );
      await expectError(
        "no key, queue stats",
        await stack.request("/api/v1/queue/stats", { key: null }),
        401,
      );
      await expectError("no key, batch list", await stack.request("/api/v1/jobs/batch", { key: null }), 401);
    });

    test("an unknown key → 401, in either header", async () => {
      await expectError("unknown X-API-Key", await get({ "X-API-Key": WRONG }), 401);
      await expectError("unknown Bearer", await get({ Authorization: `Bearer ${WRONG}` }), 401);
      await expectError("empty Bearer", await get({ Authorization: "Bearer " }), 401);
      await expectError("Basic scheme", await get({ Authorization: `Basic ${K1}` }), 401);
      await expectError("a prefix of a key", await get({ "X-API-Key": K1.slice(0, 32) }), 401);
    });

    test("X-API-Key: k1 → 200; Authorization: Bearer k2 → 200; both keys accepted in both headers", async () => {
      assert.equal((await get({ "X-API-Key": K1 })).status, 200);
      assert.equal((await get({ Authorization: `Bearer ${K2}` })).status, 200);
      assert.equal((await get({ "X-API-Key": K2 })).status, 200);
      assert.equal((await get({ Authorization: `Bearer ${K1}` })).status, 200);
    });

    test("X-API-Key is checked first", async () => {
      assert.equal((await get({ "X-API-Key": K1, Authorization: "Bearer garbage" })).status, 200);
      await expectError(
        "garbage X-API-Key with a valid Bearer",
        await get({ "X-API-Key": "garbage", Authorization: `Bearer ${K2}` }),
        401,
      );
    });

    test("a valid key lets every /api/v1 endpoint answer", async () => {
      const submitted = await stack.request("/api/v1/jobs/image/resize", {
        method: "POST",
        json: RESIZE,
        key: null,
        headers: { Authorization: `Bearer ${K2}` },
      });
      assert.equal(submitted.status, 202);
      const { job_id } = (await submitted.json()) as { job_id: string };
      for (const path of [
        `/api/v1/jobs/${job_id}`,
        "/api/v1/jobs",
        "/api/v1/jobs/batch",
        "/api/v1/queue/stats",
      ]) {
        const res = await stack.request(path, { key: K1 });
        assert.equal(res.status, 200, path);
      }
    });

    test("public endpoints need no key", async () => {
      for (const path of ["/health", "/health/live", "/health/ready", "/metrics", "/docs", "/docs/json"]) {
        const res = await stack.request(path, { key: null });
        assert.equal(res.status, 200, `${path} → ${res.status}`);
        await res.arrayBuffer();
      }
      const doc = (await (await stack.request("/docs/json", { key: null })).json()) as Body;
      assert.ok(doc.openapi, "the documentation is an OpenAPI document");
    });

    test("a valid key with a malformed payload → 400, not 401", async () => {
      await expectError(
        "valid key, invalid parameters",
        await stack.request("/api/v1/jobs/image/resize", {
          method: "POST",
          json: { ...RESIZE, width: 0 },
          key: K1,
        }),
        400,
      );
      await expectError(
        "valid key, malformed JSON",
        await stack.request("/api/v1/jobs/image/resize", {
          method: "POST",
          body: "{not json",
          key: K1,
          headers: { "content-type": "application/json" },
        }),
        400,
      );
    });

    test("failed attempts are logged as warnings; no key ever appears in a log line", async () => {
      await get({ "X-API-Key": WRONG });
      await get({ Authorization: `Bearer ${WRONG}` });
      await get({});
      const warnings = stack.logs.filter((l) => typeof l.level === "number" && l.level >= 40);
      assert.ok(
        warnings.some((l) => /invalid/i.test(logText(l)) && /key/i.test(logText(l))),
        "a warning about an invalid key was logged",
      );
      assert.ok(
        warnings.some((l) => /missing|without/i.test(logText(l)) && /key/i.test(logText(l))),
        "a warning about a missing key was logged",
      );
      for (const key of [K1, K2, WRONG]) {
        const leaking = stack.logs.filter((l) => logText(l).includes(key));
        assert.deepEqual(leaking, [], "no log line holds a presented key");
      }
    });
  });

  describe("errors", () => {
    test("unknown routes → 404 {error}", async () => {
      await expectError("GET /api/v1/nope", await stack.request("/api/v1/nope"), 404);
      await expectError("GET /nope", await stack.request("/nope", { key: null }), 404);
      await expectError("GET /api/v2/jobs", await stack.request("/api/v2/jobs"), 404);
      await expectError(
        "POST /api/v1/jobs/image/blur",
        await stack.request("/api/v1/jobs/image/blur", { method: "POST", json: RESIZE }),
        404,
      );
    });

    test("an unknown job or batch id of 150 characters → 404 {error}", async () => {
      // Within the ids the API accepts (up to 200 characters), so simply unknown.
      const id = "j".repeat(150);
      await expectError("GET a 150-character job id", await stack.request(`/api/v1/jobs/${id}`), 404);
      await expectError("GET a 150-character batch id", await stack.request(`/api/v1/jobs/batch/${id}`), 404);
    });

    test("a path with malformed percent-encoding → 400 or 404 {error}", async () => {
      const res = await stack.request("/api/v1/jobs/%E0%A4%A");
      const text = await res.clone().text();
      assert.ok([400, 404].includes(res.status), `${res.status} ${text}`);
      await expectError("malformed percent-encoding", res, res.status);
    });

    test("malformed JSON → 400", async () => {
      for (const text of ["{", '{"width": }', "not json at all", '{"a":1}}']) {
        await expectError(
          `malformed JSON ${text}`,
          await stack.request("/api/v1/jobs/image/resize", {
            method: "POST",
            body: text,
            headers: { "content-type": "application/json" },
          }),
          400,
        );
      }
    });

    test("a body over limits.max_body_bytes → 413 {error}", async () => {
      const big = { ...RESIZE, request_id: "x".repeat(MAX_BODY) };
      await expectError(
        "body too large",
        await stack.request("/api/v1/jobs/image/resize", { method: "POST", json: big }),
        413,
      );
      const batch = {
        jobs: Array.from({ length: 30 }, (_, i) => ({
          type: "image_colors",
          source_bucket: "media-in",
          source_key: `k${i}`,
        })),
      };
      assert.ok(JSON.stringify(batch).length > MAX_BODY);
      await expectError(
        "batch too large",
        await stack.request("/api/v1/jobs/batch", { method: "POST", json: batch }),
        413,
      );
    });

    test("a Content-Type other than JSON → 415 {error}", async () => {
      for (const contentType of [
        "application/xml",
        "application/x-www-form-urlencoded",
        "multipart/form-data",
      ]) {
        await expectError(
          contentType,
          await stack.request("/api/v1/jobs/image/resize", {
            method: "POST",
            body: contentType === "application/xml" ? "<resize/>" : "width=100",
            headers: { "content-type": contentType },
          }),
          415,
        );
      }
    });

    test("text/plain (even with a JSON text) → 415 {error}", async () => {
      await expectError(
        "text/plain",
        await stack.request("/api/v1/jobs/image/resize", {
          method: "POST",
          body: JSON.stringify(RESIZE),
          headers: { "content-type": "text/plain" },
        }),
        415,
      );
    });

    test("an empty body with a JSON content type → 400", async () => {
      await expectError(
        "empty JSON body",
        await stack.request("/api/v1/jobs/image/resize", {
          method: "POST",
          body: "",
          headers: { "content-type": "application/json" },
        }),
        400,
      );
      await expectError(
        "empty batch body",
        await stack.request("/api/v1/jobs/batch", {
          method: "POST",
          body: "",
          headers: { "content-type": "application/json" },
        }),
        400,
      );
    });

    test("every error body is exactly {error: string} as JSON, without stack traces", () => {
      assert.ok(errorAnswers.length >= 20, `errors seen: ${errorAnswers.length}`);
      for (const answer of errorAnswers) {
        assert.match(answer.contentType, /^application\/json/, answer.what);
        const body = JSON.parse(answer.text) as Body;
        assert.deepEqual(Object.keys(body), ["error"], answer.what);
        assert.equal(typeof body.error, "string", answer.what);
        assert.doesNotMatch(
          answer.text,
          /\bat [^ ]*\(?\/?[^ ]*\.(?:ts|js|mjs|cjs):\d+/,
          `${answer.what}: stack frame`,
        );
        assert.doesNotMatch(answer.text, /node_modules|\/work\/|file:\/\//, `${answer.what}: file path`);
        assert.doesNotMatch(answer.text, /\n\s+at /, `${answer.what}: stack trace`);
      }
    });

    test("X-Request-ID is echoed and appears in the log lines of that request", async () => {
      const requestId = `trace-${randomBytes(6).toString("hex")}`;
      const res = await stack.request("/api/v1/jobs/image/resize", {
        method: "POST",
        json: RESIZE,
        headers: { "X-Request-ID": requestId },
      });
      assert.equal(res.status, 202);
      assert.equal(res.headers.get("x-request-id"), requestId);
      const lines = stack.logs.filter((l) => logText(l).includes(requestId));
      assert.ok(lines.length > 0, "the request's log lines carry its id");
      assert.ok(
        lines.some((l) => l.request_id === requestId),
        "the id is the request_id field of the log lines",
      );

      const refused = await stack.request("/api/v1/jobs", {
        key: null,
        headers: { "X-Request-ID": `${requestId}-b` },
      });
      await expectError("refused with a request id", refused, 401);
      assert.equal(refused.headers.get("x-request-id"), `${requestId}-b`);
      assert.ok(stack.logs.some((l) => l.request_id === `${requestId}-b`));

      const notFound = await stack.request("/nope", { headers: { "X-Request-ID": `${requestId}-c` } });
      await expectError("404 with a request id", notFound, 404);
      assert.equal(notFound.headers.get("x-request-id"), `${requestId}-c`);
    });

    test("without X-Request-ID a generated one is returned", async () => {
      const a = await stack.request("/health/live", { key: null });
      const b = await stack.request("/api/v1/jobs?limit=1");
      const idA = a.headers.get("x-request-id");
      const idB = b.headers.get("x-request-id");
      assert.ok(idA && idA.length > 0, "an id is returned");
      assert.ok(idB && idB.length > 0, "an id is returned");
      assert.notEqual(idA, idB, "each request gets its own");
      assert.ok(
        stack.logs.some((l) => l.request_id === idB),
        "the generated id is logged",
      );
    });
  });
});

describe("with no API keys configured", () => {
  let stack: TestStack;

  before(async () => {
    stack = await startTestStack({ apiKeys: [] });
  });
  after(async () => {
    await stack?.close();
  });

  test("every request passes, with or without a key", async () => {
    assert.equal((await stack.request("/api/v1/jobs", { key: null })).status, 200);
    assert.equal((await stack.request("/api/v1/queue/stats", { key: null })).status, 200);
    assert.equal((await stack.request("/api/v1/jobs", { key: "anything" })).status, 200);
    const res = await stack.request("/api/v1/jobs/image/resize", { method: "POST", json: RESIZE, key: null });
    assert.equal(res.status, 202);
  });
});
