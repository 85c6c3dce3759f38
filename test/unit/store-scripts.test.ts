// The store's scripts and keys without Redis: every script's header declares the KEYS the store
// passes (and the script reads no family it does not declare), and the key layout is the one the
// data in Redis already has.
import { readFileSync } from "node:fs";
import { test } from "node:test";
import assert from "node:assert/strict";
import { Keys, keyOf } from "../../core/store/keys.js";
import { declaredKeys, SCRIPT_NAMES } from "../../core/store/scripts.js";

const source = (name: string) =>
  readFileSync(new URL(`../../core/store/lua/${name}.lua`, import.meta.url), "utf8");

test("every script opens with a header naming its KEYS, ARGV and output, and reads only the KEYS it names", () => {
  for (const name of SCRIPT_NAMES) {
    const lua = source(name);
    const declared = declaredKeys(name, lua);
    assert.ok(declared.length > 0, `${name}.lua declares KEYS`);
    const header = /^--\[\[([\s\S]*?)\]\]/.exec(lua)![1]!;
    for (const section of ["Input:", "ARGV[3]", "Output:"]) {
      assert.ok(header.includes(section), `${name}.lua's header has ${section}`);
    }
    const body = lua.slice(lua.indexOf("]]"));
    const used = new Set([...body.matchAll(/\bK\.(\w+)/g)].map((m) => m[1]!));
    for (const family of used)
      assert.ok(declared.includes(family as never), `${name}.lua declares ${family}`);
    assert.doesNotMatch(body, /KEYS\[/, `${name}.lua reads its keys by family name (K), not by index`);
  }
});

test("a header naming a family that does not exist, or one twice, stops the store from loading", () => {
  assert.deepEqual(declaredKeys("x", "--[[\n  KEYS  job pending\n        batch\n\n  ARGV[1] id\n]]"), [
    "job",
    "pending",
    "batch",
  ]);
  assert.throws(() => declaredKeys("x", "--[[\n  KEYS  jobs\n]]"), /jobs is no key family/);
  assert.throws(() => declaredKeys("x", "--[[\n  KEYS  job batch\n        job\n]]"), /job is named twice/);
  assert.throws(() => declaredKeys("x", "-- no header"), /header/);
});

/** The SHA-256 of "order-1" (an Idempotency-Key is stored under its digest). */
const ORDER_1_SHA256 = "0bafe22156d2698c143b86040446d366ead863ba600d5c924f3d15c786ef4057";

test("the keys are where the data in Redis already is", () => {
  const keys = new Keys("media");
  assert.equal(keys.prefix, "{media}:");
  assert.deepEqual(
    [
      keys.job("j1"),
      keys.jobChannel("j1"),
      keys.pending("image_resize"),
      keys.active("image_resize"),
      keys.stats("image_resize"),
      keys.histogram("image_resize"),
      keys.jobsByCreated(),
      keys.jobsByStatus("failed"),
      keys.jobsByType("analyze"),
      keys.jobsByType("analyze", "alice"),
      keys.batch("b1"),
      keys.batchJobs("b1"),
      keys.batchesByCreated(),
      keys.batchesByStatus("partial"),
      keys.clientIndex("alice", "jobs"),
      keys.clientIndex("alice", "jobs", "pending"),
      keys.clientIndex("alice", "batches"),
      keys.clientIndex("alice", "batches", "queued"),
      keys.queuesChannel(),
      keys.events(),
      keys.webhookStats(),
      keys.expiry(),
      keys.idempotency("alice", "order-1"),
      keys.idempotency(undefined, "order-1"),
      keys.idempotencyStats(),
    ],
    [
      "{media}:job:j1",
      "{media}:events:j1",
      "{media}:queue:image_resize:pending",
      "{media}:queue:image_resize:active",
      "{media}:stats:image_resize",
      "{media}:hist:image_resize",
      "{media}:jobs:by_created",
      "{media}:jobs:status:failed",
      "{media}:jobs:type:analyze",
      "{media}:client:alice:jobs:type:analyze",
      "{media}:batch:b1",
      "{media}:batch:b1:jobs",
      "{media}:batches:by_created",
      "{media}:batches:status:partial",
      "{media}:client:alice:jobs:by_created",
      "{media}:client:alice:jobs:status:pending",
      "{media}:client:alice:batches:by_created",
      "{media}:client:alice:batches:status:queued",
      "{media}:queues",
      "{media}:events",
      "{media}:webhooks:stats",
      "{media}:expiry",
      `{media}:idem:alice:${ORDER_1_SHA256}`,
      `{media}:idem:-:${ORDER_1_SHA256}`,
      "{media}:idem:stats",
    ],
  );
  for (const family of Object.values(keys.families)) {
    assert.ok(family.startsWith("{media}:"), `${family} carries the hash tag`);
  }
});

test("keyOf fills a family's ids in order and refuses the wrong number of them", () => {
  assert.equal(keyOf("{m}:client:*:jobs:status:*", "a*b", "pending"), "{m}:client:a*b:jobs:status:pending");
  assert.throws(() => keyOf("{m}:job:*"), /takes 1 ids, not 0/);
  assert.throws(() => keyOf("{m}:events", "x"), /takes 0 ids, not 1/);
});
