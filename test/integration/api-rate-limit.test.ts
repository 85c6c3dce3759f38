// Rate limits over HTTP: a client's budget (its own rate_limit, else per_client), an address's budget
// for requests without a valid key (counted before the key is refused), 429 with Retry-After and
// {error}, health/metrics/docs never limited, one warning per key and window rather than a line per
// refused request, and no key in any log line.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startTestStack, type TestStack } from "../support/api.js";

let stack: TestStack;
const ALICE = "alice-rate-key-0123456789";
const BOB = "bob-rate-key-0123456789";

before(async () => {
  stack = await startTestStack({
    config: {
      server: {
        clients: [
          { name: "alice", keys: [ALICE], rate_limit: 3 },
          { name: "bob", keys: [BOB] },
        ],
        // A day: the test does not straddle a window's end.
        rate_limit: { window: "24h", per_client: 5, per_address: 2 },
      },
    },
  });
});
after(async () => {
  await stack?.close();
});

async function get(path: string, key: string | null) {
  const res = await stack.request(path, { key });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

describe("rate limits", () => {
  test("a client over its own budget gets 429 with Retry-After and {error}; another client is unaffected", async () => {
    for (let i = 1; i <= 3; i++) {
      const ok = await get("/api/v1/jobs", ALICE);
      assert.equal(ok.status, 200, ok.text);
      assert.equal(ok.headers.get("x-ratelimit-limit"), "3");
      assert.equal(ok.headers.get("x-ratelimit-remaining"), String(3 - i));
    }
    const refused = await get("/api/v1/jobs", ALICE);
    assert.equal(refused.status, 429, refused.text);
    assert.match(refused.headers.get("content-type") ?? "", /^application\/json/);
    const retryAfter = Number(refused.headers.get("retry-after"));
    assert.ok(
      Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 86_400,
      `Retry-After ${retryAfter}`,
    );
    const body = JSON.parse(refused.text) as Record<string, unknown>;
    assert.deepEqual(Object.keys(body), ["error"]);
    assert.match(
      body.error as string,
      /^rate limit exceeded: 3 requests per 24 hours for client alice; retry in \d+ s$/,
    );

    const post = await stack.request("/api/v1/jobs/image/colors", {
      method: "POST",
      key: ALICE,
      json: { source_bucket: "media-in", source_key: "a.jpg" },
    });
    assert.equal(post.status, 429, "submits count against the same budget");

    for (let i = 0; i < 5; i++)
      assert.equal((await get("/api/v1/jobs", BOB)).status, 200, "bob has per_client: 5");
    assert.equal((await get("/api/v1/jobs", BOB)).status, 429);
  });

  test("requests without a valid key are limited per address before the key is refused", async () => {
    assert.equal((await get("/api/v1/jobs", null)).status, 401);
    assert.equal((await get("/api/v1/jobs", "not-a-key-of-anyone")).status, 401);
    const flood = await Promise.all(
      Array.from({ length: 20 }, () => get("/api/v1/jobs", "not-a-key-of-anyone")),
    );
    assert.ok(
      flood.every((r) => r.status === 429),
      flood.map((r) => r.status).join(","),
    );
    const body = JSON.parse(flood[0]!.text) as { error: string };
    assert.match(
      body.error,
      /^rate limit exceeded: 2 requests per 24 hours for this address; retry in \d+ s$/,
    );
  });

  test("health, metrics and docs are never limited", async () => {
    for (let i = 0; i < 10; i++) {
      for (const path of ["/health", "/metrics", "/docs/json"]) {
        const res = await get(path, null);
        assert.notEqual(res.status, 429, path);
        assert.equal(res.headers.get("x-ratelimit-limit"), null, path);
      }
    }
  });

  test("one warning per key and window, the refused requests at debug, no key anywhere", () => {
    const warnings = stack.logs.filter((l) => l.event === "rate_limited");
    const who = warnings.map((w) => (w.client as string | undefined) ?? `ip:${String(w.ip)}`).sort();
    assert.deepEqual(who, ["alice", "bob", "ip:127.0.0.1"]);
    for (const w of warnings) assert.equal(w.level, 40);
    const refusedAtInfo = stack.logs.filter((l) => l.status === 429 && (l.level as number) >= 30);
    assert.deepEqual(refusedAtInfo, [], "429s are not logged one by one at info");
    const all = JSON.stringify(stack.logs);
    for (const key of [ALICE, BOB, "not-a-key-of-anyone"])
      assert.ok(!all.includes(key), `no ${key} in the logs`);
  });
});
