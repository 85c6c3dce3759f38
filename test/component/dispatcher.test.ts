// The claim loop both executors share, against a real store: it claims only while its target has
// room, visits the queues round-robin (a long queue never starves another), skips the types at their
// cap, wakes on the store's queues channel, and hands back what it claimed when launching fails.
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import pino from "pino";
import { Dispatcher, type PoolRoute } from "../../controller/dispatcher.js";
import type { DispatchTarget } from "../../controller/executor.js";
import { JOB_TYPES, type ExecutionClass, type JobType } from "../../core/jobs/types.js";
import type { Logger } from "../../core/logger.js";
import type { JobStore } from "../../core/store/store.js";
import { connect, makeSpec, storeSuite } from "../support/store.js";

let store: JobStore;
const suite = storeSuite((s) => (store = s));
const logger = pino({ level: "silent" }) as unknown as Logger;

/** A target with `capacity` places and optional per-type caps that records what it is handed. */
function recordingTarget(capacity: number, caps: Partial<Record<JobType, number>> = {}) {
  const launched: Array<{ id: string; type: JobType }> = [];
  let fail = false;
  const target: DispatchTarget & { launched: typeof launched; capacity: number; failLaunches(): void } = {
    launched,
    capacity,
    room: () => ({
      total: target.capacity - launched.length,
      full: new Set(
        (Object.keys(caps) as JobType[]).filter(
          (type) => launched.filter((l) => l.type === type).length >= caps[type]!,
        ),
      ),
    }),
    launch: async (id, type) => {
      if (fail) throw new Error("no runner");
      launched.push({ id, type });
    },
    failLaunches: () => {
      fail = true;
    },
  };
  return target;
}

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A dispatcher of the type queues over `target` (handing the pool's jobs to `pool`), not started. */
function dispatcherOver(target: DispatchTarget, pool?: PoolRoute, poolQueueLimit = 100): Dispatcher {
  return new Dispatcher({
    store,
    target,
    owner: "test",
    leaseMs: 30_000,
    logger,
    poolQueueLimit,
    ...(pool ? { pool } : {}),
  });
}

/** Runs `check` with a started dispatcher over `target`, then stops it. */
async function withDispatcher(
  target: DispatchTarget,
  check: (d: Dispatcher) => Promise<void>,
  pool?: PoolRoute,
  poolQueueLimit?: number,
): Promise<void> {
  const dispatcher = dispatcherOver(target, pool, poolQueueLimit);
  dispatcher.start();
  try {
    await check(dispatcher);
  } finally {
    await dispatcher.stop();
  }
}

/** The types of the jobs a target was handed, counted. */
function countTypes(launched: Array<{ type: JobType }>): Partial<Record<JobType, number>> {
  const counts: Partial<Record<JobType, number>> = {};
  for (const { type } of launched) counts[type] = (counts[type] ?? 0) + 1;
  return counts;
}

async function submit(
  type: JobType,
  n: number,
  overrides: Parameters<typeof makeSpec>[1] = {},
): Promise<string[]> {
  return (await store.submit(Array.from({ length: n }, () => makeSpec(type, overrides)))).jobIds;
}

/**
 * A pool route with these classes, and source sizes read from the source key's last path segment
 * before the extension (`in/<uuid>/<bytes>.jpg`, where the test names them).
 */
function poolRoute(classes: Partial<Record<JobType, ExecutionClass>>) {
  const dispatched: Array<{ type: JobType; cls: "job" | "pool" }> = [];
  const sized: string[] = [];
  const route: PoolRoute & { log: typeof dispatched; sized: string[] } = {
    log: dispatched,
    sized,
    policy: {
      enabled: true,
      classes: Object.fromEntries(JOB_TYPES.map((t) => [t, classes[t] ?? "job"])) as Record<
        JobType,
        ExecutionClass
      >,
      autoMaxSourceBytes: 1000,
      jobResources: { cpu: "1", memory: "1Gi" },
    },
    sourceBytes: async (job) => {
      sized.push(job.id);
      return Number(/(\d+)\.jpg$/.exec(job.source_key)?.[1] ?? NaN);
    },
    dispatched: (type, cls) => void dispatched.push({ type, cls }),
  };
  return route;
}

async function poolQueue(): Promise<string[]> {
  return (await store.redis.lrange(store.keys.pool(), 0, -1)).reverse();
}

describe("dispatcher", () => {
  test("claims no more than the target's room, and again when notified of room", async () => {
    await submit("image_resize", 5);
    const target = recordingTarget(2);
    await withDispatcher(target, async (dispatcher) => {
      await until(() => target.launched.length === 2, "two claims");
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(target.launched.length, 2, "nothing claimed without room");
      assert.equal((await store.queueStats()).queues.image_resize?.pending, 5, "claimed jobs stay pending");
      target.capacity = 5;
      dispatcher.notify();
      await until(() => target.launched.length === 5, "the rest claimed once there is room");
    });
  });

  test("round-robin over the queues: a long queue does not starve the others", async () => {
    await submit("image_resize", 20);
    await submit("image_colors", 2);
    await submit("audio_convert", 2);
    const target = recordingTarget(6);
    await withDispatcher(target, async () => {
      await until(() => target.launched.length === 6, "six claims");
      assert.deepEqual(countTypes(target.launched), { image_resize: 2, image_colors: 2, audio_convert: 2 });
    });
  });

  test("a type at its cap is skipped while others are claimed", async () => {
    await submit("image_resize", 5);
    await submit("image_colors", 5);
    const target = recordingTarget(6, { image_resize: 1 });
    await withDispatcher(target, async () => {
      await until(() => target.launched.length === 6, "six claims");
      assert.deepEqual(countTypes(target.launched), { image_resize: 1, image_colors: 5 });
    });
  });

  test("a submit wakes an idle dispatcher through the queues channel", async () => {
    const subscriber = connect(suite.url);
    const target = recordingTarget(1);
    const dispatcher = dispatcherOver(target);
    let woken = 0;
    await Dispatcher.listen(store, subscriber, () => {
      woken++;
      dispatcher.notify();
    });
    dispatcher.start();
    try {
      await new Promise((r) => setTimeout(r, 100));
      const [id] = await submit("video_thumbnail", 1);
      await until(() => target.launched.length === 1, "the new job claimed");
      assert.equal(target.launched[0]!.id, id);
      assert.ok(woken >= 1, "woken by the channel");
    } finally {
      await dispatcher.stop();
    }
  });

  test("once told to stop listening, the channel no longer wakes it", async () => {
    const subscriber = connect(suite.url);
    let woken = 0;
    const before = subscriber.listenerCount("message");
    const stopListening = await Dispatcher.listen(store, subscriber, () => woken++);
    assert.equal(subscriber.listenerCount("message"), before + 1);
    await submit("image_colors", 1);
    await until(() => woken === 1, "woken by a submit");
    stopListening();
    assert.equal(subscriber.listenerCount("message"), before);
    await submit("image_colors", 1);
    // A message published after the submit above arrives after its own, had it still been heard.
    const heard = new Promise<void>((resolve) => subscriber.once("message", () => resolve()));
    await store.redis.publish(store.keys.queuesChannel(), "check");
    await heard;
    assert.equal(woken, 1);
  });

  test("a job the target cannot take goes back to the head of its queue", async () => {
    const [id] = await submit("image_optimize", 1);
    const target = recordingTarget(1);
    target.failLaunches();
    await withDispatcher(target, async () => {
      await until(async () => (await store.getJob(id!))?.status === "pending", "pending");
      await until(
        async () => (await store.redis.zrange(store.keys.pending("image_optimize"), 0, -1)).includes(id!),
        "back in its queue",
      );
    });
    assert.deepEqual(await store.redis.zrange(store.keys.pending("image_optimize"), 0, -1), [id]);
    assert.equal(await store.redis.zcard(store.keys.active("image_optimize")), 0, "no lease left");
  });

  test("with the pool: a pool type's jobs go to its queue, a job type's to the target, auto by size", async () => {
    const colors = await submit("image_colors", 2);
    const small = await submit("image_resize", 1, { source_key: "in/a/800.jpg" });
    const large = await submit("image_resize", 1, { source_key: "in/b/5000.jpg" });
    const thumbs = await submit("video_thumbnail", 1);
    const target = recordingTarget(10);
    const route = poolRoute({ image_colors: "pool", image_resize: "auto" });
    await withDispatcher(
      target,
      async () => {
        await until(
          async () => (await poolQueue()).length === 3 && target.launched.length === 2,
          "all dispatched",
        );
        assert.deepEqual(new Set(await poolQueue()), new Set([...colors, ...small]));
        assert.deepEqual(new Set(target.launched.map((l) => l.id)), new Set([...large, ...thumbs]));
        assert.deepEqual(route.sized.sort(), [...small, ...large].sort(), "only auto jobs are sized");
        const timeline = (await store.jobTimeline(small[0]!))!.map((e) => [e.event, e.message]);
        assert.deepEqual(timeline.at(-1), [
          "pooled",
          "executor.pool.classes.image_resize auto: its source (800 bytes) is at most 1000",
        ]);
        assert.equal(route.log.filter((d) => d.cls === "pool").length, 3);
      },
      route,
    );
  });

  test("the pool's queue holds no more than its limit; the rest wait in their queue, in order", async () => {
    const ids = await submit("image_colors", 5);
    const target = recordingTarget(10);
    await withDispatcher(
      target,
      async (dispatcher) => {
        await until(async () => (await poolQueue()).length === 2, "two in the pool");
        await new Promise((r) => setTimeout(r, 200));
        assert.deepEqual(await poolQueue(), ids.slice(0, 2));
        assert.equal(target.launched.length, 0, "a pool job never goes to the target");
        assert.deepEqual(await store.redis.zrange(store.keys.pending("image_colors"), 0, -1), ids.slice(2));
        assert.equal((await store.claimPooled(30_000, "pool:w", 2))?.id, ids[0]);
        dispatcher.notify();
        await until(
          async () => (await poolQueue()).length === 2 && (await poolQueue())[1] === ids[2],
          "the next",
        );
      },
      poolRoute({ image_colors: "pool" }),
      2,
    );
  });

  test("a pool worker's dispatcher takes from the pool's queue only, as its target has room", async () => {
    const [first, second] = await submit("image_colors", 2);
    await submit("image_resize", 1);
    for (let i = 0; i < 2; i++) {
      const id = await store.claim("image_colors", 30_000, "controller");
      assert.ok((await store.toPool(id!, "controller", "test", 10)) > 0);
    }
    const target = recordingTarget(1);
    const dispatcher = new Dispatcher({
      store,
      target,
      owner: "pool:w",
      leaseMs: 30_000,
      logger,
      source: "pool",
      poolQueueLimit: 10,
    });
    dispatcher.start();
    try {
      await until(() => target.launched.length === 1, "one taken");
      await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual(target.launched, [{ id: first, type: "image_colors" }]);
      target.capacity = 5;
      dispatcher.notify();
      await until(() => target.launched.length === 2, "the second taken");
      assert.equal(target.launched[1]!.id, second);
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(target.launched.length, 2, "never from a type's queue");
    } finally {
      await dispatcher.stop();
    }
  });

  test("jobs waiting in the pool's queue with no worker taking them: one warning, then word when it moves", async () => {
    await submit("image_colors", 3);
    const lines: Array<{ level: number; msg: string; waiting?: number }> = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split("\n"))
          if (line) lines.push(JSON.parse(line) as (typeof lines)[number]);
        done();
      },
    });
    const heard = pino({ level: "info" }, sink) as unknown as Logger;
    const dispatcher = new Dispatcher({
      store,
      target: recordingTarget(10),
      owner: "test",
      leaseMs: 100,
      logger: heard,
      poolQueueLimit: 100,
      pool: poolRoute({ image_colors: "pool" }),
    });
    dispatcher.start();
    try {
      await until(() => lines.some((l) => l.level === 40), "the warning");
      const warnings = lines.filter((l) => l.level === 40);
      assert.match(
        warnings[0]!.msg,
        /no pool worker has taken one for two leases: is `media-service pool` running/,
      );
      assert.equal(warnings[0]!.waiting, 3);
      await new Promise((r) => setTimeout(r, 400));
      assert.equal(lines.filter((l) => l.level === 40).length, 1, "said once per stall");
      assert.ok(await store.claimPooled(30_000, "pool:w", 100));
      await until(() => lines.some((l) => l.msg === "pool workers are taking jobs again"), "the word");
    } finally {
      await dispatcher.stop();
    }
  });
});
