// Clients' limits and fair share in the store (claim.lua, submit.lua) on a real redis-server: the same
// arrival pattern through the store gives the order the pure function gives (core/jobs/fair-share.ts);
// max_pending refuses a submission whole, max_running holds a client's jobs back while others' are
// claimed, and neither can be passed by a race; job types and priorities a client may not use are
// refused before anything is written; queues written before fair share are still claimed.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { ClientLimitError, type ClientLimits } from "../../core/jobs/client-limits.js";
import { pickClient, type Turn } from "../../core/jobs/fair-share.js";
import type { JobType } from "../../core/jobs/types.js";
import type { JobStore } from "../../core/store/store.js";
import { createStore, makeSpec, rawStats, sameStore, storeSuite } from "../support/store.js";

const LEASE = 30_000;
const T: JobType = "image_resize";
const CLIENTS = new Map<string, ClientLimits>([
  ["acme", { weight: 3, maxRunning: 4, maxPending: 50, jobTypes: ["image_resize", "image_colors"] }],
  ["beta", { weight: 1, maxPriority: 5 }],
]);

let store: JobStore;
const suite = storeSuite((s) => (store = s), { clients: CLIENTS });

const by = (name: string) => ({ name, admin: false });

/** The client of a job as the store recorded it ("-" without one). */
async function clientOf(s: JobStore, id: string): Promise<string> {
  return (await s.redis.hget(s.keys.job(id), "client")) ?? "-";
}

async function load(s: JobStore, client: string): Promise<{ pending: number; running: number }> {
  const [pending, running] = await s.redis.hmget(
    s.keys.clientLoad(),
    `${client}|pending`,
    `${client}|running`,
  );
  return { pending: Number(pending ?? 0), running: Number(running ?? 0) };
}

describe("fair share: the store and the pure function agree", () => {
  const NAMES = ["-", "acme", "beta", "zed"] as const;
  const step = fc.oneof(
    fc.record({
      arrive: fc.constantFrom(...NAMES),
      jobs: fc.integer({ min: 1, max: 6 }),
      priority: fc.constantFrom(0, 0, 0, 5),
    }),
    fc.record({ claim: fc.integer({ min: 1, max: 8 }) }),
  );
  const weights = fc.record({ acme: fc.integer({ min: 1, max: 4 }), zed: fc.integer({ min: 1, max: 4 }) });

  test("any arrival pattern is claimed in the order pickClient gives", async () => {
    await fc.assert(
      fc.asyncProperty(weights, fc.array(step, { maxLength: 25 }), async (w, steps) => {
        const clients = new Map<string, ClientLimits>([
          ["acme", { weight: w.acme }],
          ["zed", { weight: w.zed }],
        ]);
        const s = createStore(suite.url, { clients });
        // The model: each client's waiting jobs (their priorities, in the order the store keeps).
        const waiting = new Map<string, Array<{ priority: number; seq: number }>>(NAMES.map((n) => [n, []]));
        let seq = 0;
        let turn: Turn | null = null;
        for (const st of steps) {
          if ("arrive" in st) {
            const specs = Array.from({ length: st.jobs }, () => makeSpec(T, { priority: st.priority }));
            await s.submit(specs, undefined, st.arrive === "-" ? undefined : by(st.arrive));
            const queue = waiting.get(st.arrive)!;
            for (let i = 0; i < st.jobs; i++) queue.push({ priority: st.priority, seq: seq++ });
            queue.sort((a, b) => b.priority - a.priority || a.seq - b.seq);
            continue;
          }
          for (let i = 0; i < st.claim; i++) {
            const contenders = NAMES.filter((n) => waiting.get(n)!.length > 0).map((client) => ({
              client,
              weight: clients.get(client)?.weight ?? 1,
              priority: waiting.get(client)![0]!.priority,
            }));
            const expected = pickClient(contenders, turn);
            const id = await s.claim(T, LEASE, "w");
            if (!expected) {
              assert.equal(id, null);
              break;
            }
            turn = expected.turn;
            waiting.get(expected.client)!.shift();
            assert.ok(id, `a job of ${expected.client} is claimed`);
            assert.equal(await clientOf(s, id), expected.client);
          }
        }
      }),
      { numRuns: 40 },
    );
  });

  test("one client, or none named: the queue's own order, priorities first", async () => {
    const s = createStore(suite.url);
    const ids: string[] = [];
    for (const priority of [0, 10, 0, -5, 10])
      ids.push((await s.submit([makeSpec(T, { priority })])).jobIds[0]!);
    const order: string[] = [];
    for (let id = await s.claim(T, LEASE, "w"); id; id = await s.claim(T, LEASE, "w")) order.push(id);
    assert.deepEqual(order, [ids[1], ids[4], ids[0], ids[2], ids[3]]);
  });

  test("a flood from one client delays another's job by at most the flooder's weight", async () => {
    const flood = Array.from({ length: 200 }, () => makeSpec(T));
    await store.submit(flood.slice(0, 40), undefined, by("acme"));
    await store.submit(flood.slice(40), undefined, by("zed"));
    const mine = (await store.submit([makeSpec(T)], undefined, by("beta"))).jobIds[0]!;
    const order: string[] = [];
    for (let i = 0; i < 6; i++) order.push((await store.claim(T, LEASE, "w"))!);
    // acme (weight 3) takes its turn, beta's one job is next: within the first 4 claims.
    assert.ok(order.slice(0, 4).includes(mine), `beta's job among the first 4 claims: ${order.join(" ")}`);
  });
});

describe("clients' limits", () => {
  test("max_pending: a batch that would pass it is refused whole, with a message naming it; counted", async () => {
    await store.submit(
      Array.from({ length: 40 }, () => makeSpec(T)),
      undefined,
      by("acme"),
    );
    await assert.rejects(
      store.submit(
        Array.from({ length: 11 }, () => makeSpec(T)),
        undefined,
        by("acme"),
      ),
      (err: unknown) => {
        assert.ok(err instanceof ClientLimitError);
        assert.equal(err.status, 429);
        assert.equal(err.limit, "max_pending");
        assert.equal(
          err.message,
          'client "acme" has 40 jobs pending and submits 11, over its server.clients max_pending of 50',
        );
        return true;
      },
    );
    assert.equal((await rawStats(store, T)).pending, 40, "nothing of the refused batch was written");
    assert.equal(await store.redis.hget(store.keys.clientRefused(), "acme|max_pending"), "1");
    // Exactly the 10 slots left are taken.
    await store.submit(
      Array.from({ length: 10 }, () => makeSpec(T)),
      undefined,
      by("acme"),
    );
    assert.deepEqual(await load(store, "acme"), { pending: 50, running: 0 });
    // Once one is claimed, there is room for one more.
    assert.ok(await store.claim(T, LEASE, "w"));
    await store.submit([makeSpec(T)], undefined, by("acme"));
    assert.deepEqual(await load(store, "acme"), { pending: 50, running: 1 });
  });

  test("max_running: a client at its limit is skipped, its jobs stay queued, another's are claimed", async () => {
    await store.submit(
      Array.from({ length: 10 }, () => makeSpec(T)),
      undefined,
      by("acme"),
    );
    const held: string[] = [];
    for (let i = 0; i < 4; i++) held.push((await store.claim(T, LEASE, "w"))!);
    assert.equal(await store.claim(T, LEASE, "w"), null, "acme is at its max_running of 4");
    const other = (await store.submit([makeSpec(T)], undefined, by("beta"))).jobIds[0]!;
    assert.equal(await store.claim(T, LEASE, "w"), other);
    assert.deepEqual(await load(store, "acme"), { pending: 6, running: 4 });
    // Every way a job stops running frees its place: completed, failed, given back, cancelled.
    await store.start(held[0]!, LEASE);
    await store.complete(held[0]!, {});
    await store.start(held[1]!, LEASE);
    await store.fail(held[1]!, "broken");
    await store.requeueJob(held[2]!, "test");
    await store.cancel("job", held[3]!, "cancelled by request");
    assert.deepEqual(await load(store, "acme"), { pending: 7, running: 0 });
    const again: string[] = [];
    for (let id = await store.claim(T, LEASE, "w"); id; id = await store.claim(T, LEASE, "w")) again.push(id);
    assert.equal(again.length, 4);
    assert.ok(again.includes(held[2]!), "the job given back is claimed again");
  });

  test("max_pending and max_running hold under 200 concurrent submits and claims", async () => {
    const submitters = Array.from({ length: 20 }, () => sameStore(suite.url, store, { clients: CLIENTS }));
    let most = { pending: 0, running: 0 };
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const now = await load(store, "acme");
        most = { pending: Math.max(most.pending, now.pending), running: Math.max(most.running, now.running) };
        await new Promise((r) => setImmediate(r));
      }
    })();
    const outcomes = await Promise.allSettled(
      Array.from({ length: 200 }, (_, i) =>
        submitters[i % 20]!.submit([makeSpec(T), makeSpec(T)], undefined, by("acme")).then(() =>
          submitters[(i + 7) % 20]!.claim(T, LEASE, `w${i}`),
        ),
      ),
    );
    sampling = false;
    await sampler;
    const refused = outcomes.filter((o) => o.status === "rejected");
    for (const o of refused) assert.ok(o.reason instanceof ClientLimitError);
    const final = await load(store, "acme");
    assert.ok(most.pending <= 50 && final.pending <= 50, `pending never above 50 (${most.pending})`);
    assert.ok(most.running <= 4 && final.running <= 4, `running never above 4 (${most.running})`);
    assert.equal(final.running, 4);
    const stats = await rawStats(store, T);
    assert.equal(
      stats.pending,
      final.pending + final.running,
      "the queue's counters agree with the client's",
    );
    assert.ok(refused.length > 0, "some submissions were refused");
  });

  test("job types and priorities a client may not use: 403, naming the limit; nothing written", async () => {
    await assert.rejects(store.submit([makeSpec("video_thumbnail")], undefined, by("acme")), {
      name: "ClientLimitError",
      status: 403,
      message:
        'client "acme" may not submit video_thumbnail jobs: its server.clients job_types are image_resize, image_colors',
    });
    await assert.rejects(store.submit([makeSpec(T, { priority: 6 })], undefined, by("beta")), {
      status: 403,
      message: 'client "beta" may not submit priority 6: its server.clients max_priority is 5',
    });
    await store.submit([makeSpec(T, { priority: 5 })], undefined, by("beta"));
    assert.equal((await rawStats(store, T)).submitted_total, 1);
    const refused = await store.redis.hgetall(store.keys.clientRefused());
    assert.deepEqual(refused, { "acme|job_types": "1", "beta|max_priority": "1" });
  });

  test("jobs queued before fair share existed are still claimed, in their order", async () => {
    const ids = (await store.submit([makeSpec(T), makeSpec(T)], undefined, by("beta"))).jobIds;
    // What a store of an earlier version holds: the type's queue only.
    const stale = await store.redis.keys(`${store.keys.prefix}queue:${T}:fair*`);
    await store.redis.del(...stale, `${store.keys.prefix}queue:${T}:turn`, store.keys.clientLoad());
    assert.equal(await store.claim(T, LEASE, "w"), ids[0]);
    assert.equal(await store.claim(T, LEASE, "w"), ids[1]);
    assert.equal(await store.claim(T, LEASE, "w"), null);
  });
});
