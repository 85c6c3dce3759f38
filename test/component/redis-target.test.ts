import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { Redis } from "ioredis";
import { freePort } from "../../core/net.js";
import { parseRedisTarget, redact } from "../../core/store/redis-target.js";
import { connectRedis } from "../../core/store/store.js";
import { findRedisServer } from "../../local/redis.js";
import { startTestRedis } from "../support/redis.js";

test("plain redis URLs go to ioredis unchanged", () => {
  for (const url of ["redis://localhost:6379", "rediss://:pw@cache.internal:6380/2", "redis://u:p@h/0"]) {
    assert.deepEqual(parseRedisTarget(url), { url });
  }
});

test("a Sentinel URL becomes ioredis Sentinel options", () => {
  assert.deepEqual(parseRedisTarget("redis-sentinel://:s3cret@s1:26379,s2:26380,s3/mymaster/3"), {
    options: {
      sentinels: [
        { host: "s1", port: 26379 },
        { host: "s2", port: 26380 },
        { host: "s3", port: 26379 },
      ],
      name: "mymaster",
      password: "s3cret",
      sentinelPassword: "s3cret",
      db: 3,
    },
  });
  const tls = parseRedisTarget("rediss-sentinel://sentinel.svc:26379/primary");
  assert.ok("options" in tls);
  assert.equal(tls.options.name, "primary");
  assert.deepEqual(tls.options.tls, {});
  assert.equal(tls.options.enableTLSForSentinelMode, true);
});

test("a malformed Sentinel URL is refused without showing its password", () => {
  assert.throws(
    () => parseRedisTarget("redis-sentinel://:topsecret@s1:26379"),
    (err: Error) => /not a valid Sentinel URL/.test(err.message) && !err.message.includes("topsecret"),
  );
});

test("redact hides credentials", () => {
  assert.equal(redact("redis://:pw@host:6379"), "redis://***@host:6379");
  assert.equal(redact("redis://host:6379"), "redis://host:6379");
});

test("connectRedis reaches the master through a real Sentinel", async (t) => {
  const redis = await startTestRedis();
  const dir = await mkdtemp(join(tmpdir(), "media-service-sentinel-"));
  const port = await freePort();
  const conf = join(dir, "sentinel.conf");
  await writeFile(conf, `port ${port}\nbind 127.0.0.1\nsentinel monitor primary 127.0.0.1 ${redis.port} 1\n`);
  const sentinel = spawn(await findRedisServer(), [conf, "--sentinel"], { stdio: "ignore" });
  t.after(async () => {
    sentinel.kill("SIGTERM");
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const client = connectRedis(`redis-sentinel://127.0.0.1:${port}/primary`, { connectTimeoutMs: 5000 });
  // The Sentinel may still be starting: ioredis retries, and reports each miss as an error event.
  client.on("error", () => undefined);
  try {
    await client.set("through-sentinel", "yes");
    const direct = new Redis(redis.url);
    assert.equal(await direct.get("through-sentinel"), "yes");
    direct.disconnect();
  } finally {
    client.disconnect();
  }
});
