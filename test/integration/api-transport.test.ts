// What reaches the server below the routes (broken HTTP framing, oversized headers, no Host, a body
// that stops arriving) and what a refused value may cost: every answer is the interface's `{error}`,
// nothing is logged as a server error, and a huge refused value is not repeated in full.
import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";
import { startTestStack, type TestStack } from "../support/api.js";

let stack: TestStack;
before(async () => {
  stack = await startTestStack({ apiKeys: ["transport-key"], config: { server: { read_timeout: "1s" } } });
});
after(async () => {
  await stack?.close();
});

interface RawAnswer {
  status: number;
  headers: string;
  body: string;
}

/** Sends bytes as they are on one connection and reads the answer until the server closes it. */
function raw(chunks: string[], options: { keepOpen?: boolean } = {}): Promise<RawAnswer> {
  const { port } = new URL(stack.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1");
    let received = "";
    socket.on("data", (data) => {
      received += data.toString("utf8");
    });
    socket.on("error", reject);
    socket.on("close", () => {
      const [head = "", ...rest] = received.split("\r\n\r\n");
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
      resolve({ status, headers: head, body: rest.join("\r\n\r\n") });
    });
    socket.on("connect", () => {
      for (const chunk of chunks) socket.write(chunk);
      if (!options.keepOpen) socket.end();
    });
  });
}

function errorOf(answer: RawAnswer): string {
  assert.match(answer.headers, /content-type: application\/json/i, answer.headers);
  const body = JSON.parse(answer.body) as Record<string, unknown>;
  assert.deepEqual(Object.keys(body), ["error"], answer.body);
  return body.error as string;
}

function serverErrorsLogged(): Array<Record<string, unknown>> {
  return stack.logs.filter((line) => (line.level as number) >= 50);
}

describe("transport-level errors answer {error}", () => {
  test("a request line that is not HTTP is a 400", async () => {
    const answer = await raw(["GARBAGE\r\n\r\n"]);
    assert.equal(answer.status, 400);
    assert.match(errorOf(answer), /^malformed HTTP request/);
  });

  test("broken framing (two Content-Length headers that disagree) is a 400", async () => {
    const answer = await raw([
      "POST /api/v1/jobs/image/resize HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhello",
    ]);
    assert.equal(answer.status, 400);
    assert.match(errorOf(answer), /^malformed HTTP request/);
  });

  test("headers beyond the limit are a 431", async () => {
    const answer = await raw([
      `GET /health/live HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(40_000)}\r\n\r\n`,
    ]);
    assert.equal(answer.status, 431);
    assert.equal(errorOf(answer), "request headers too large");
  });

  test("HTTP/1.1 without Host is a 400 naming it; HTTP/1.0 needs none", async () => {
    const missing = await raw(["GET /health/live HTTP/1.1\r\nConnection: close\r\n\r\n"]);
    assert.equal(missing.status, 400);
    assert.equal(errorOf(missing), "missing Host header: HTTP/1.1 requires one");
    const old = await raw(["GET /health/live HTTP/1.0\r\n\r\n"]);
    assert.equal(old.status, 200, old.body);
  });

  test("a body that stops arriving gets a 408 at server.read_timeout, and no error is logged", async () => {
    const before = serverErrorsLogged().length;
    const answer = await raw(
      [
        "POST /api/v1/jobs/image/resize HTTP/1.1\r\nHost: x\r\nX-API-Key: transport-key\r\n" +
          "Content-Type: application/json\r\nContent-Length: 500\r\n\r\n",
        '{"source_bucket":',
      ],
      { keepOpen: true },
    );
    assert.equal(answer.status, 408);
    assert.equal(errorOf(answer), "request body not received within 1 s (server.read_timeout)");
    assert.deepEqual(serverErrorsLogged().slice(before), []);
  });
});

describe("refused values are cut", () => {
  test("a 1 MB value is not repeated in full in the answer or the log", async () => {
    const huge = "x".repeat(900_000);
    const logsBefore = stack.logs.length;
    const res = await stack.request("/api/v1/jobs/batch", {
      method: "POST",
      json: {
        jobs: [
          {
            type: "image_colors",
            source_bucket: "media-in",
            source_key: "in/a.jpg",
            resources: { memory: huge },
          },
        ],
      },
    });
    const text = await res.text();
    assert.equal(res.status, 400, text.slice(0, 300));
    const { error } = JSON.parse(text) as { error: string };
    assert.match(
      error,
      /^jobs\[0\]\.resources\.memory must be a quantity such as 512Mi or 2Gi, more than zero and at most 8Gi \(kubernetes\.max_resources\.memory\); got x{80}… \(900000 characters\)$/,
    );
    assert.ok(text.length < 2_000, `${text.length} bytes of error body`);
    const logged = stack.logs.slice(logsBefore).map((line) => JSON.stringify(line));
    assert.ok(logged.length > 0);
    for (const line of logged) assert.ok(line.length < 4_000, `${line.length} characters logged`);
  });

  test("an unknown route with a 10 kB path answers a short 404", async () => {
    const res = await stack.request(`/api/v1/${"p".repeat(10_000)}`);
    const text = await res.text();
    assert.equal(res.status, 404);
    assert.match(
      (JSON.parse(text) as { error: string }).error,
      /^no route GET \/api\/v1\/p+… \(10008 characters\)$/,
    );
    assert.ok(text.length < 1_000);
  });
});
