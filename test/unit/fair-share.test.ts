// Fair share between clients as a pure function (core/jobs/fair-share.ts): for any arrival pattern no
// client with waiting jobs is passed over more than the others' weights allow, a claim always finds a
// waiting client, and the highest priority level is served first.
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { pickClient, turnLength, type Contender, type Turn } from "../../core/jobs/fair-share.js";

const CLIENTS = ["-", "acme", "beta", "c9", "zed"] as const;

/** Steps of an arrival pattern: some jobs arrive for a client, or a runner takes the next job. */
const step = fc.oneof(
  fc.record({ arrive: fc.constantFrom(...CLIENTS), jobs: fc.integer({ min: 1, max: 30 }) }),
  fc.record({ serve: fc.integer({ min: 1, max: 12 }) }),
);
const weights = fc.record(Object.fromEntries(CLIENTS.map((c) => [c, fc.integer({ min: 1, max: 5 })])));

test("for any arrival pattern, no waiting client is passed over more than the others' weights allow", () => {
  fc.assert(
    fc.property(weights, fc.array(step, { maxLength: 80 }), (weight, steps) => {
      const waiting = new Map<string, number>(CLIENTS.map((c) => [c, 0]));
      // passed.get(c).get(d): jobs served to d since c last was served or began waiting.
      const passed = new Map<string, Map<string, number>>(CLIENTS.map((c) => [c, new Map()]));
      let turn: Turn | null = null;
      for (const s of steps) {
        if ("arrive" in s) {
          if (waiting.get(s.arrive) === 0) passed.get(s.arrive)!.clear();
          waiting.set(s.arrive, waiting.get(s.arrive)! + s.jobs);
          continue;
        }
        for (let i = 0; i < s.serve; i++) {
          const contenders: Contender[] = CLIENTS.filter((c) => waiting.get(c)! > 0).map((client) => ({
            client,
            weight: weight[client]!,
            priority: 0,
          }));
          const picked = pickClient(contenders, turn);
          if (contenders.length === 0) {
            assert.equal(picked, null);
            break;
          }
          assert.ok(picked, "someone waits, so someone is served");
          assert.ok(waiting.get(picked.client)! > 0, `${picked.client} has a waiting job`);
          turn = picked.turn;
          waiting.set(picked.client, waiting.get(picked.client)! - 1);
          passed.get(picked.client)!.clear();
          for (const c of CLIENTS) {
            if (c === picked.client || waiting.get(c) === 0) continue;
            const n = (passed.get(c)!.get(picked.client) ?? 0) + 1;
            passed.get(c)!.set(picked.client, n);
            assert.ok(
              n <= weight[picked.client]!,
              `${c} waited while ${picked.client} (weight ${weight[picked.client]}) was served ${n} times`,
            );
          }
        }
      }
    }),
    { numRuns: 500 },
  );
});

test("the highest priority level with a contender is served first; clients within it take turns", () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.constantFrom(...CLIENTS), { minLength: 1 }),
      fc.array(fc.integer({ min: -3, max: 3 }), { minLength: 5, maxLength: 5 }),
      (clients, priorities) => {
        const contenders = clients.map((client, i) => ({ client, weight: 1, priority: priorities[i]! }));
        const top = Math.max(...contenders.map((c) => c.priority));
        const picked = pickClient(contenders, null)!;
        assert.equal(contenders.find((c) => c.client === picked.client)!.priority, top);
      },
    ),
  );
});

test("weights: turns of `weight` jobs in name order (acme 3, beta 1, zed 2)", () => {
  const contenders: Contender[] = [
    { client: "zed", weight: 2, priority: 0 },
    { client: "acme", weight: 3, priority: 0 },
    { client: "beta", weight: 1, priority: 0 },
  ];
  const order: string[] = [];
  let turn: Turn | null = null;
  for (let i = 0; i < 12; i++) {
    const picked: { client: string; turn: Turn } = pickClient(contenders, turn)!;
    order.push(picked.client);
    turn = picked.turn;
  }
  assert.deepEqual(order, [
    ...["acme", "acme", "acme", "beta", "zed", "zed"],
    ...["acme", "acme", "acme", "beta", "zed", "zed"],
  ]);
  assert.equal(turnLength(undefined), 1);
  assert.equal(turnLength(2.7), 2);
  assert.equal(turnLength(0), 1);
});
