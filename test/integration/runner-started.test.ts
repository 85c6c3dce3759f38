// A runner handed the record its executor started (what `runner --serve` gets with each job) goes
// straight to the work: it sends no start of its own, and the job runs and completes as one started
// by the runner does. Without the record (`runner --job`) the runner starts the job itself. The
// commands are read from the real redis-server with MONITOR.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import { pino } from "pino";
import { scriptSha } from "../../core/store/scripts.js";
import { JobStore } from "../../core/store/store.js";
import { runJob } from "../../runner/run-job.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { makeImage } from "../support/media.js";
import { putObject, submitAndClaim } from "../support/runner.js";

let stack: TestStack;

before(async () => {
  stack = await startTestStack();
  await putObject(stack, "in/photo.jpg", await makeImage({ width: 320, height: 240, format: "jpeg" }));
});

after(async () => {
  await stack?.close();
});

/** The EVALSHA calls naming `sha` that redis received while `work` ran. */
async function evalshasOf<T>(sha: string, work: () => Promise<T>): Promise<{ result: T; calls: number }> {
  const connection = new Redis(stack.redis.url);
  const monitor = await connection.monitor();
  let calls = 0;
  monitor.on("monitor", (_time: string, args: string[]) => {
    if (args[0]?.toLowerCase() === "evalsha" && args[1] === sha) calls++;
  });
  try {
    const result = await work();
    // MONITOR's feed runs behind the commands: a PING sent after them comes back after their lines.
    await stack.services.redis.ping();
    await new Promise((r) => setTimeout(r, 100));
    return { result, calls };
  } finally {
    monitor.disconnect();
    connection.disconnect();
  }
}

/** An image_resize job of the test image to out/NAME.jpg. */
const resize = (name: string) => ({
  source_bucket: stack.bucket,
  source_key: "in/photo.jpg",
  dest_bucket: stack.bucket,
  dest_key: `out/${name}.jpg`,
  width: 100,
  height: 100,
});

/** Submitted and claimed, as an executor claims a job before it starts a runner. */
async function submit(name: string): Promise<string> {
  return submitAndClaim(stack, "image_resize", "image/resize", resize(name));
}

/** What a runner runs with: this stack's store and object store. */
const deps = () => ({
  config: stack.config,
  store: stack.services.store,
  s3: stack.services.s3,
  logger: pino({ level: "silent" }),
});

describe("a runner handed the started record", () => {
  test("sends no start of its own and completes the job", async () => {
    const { config, services } = stack;
    const id = await submit("handed");
    const { started, job } = await services.store.startAndGet(id, config.executor.leaseMs);
    assert.equal(started, true);
    assert.equal(job?.status, "processing");
    const { result: outcome, calls } = await evalshasOf(scriptSha("start"), () => runJob(id, deps(), job));
    assert.deepEqual(outcome, { code: 0 });
    assert.equal(calls, 0, "the runner started the job again");
    const done = await services.store.getJob(id);
    assert.equal(done?.status, "completed");
    assert.equal(done?.attempts, 1);
    assert.match(String((done?.result as { output_url?: string }).output_url), /out\/handed\.jpg$/);
  });

  test("without it, the runner starts the job itself (runner --job)", async () => {
    const { services } = stack;
    const id = await submit("own-start");
    const { result: outcome, calls } = await evalshasOf(scriptSha("start"), () => runJob(id, deps()));
    assert.deepEqual(outcome, { code: 0 });
    assert.equal(calls, 1);
    assert.equal((await services.store.getJob(id))?.status, "completed");
  });
});

describe("a runner that starts the job itself and finds nothing to run", () => {
  test("a job that does not exist: a permanent failure that names it", async () => {
    assert.deepEqual(await runJob("no-such-job", deps()), {
      code: 2,
      error: "job no-such-job does not exist",
    });
  });

  test("a finished job: done, and its record is left as it was", async () => {
    const id = await submit("twice");
    assert.deepEqual(await runJob(id, deps()), { code: 0 });
    const first = await stack.services.store.getJob(id);
    assert.deepEqual(await runJob(id, deps()), { code: 0 });
    assert.deepEqual(await stack.services.store.getJob(id), first);
  });

  test("a pending job nobody claimed: refused with the store's reason, and it stays pending", async () => {
    const res = await stack.request("/api/v1/jobs/image/resize", {
      method: "POST",
      json: resize("unclaimed"),
    });
    const { job_id: id, error } = (await res.json()) as { job_id: string; error?: string };
    assert.equal(res.status, 202, error);
    const outcome = await runJob(id, deps());
    assert.equal(outcome.code, 2);
    assert.match(String(outcome.error), /is pending but not claimed, cannot become processing/);
    assert.equal((await stack.services.store.getJob(id))?.status, "pending");
  });

  test("a store it cannot reach: a transient outcome that says so", async () => {
    // A connection that is not open and queues nothing: every command fails at once, as when the
    // store is down.
    const gone = new Redis(stack.redis.url, { lazyConnect: true, enableOfflineQueue: false });
    try {
      const store = new JobStore(gone, {
        keyPrefix: "runner-started",
        retentionMs: 60_000,
        eventsMaxLen: 100,
      });
      const outcome = await runJob("any", { ...deps(), store });
      assert.equal(outcome.code, 1);
      assert.match(String(outcome.error), /^queue store unavailable: /);
    } finally {
      gone.disconnect();
    }
  });
});
