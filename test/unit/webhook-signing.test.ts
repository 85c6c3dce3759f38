// Standard Webhooks signing, checked with the reference implementation (the `standardwebhooks`
// package) as the independent verifier; and the retry schedule's promise (ADR 002: at least 6
// attempts over at least 10 minutes with the defaults).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import { Webhook } from "standardwebhooks";
import { decodeSigningSecret, signWebhook } from "../../core/webhooks/signing.js";
import { nextAttemptDelay, retryDelay } from "../../core/retry.js";
import { loadConfig } from "../../core/config/load.js";

const secret = `whsec_${randomBytes(32).toString("base64")}`;

describe("signature", () => {
  test("verifies with the reference implementation", () => {
    const body = JSON.stringify({ event: "job.completed", job: { id: "x", note: "ünïcode ✓" } });
    const id = "msg_1732190000000-0";
    const timestamp = Math.floor(Date.now() / 1000);
    const signature = signWebhook(decodeSigningSecret(secret), id, timestamp, body);
    assert.match(signature, /^v1,[A-Za-z0-9+/]+=*$/);
    const verified = new Webhook(secret).verify(body, {
      "webhook-id": id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": signature,
    });
    assert.deepEqual(verified, JSON.parse(body));
  });

  test("a changed body, id or timestamp does not verify", () => {
    const key = decodeSigningSecret(secret);
    const timestamp = Math.floor(Date.now() / 1000);
    const signature = signWebhook(key, "msg_1", timestamp, "{}");
    const wh = new Webhook(secret);
    const headers = {
      "webhook-id": "msg_1",
      "webhook-timestamp": String(timestamp),
      "webhook-signature": signature,
    };
    assert.throws(() => wh.verify('{"a":1}', headers));
    assert.throws(() => wh.verify("{}", { ...headers, "webhook-id": "msg_2" }));
    assert.throws(() => wh.verify("{}", { ...headers, "webhook-timestamp": String(timestamp - 1) }));
  });

  test("the whsec_ prefix is optional; a secret that is not base64 of 24-64 bytes is refused", () => {
    const raw = randomBytes(32).toString("base64");
    assert.deepEqual(decodeSigningSecret(raw), decodeSigningSecret(`whsec_${raw}`));
    for (const bad of [
      "hunter2",
      "whsec_",
      `whsec_${randomBytes(8).toString("base64")}`,
      "whsec_!!!!",
      `whsec_${randomBytes(100).toString("base64")}`,
    ]) {
      assert.throws(() => decodeSigningSecret(bad), /whsec_ followed by the base64 of 24 to 64 random bytes/);
    }
  });

  test("the configuration refuses a bad secret, naming the setting", () => {
    assert.throws(
      () => loadConfig({ env: { WEBHOOK_SIGNING_SECRET: "hunter2" } }),
      /webhooks\.signing_secret \(WEBHOOK_SIGNING_SECRET\): must be whsec_/,
    );
    assert.equal(loadConfig({ env: { WEBHOOK_SIGNING_SECRET: secret } }).webhooks.signingSecret, secret);
  });
});

describe("retry schedule", () => {
  test("with the defaults, even the shortest jitter gives ≥ 6 attempts over ≥ 10 minutes", () => {
    const c = loadConfig({ env: {} }).webhooks;
    assert.ok(c.maxAttempts >= 6);
    let total = 0;
    for (let attempt = 1; attempt < c.maxAttempts; attempt++) {
      total += retryDelay(attempt, c.retryInitialDelayMs, c.retryMaxDelayMs, () => 0);
    }
    assert.ok(total >= 600_000, `shortest schedule is ${total} ms`);
  });

  test("doubles per attempt, capped, jitter within [half, full]", () => {
    assert.equal(
      retryDelay(1, 1000, 60_000, () => 0),
      500,
    );
    assert.equal(
      retryDelay(1, 1000, 60_000, () => 1),
      1000,
    );
    assert.equal(
      retryDelay(3, 1000, 60_000, () => 1),
      4000,
    );
    assert.equal(
      retryDelay(20, 1000, 60_000, () => 1),
      60_000,
    );
  });

  test("Retry-After is honoured, up to the longest wait", () => {
    assert.equal(nextAttemptDelay(1, 7000, 1000, 60_000), 7000);
    assert.equal(nextAttemptDelay(1, 10_000_000, 1000, 60_000), 60_000);
    assert.equal(nextAttemptDelay(1, 0, 1000, 60_000), 0);
  });

  test("the configuration refuses a max delay below the initial one", () => {
    assert.throws(
      () =>
        loadConfig({
          env: {},
          overrides: { webhooks: { retry_initial_delay: "10m", retry_max_delay: "1m" } },
        }),
      /retry_max_delay must be at least webhooks.retry_initial_delay/,
    );
  });
});
