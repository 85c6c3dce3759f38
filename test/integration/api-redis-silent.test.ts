// A Redis that goes silent, as one does when its node is lost: its connections stay open and nothing
// comes back, not even a refusal, and its address answers no new connection. The API must say it is
// unavailable (503, readiness false) rather than hold every request until TCP gives up, and take the
// jobs again once Redis is back (redis.socket_timeout). A real redis-server behind a relay that
// goes silent (test/support/silent-relay.ts).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { startTestStack, type TestStack } from "../support/api.js";
import { startTestRedis, type TestRedis } from "../support/redis.js";
import { silentRelay, type SilentRelay } from "../support/silent-relay.js";
import { sleep } from "../support/store.js";

/** Every request gives up after this long: a request Redis's silence holds fails the test. */
const REQUEST_TIMEOUT = 15_000;

describe("the API with Redis gone silent (its node lost)", () => {
  let redis: TestRedis;
  let relay: SilentRelay;
  let stack: TestStack;
  let acknowledged: string;
  const submit = () =>
    stack.request("/api/v1/jobs/image/resize", {
      method: "POST",
      json: {
        source_bucket: stack.bucket,
        source_key: `in/${randomUUID()}.jpg`,
        dest_bucket: stack.bucket,
        dest_key: `out/${randomUUID()}.webp`,
        width: 8,
        height: 8,
      },
      signal: AbortSignal.timeout(REQUEST_TIMEOUT),
    });

  before(async () => {
    redis = await startTestRedis();
    relay = await silentRelay(redis.url);
    stack = await startTestStack({
      redis: { ...redis, url: relay.url, stop: async () => undefined },
      config: { redis: { socket_timeout: "1s", connect_timeout: "1s" } },
    });
    const res = await submit();
    assert.equal(res.status, 202);
    acknowledged = ((await res.json()) as { job_id: string }).job_id;
    relay.silence();
  });
  after(async () => {
    await stack?.close();
    relay?.close();
    await redis?.stop();
  });

  test("a submit while Redis is silent answers 503 {error}, not a request held until TCP gives up", async () => {
    const res = await submit();
    assert.equal(res.status, 503);
    const body = (await res.json()) as Record<string, unknown>;
    assert.deepEqual(Object.keys(body), ["error"]);
    // And the next one at once, the connection being known down.
    const again = await submit();
    assert.equal(again.status, 503);
    await again.arrayBuffer();
  });

  test("GET /health/ready: 503, queue_store unhealthy", async () => {
    const res = await stack.request("/health/ready", { signal: AbortSignal.timeout(REQUEST_TIMEOUT) });
    assert.equal(res.status, 503);
    const body = (await res.json()) as { dependencies: Record<string, { status: string }> };
    assert.equal(body.dependencies.queue_store?.status, "unhealthy");
  });

  test("Redis back: submits are taken again and the job acknowledged before is there", async () => {
    await relay.restore();
    let status = 0;
    for (let i = 0; i < 200 && status !== 202; i++) {
      const res = await submit();
      status = res.status;
      await res.arrayBuffer();
      if (status !== 202) await sleep(100);
    }
    assert.equal(status, 202);
    const res = await stack.request(`/api/v1/jobs/${acknowledged}`, {
      signal: AbortSignal.timeout(REQUEST_TIMEOUT),
    });
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { status: string }).status, "pending");
  });
});
