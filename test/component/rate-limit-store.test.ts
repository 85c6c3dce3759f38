// The rate limiter's shared counts: each API replica decides at once from the shared count it last
// learned plus what it counted since, and one flush adds its counts to Redis and learns the others'.
// Two stores on one real redis-server stand for two replicas; flushes are called, not waited for.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import pino from "pino";
import { Writable } from "node:stream";
import { SharedWindowStore } from "../../api/rate-limit-store.js";
import type { Logger } from "../../core/logger.js";
import { startTestRedis, type TestRedis } from "../support/redis.js";
import { closeStores, connect } from "../support/store.js";

let server: TestRedis;
before(async () => {
  server = await startTestRedis();
});
after(async () => {
  await closeStores();
  await server.stop();
});

const DAY = 86_400_000;
const lines: Array<Record<string, unknown>> = [];
const logger = pino(
  { level: "debug" },
  new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
      done();
    },
  }),
) as unknown as Logger;

function count(
  store: SharedWindowStore,
  key: string,
  window = DAY,
): Promise<{ current: number; ttl: number }> {
  return new Promise((resolve, reject) =>
    store.incr(key, (err, result) => (err ? reject(err) : resolve(result)), window),
  );
}

describe("shared rate-limit counts", () => {
  test("replicas learn each other's counts at their next flush, and the count lives in Redis for its window", async () => {
    const prefix = `rl-${randomUUID()}:`;
    const a = new SharedWindowStore(connect(server.url), prefix, 60_000, logger);
    const b = new SharedWindowStore(connect(server.url), prefix, 60_000, logger);
    try {
      for (let i = 1; i <= 3; i++) assert.equal((await count(a, "client:alice")).current, i);
      assert.equal((await count(b, "client:alice")).current, 1, "b has not heard of a's requests yet");
      await a.flush();
      await b.flush();
      assert.equal((await count(b, "client:alice")).current, 5, "b learned a's 3 with its own flush");
      assert.equal((await count(a, "client:alice")).current, 4, "a decides at once, from what it knew");
      await a.flush();
      assert.equal(
        (await count(a, "client:alice")).current,
        6,
        "and learns b's first one when it sends its own",
      );
      assert.equal((await count(a, "client:bob")).current, 1, "keys are counted apart");

      await a.flush();
      await b.flush();
      const redis = connect(server.url);
      const keys = await redis.keys(`${prefix}*`);
      assert.deepEqual(keys.map((k) => k.slice(prefix.length).replace(/:\d+$/, "")).sort(), [
        "client:alice",
        "client:bob",
      ]);
      const alice = keys.find((k) => k.includes("alice"))!;
      assert.equal(await redis.get(alice), "7", "3 + 1 + 1 (b) + 1 + 1 (a)");
      const ttl = await redis.pttl(alice);
      assert.ok(ttl > 0 && ttl <= 2 * DAY, `expires with its window (pttl ${ttl})`);
      const { ttl: left } = await count(a, "client:carol");
      assert.ok(left > 0 && left <= DAY, "ttl is what is left of the window");
    } finally {
      await a.close();
      await b.close();
    }
  });

  test("without Redis the counts stay local, requests are still decided, and one warning says so", async () => {
    const redis = connect(server.url);
    const store = new SharedWindowStore(redis, `rl-${randomUUID()}:`, 60_000, logger);
    redis.disconnect();
    const before = lines.length;
    assert.equal((await count(store, "address:10.0.0.1")).current, 1);
    await store.flush();
    assert.equal((await count(store, "address:10.0.0.1")).current, 2, "the unsent count was kept");
    await store.flush();
    const warnings = lines.slice(before).filter((l) => l.event === "rate_limit_unshared");
    assert.equal(warnings.length, 1, "warned once, not once a flush");
    assert.equal(warnings[0]!.level, 40);
    await store.close();
  });
});
