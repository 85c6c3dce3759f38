// What the webhook notifier decides (controller/webhooks/delivery.ts), as tables: which events call
// for a delivery and with what body, which deliveries start within the concurrency limits, and what
// each answer of a receiver makes of the delivery (delivered, retried at a time, given up, refused).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import { Webhook } from "standardwebhooks";
import type { Batch, Job } from "../../core/jobs/records.js";
import type { StoreEvent } from "../../core/store/events.js";
import { decodeSigningSecret } from "../../core/webhooks/signing.js";
import {
  decideAttempt,
  decideEvent,
  pickReady,
  webhookHeaders,
  type Delivery,
  type Settled,
} from "../../controller/webhooks/delivery.js";
import type { WebhookResponse } from "../../controller/webhooks/http-client.js";
import { batchPayload, chatPayload, jobPayload } from "../../controller/webhooks/payloads.js";

const NOW = Date.parse("2026-11-28T10:00:00Z");
const AT = "2026-11-28T09:59:59.000Z";
const ORIGIN = "https://hooks.example.com";
const URL_WITH_SECRET = `${ORIGIN}/T000/B000/secret-token`;
const JOB_ID = "6f1c1d9e-3d1a-4c55-9e51-0f2f7d0a8b11";

const job: Job = {
  id: JOB_ID,
  type: "image_resize",
  status: "completed",
  source_bucket: "media",
  source_key: "in.jpg",
  dest_bucket: "media",
  dest_key: "out.jpg",
  parameters: { width: 320 },
  result: { output_url: "https://cdn.example.com/media/out.jpg" },
  request_id: "req-7",
  webhook_url: URL_WITH_SECRET,
  created_at: "2026-11-28T09:59:58.000Z",
  updated_at: AT,
  completed_at: AT,
};

const completed: StoreEvent = {
  event: "job.completed",
  entryId: "1764323999000-0",
  at: AT,
  job_id: JOB_ID,
  type: "image_resize",
  status: "completed",
  request_id: "req-7",
  webhook: true,
};

const batchDone: StoreEvent = {
  event: "batch.completed",
  entryId: "1764323999000-1",
  at: AT,
  batch_id: "acme/nightly",
  status: "partial",
  total_jobs: 3,
  completed: 2,
  failed: 1,
  webhook_url: URL_WITH_SECRET,
};

const batch: Batch = {
  id: "acme/nightly",
  status: "partial",
  total_jobs: 3,
  pending: 0,
  processing: 0,
  completed: 2,
  failed: 1,
  cancelled: 0,
  fail_fast: false,
  webhook_url: URL_WITH_SECRET,
  created_at: AT,
  updated_at: AT,
};

const pending = (attempts: number, next: string) => ({
  webhook_delivery: {
    id: "msg_x",
    status: "pending" as const,
    attempts,
    last_attempt_at: AT,
    last_result: "HTTP 503",
    next_attempt_at: next,
  },
});
const settled = (status: "delivered" | "failed") => ({
  webhook_delivery: { id: "msg_x", status, attempts: 1, last_attempt_at: AT, last_result: "HTTP 200" },
});

const delivery = (over: Partial<Delivery>): { deliver: Delivery } => ({
  deliver: {
    entryId: completed.entryId,
    kind: "job",
    recordId: JOB_ID,
    webhookId: `msg_${completed.entryId}`,
    url: URL_WITH_SECRET,
    origin: ORIGIN,
    body: JSON.stringify(jobPayload(job, AT)),
    attempts: 0,
    dueAt: NOW,
    context: { job_id: JOB_ID, request_id: "req-7", webhook_id: `msg_${completed.entryId}` },
    ...over,
  },
});

const EVENTS: Array<{ name: string; event: StoreEvent; record?: Job | Batch; expect: unknown }> = [
  {
    name: "a finished job with a webhook: its body, due now",
    event: completed,
    record: job,
    expect: delivery({}),
  },
  {
    name: "one another notifier had begun: the attempts go on from its count, at its next time",
    event: completed,
    record: { ...job, ...pending(2, "2026-11-28T10:01:00.000Z") },
    expect: delivery({ attempts: 2, dueAt: Date.parse("2026-11-28T10:01:00.000Z") }),
  },
  {
    name: "the chat style: a chat message",
    event: completed,
    record: { ...job, webhook_style: "chat" },
    expect: delivery({ body: JSON.stringify(chatPayload({ ...job, webhook_style: "chat" })) }),
  },
  {
    name: "delivered already (an event taken over after its delivery): acknowledged",
    event: completed,
    record: { ...job, ...settled("delivered") },
    expect: { ack: "its webhook is delivered already", context: { job_id: JOB_ID, request_id: "req-7" } },
  },
  {
    name: "its job expired first: acknowledged, with a warning",
    event: completed,
    expect: {
      ack: "job expired before its webhook was delivered; dropped",
      warn: true,
      context: { job_id: JOB_ID, request_id: "req-7" },
    },
  },
  {
    name: "a job without a webhook: acknowledged",
    event: { ...completed, webhook: false },
    record: job,
    expect: { ack: "the event has no webhook", context: {} },
  },
  {
    name: "an event that never has one (job.created): acknowledged",
    event: { event: "job.created", entryId: "1-0", job_id: JOB_ID, type: "image_resize", status: "pending" },
    expect: { ack: "the event has no webhook", context: {} },
  },
  {
    name: "a finished batch: its counts, under the client's own batch id",
    event: batchDone,
    record: batch,
    expect: delivery({
      entryId: batchDone.entryId,
      kind: "batch",
      recordId: "acme/nightly",
      webhookId: `msg_${batchDone.entryId}`,
      body: JSON.stringify(
        batchPayload({ id: "nightly", status: "partial", total_jobs: 3, completed: 2, failed: 1 }, AT),
      ),
      context: { batch_id: "acme/nightly", webhook_id: `msg_${batchDone.entryId}` },
    }),
  },
  {
    name: "a batch whose webhook was given up already: acknowledged",
    event: batchDone,
    record: { ...batch, ...settled("failed") },
    expect: { ack: "its webhook is failed already", context: { batch_id: "acme/nightly" } },
  },
];

describe("decideEvent: what an event of the stream calls for", () => {
  for (const c of EVENTS) {
    test(c.name, () => assert.deepEqual(decideEvent(c.event, c.record, NOW), c.expect));
  }
});

const policy = { maxAttempts: 3, retryInitialDelayMs: 30_000, retryMaxDelayMs: 3_600_000 };
const warn = (message: string) => ({ level: "warn", message }) as const;

const ANSWERS: Array<{ name: string; attempts: number; response: WebhookResponse; expect: Settled }> = [
  {
    name: "2xx: delivered, naming the origin only",
    attempts: 0,
    response: { kind: "delivered", statusCode: 204 },
    expect: {
      attempt: 1,
      result: "delivered",
      summary: `${ORIGIN} answered 204`,
      statusCode: 204,
      log: { level: "info", message: "webhook delivered" },
    },
  },
  {
    name: "a 4xx retrying cannot help: given up at once",
    attempts: 0,
    response: { kind: "rejected", statusCode: 410, message: "HTTP 410" },
    expect: {
      attempt: 1,
      result: "failed",
      summary: "HTTP 410",
      statusCode: 410,
      log: warn("webhook given up"),
    },
  },
  {
    name: "an address the policy refuses: refused",
    attempts: 0,
    response: { kind: "refused", message: "10.0.0.5 is a private address (webhooks.allow_private)" },
    expect: {
      attempt: 1,
      result: "refused",
      summary: "10.0.0.5 is a private address (webhooks.allow_private)",
      log: warn("webhook refused by the target policy"),
    },
  },
  {
    name: "a 503 with Retry-After: retried when the receiver asks",
    attempts: 0,
    response: { kind: "retryable", statusCode: 503, retryAfterMs: 5000, message: "HTTP 503" },
    expect: {
      attempt: 1,
      result: "retry",
      summary: "HTTP 503",
      statusCode: 503,
      nextAttemptAt: NOW + 5000,
      log: warn("webhook attempt failed; will retry"),
    },
  },
  {
    name: "a Retry-After beyond the longest wait: the longest wait",
    attempts: 1,
    response: { kind: "retryable", statusCode: 429, retryAfterMs: 86_400_000, message: "HTTP 429" },
    expect: {
      attempt: 2,
      result: "retry",
      summary: "HTTP 429",
      statusCode: 429,
      nextAttemptAt: NOW + 3_600_000,
      log: warn("webhook attempt failed; will retry"),
    },
  },
  {
    name: "no answer in time: retried on the schedule (second attempt: 60 s nominal, half of it fixed)",
    attempts: 1,
    response: { kind: "retryable", message: "no response within 10 s" },
    expect: {
      attempt: 2,
      result: "retry",
      summary: "no response within 10 s",
      nextAttemptAt: NOW + 30_000,
      log: warn("webhook attempt failed; will retry"),
    },
  },
  {
    name: "retryable on the last attempt: given up, saying after how many",
    attempts: 2,
    response: { kind: "retryable", statusCode: 502, message: "HTTP 502" },
    expect: {
      attempt: 3,
      result: "failed",
      summary: "HTTP 502; gave up after 3 attempts",
      statusCode: 502,
      log: warn("webhook given up"),
    },
  },
];

describe("decideAttempt: what an answer makes of a delivery", () => {
  for (const c of ANSWERS) {
    test(c.name, () => {
      const got = decideAttempt({ attempts: c.attempts, origin: ORIGIN }, c.response, policy, NOW, () => 0);
      assert.deepEqual(got, c.expect);
    });
  }
});

describe("pickReady: attempts in flight within webhooks.concurrency and per_host_concurrency", () => {
  const d = (origin: string, n: number) => ({ origin, n });
  const ready = [
    d("https://a", 1),
    d("https://a", 2),
    d("https://b", 3),
    d("https://a", 4),
    d("https://c", 5),
  ];
  const picked = (
    inFlight: number,
    byOrigin: Array<[string, number]>,
    concurrency: number,
    perHost: number,
  ) =>
    pickReady(ready, inFlight, new Map(byOrigin), { concurrency, perHostConcurrency: perHost }).map(
      (x) => x.n,
    );

  test("in order, each origin up to its limit, the rest waiting", () => {
    assert.deepEqual(picked(0, [], 10, 1), [1, 3, 5]);
    assert.deepEqual(picked(0, [], 10, 2), [1, 2, 3, 5]);
  });
  test("the overall limit counts the attempts in flight", () => {
    assert.deepEqual(picked(8, [], 10, 2), [1, 2]);
    assert.deepEqual(picked(10, [], 10, 2), []);
  });
  test("an origin's attempts in flight count against it", () => {
    assert.deepEqual(picked(2, [["https://a", 2]], 10, 2), [3, 5]);
  });
});

describe("webhookHeaders", () => {
  const body = JSON.stringify(jobPayload(job, AT));
  const d = { webhookId: "msg_1764323999000-0", body };
  test("unsigned without a signing secret", () => {
    assert.deepEqual(webhookHeaders(d, undefined, 1764324000), {
      "webhook-id": d.webhookId,
      "webhook-timestamp": "1764324000",
    });
  });
  test("signed so that the reference implementation verifies it", () => {
    const secret = `whsec_${randomBytes(32).toString("base64")}`;
    const now = Math.floor(Date.now() / 1000);
    const headers = webhookHeaders(d, decodeSigningSecret(secret), now);
    assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
  });
});
