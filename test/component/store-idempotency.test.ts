// Idempotency-Keys in the store (lua/idempotency.lua and submit.lua's optional block): taking a key
// locks it for its request; the submit that carries the lock's token turns it into the completed
// record in the same script that creates the jobs; a key is replayed only for the same fingerprint;
// a lock is released only by the request that holds it; clients have keys of their own.
import assert from "node:assert/strict";
import { beforeEach, describe, test } from "node:test";
import { ConflictError } from "../../core/store/errors.js";
import type { IdempotencyKey, JobStore } from "../../core/store/store.js";
import { makeSpec, storeSuite } from "../support/store.js";

let store: JobStore;
storeSuite((s) => (store = s));

const LOCK_MS = 60_000;
const TTL_MS = 3_600_000;
let serial = 0;
let key: IdempotencyKey;
beforeEach(() => {
  key = { client: "alice", key: `order-${++serial} {*}:"?`, fingerprint: "fp-1" };
});

const record = (k: IdempotencyKey = key) => store.redis.hgetall(store.keys.idempotency(k.client, k.key));
const ttlOf = (k: IdempotencyKey = key) => store.redis.pttl(store.keys.idempotency(k.client, k.key));
const jobCount = () => store.redis.zcard(store.keys.jobsByCreated());

async function takeNew(k: IdempotencyKey = key): Promise<string> {
  const taken = await store.takeIdempotencyKey(k, LOCK_MS);
  assert.equal(taken.outcome, "new");
  return (taken as { token: string }).token;
}

describe("taking a key", () => {
  test("a new key is locked for its request, under the client and the key's digest, for the lock's time", async () => {
    const token = await takeNew();
    assert.deepEqual(await record(), { state: "locked", fingerprint: "fp-1", token });
    const ttl = await ttlOf();
    assert.ok(ttl > 0 && ttl <= LOCK_MS, `the lock expires (PTTL ${ttl})`);
    const redisKey = store.keys.idempotency("alice", key.key);
    assert.match(redisKey, /:idem:alice:[0-9a-f]{64}$/, "the key itself is not in the Redis key");
    assert.equal(store.keys.idempotency(undefined, key.key).includes(":idem:-:"), true);
  });

  test("while locked: the same fingerprint is in flight, another one a mismatch; both counted", async () => {
    await takeNew();
    assert.deepEqual(await store.takeIdempotencyKey(key, LOCK_MS), { outcome: "in_flight" });
    assert.deepEqual(await store.takeIdempotencyKey({ ...key, fingerprint: "fp-2" }, LOCK_MS), {
      outcome: "mismatch",
    });
    assert.equal((await record()).fingerprint, "fp-1", "the lock is unchanged");
    assert.deepEqual(await store.idempotencyOutcomes(), { replayed: 0, in_flight: 1, mismatch: 1 });
  });

  test("another client's key of the same text, or no client's, is another key", async () => {
    await takeNew();
    await takeNew({ ...key, client: "bob" });
    await takeNew({ ...key, client: undefined });
  });
});

describe("submitting under a key", () => {
  test("the submit completes the key with its result, kept for the ttl; the same request replays it", async () => {
    const token = await takeNew();
    const submitted = await store.submit(
      [makeSpec("image_colors"), makeSpec("image_resize")],
      { failFast: false },
      undefined,
      {
        key,
        token,
        ttlMs: TTL_MS,
      },
    );
    const done = await record();
    assert.equal(done.state, "done");
    assert.equal(done.fingerprint, "fp-1");
    assert.equal(done.token, undefined, "the lock's token is gone");
    const ttl = await ttlOf();
    assert.ok(ttl > LOCK_MS && ttl <= TTL_MS, `the record lives the ttl (PTTL ${ttl})`);

    const replay = await store.takeIdempotencyKey(key, LOCK_MS);
    assert.deepEqual(replay, { outcome: "replay", submitted });
    assert.deepEqual(submitted.types, ["image_colors", "image_resize"]);
    assert.ok(submitted.batchId);
    assert.deepEqual(await store.takeIdempotencyKey({ ...key, fingerprint: "fp-2" }, LOCK_MS), {
      outcome: "mismatch",
    });
    assert.deepEqual(await store.idempotencyOutcomes(), { replayed: 1, in_flight: 0, mismatch: 1 });
    assert.equal(await jobCount(), 2);
  });

  test("a submit whose lock was taken over by another request creates nothing", async () => {
    const stale = await takeNew();
    // Its lock ran out, and another request took the key.
    await store.redis.del(store.keys.idempotency(key.client, key.key));
    const current = await takeNew();
    await assert.rejects(
      store.submit([makeSpec()], undefined, undefined, { key, token: stale, ttlMs: TTL_MS }),
      (err: Error) => err instanceof ConflictError && /Idempotency-Key is in use/.test(err.message),
    );
    assert.equal(await jobCount(), 0);
    assert.deepEqual(await record(), { state: "locked", fingerprint: "fp-1", token: current });
  });

  test("a submit whose lock ran out with nobody taking the key still completes it", async () => {
    const token = await takeNew();
    await store.redis.del(store.keys.idempotency(key.client, key.key));
    const submitted = await store.submit([makeSpec()], undefined, undefined, { key, token, ttlMs: TTL_MS });
    assert.deepEqual(await store.takeIdempotencyKey(key, LOCK_MS), { outcome: "replay", submitted });
  });

  test("a submit of a key completed meanwhile creates nothing", async () => {
    const token = await takeNew();
    await store.submit([makeSpec()], undefined, undefined, { key, token, ttlMs: TTL_MS });
    await assert.rejects(
      store.submit([makeSpec()], undefined, undefined, { key, token, ttlMs: TTL_MS }),
      ConflictError,
    );
    assert.equal(await jobCount(), 1);
  });

  test("a refused submit (a batch id taken) leaves the lock as it was", async () => {
    await store.submit([makeSpec()], { id: "taken", failFast: false });
    const token = await takeNew();
    await assert.rejects(
      store.submit([makeSpec()], { id: "taken", failFast: false }, undefined, { key, token, ttlMs: TTL_MS }),
      ConflictError,
    );
    assert.deepEqual(await record(), { state: "locked", fingerprint: "fp-1", token });
  });
});

describe("releasing a key", () => {
  test("only the request holding the lock releases it; the key is then new", async () => {
    const token = await takeNew();
    assert.equal(await store.releaseIdempotencyKey(key, "someone-else"), false);
    assert.equal((await record()).state, "locked");
    assert.equal(await store.releaseIdempotencyKey(key, token), true);
    assert.deepEqual(await record(), {});
    assert.equal(await store.releaseIdempotencyKey(key, token), false, "nothing left to release");
    await takeNew();
  });

  test("a completed key is never released", async () => {
    const token = await takeNew();
    await store.submit([makeSpec()], undefined, undefined, { key, token, ttlMs: TTL_MS });
    assert.equal(await store.releaseIdempotencyKey(key, token), false);
    assert.equal((await record()).state, "done");
  });
});
