// Webhooks end to end with real HTTP receivers: jobs run by the local executor (sharp on generated
// images) and the notifier delivering their job and batch webhooks; signatures checked with the
// reference Standard Webhooks implementation; retries, 4xx, a notifier restart while the receiver is
// down, the address policy, and 500 webhooks held by a slow receiver while the API keeps answering.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import sharp from "sharp";
import { Webhook } from "standardwebhooks";
import type { Batch, Job } from "../../core/jobs/records.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { claimJob, ISO_MS_UTC } from "../support/store.js";
import {
  startWebhookReceiver,
  type ReceivedWebhook,
  type WebhookReceiver,
} from "../support/webhook-receiver.js";

const SECRET = `whsec_${randomBytes(32).toString("base64")}`;
const FAST_RETRIES = { retry_initial_delay: "100ms", retry_max_delay: "400ms", reclaim_after: "1s" };
type Body = Record<string, unknown>;

function verify(hook: ReceivedWebhook): unknown {
  return new Webhook(SECRET).verify(hook.body, {
    "webhook-id": String(hook.headers["webhook-id"]),
    "webhook-timestamp": String(hook.headers["webhook-timestamp"]),
    "webhook-signature": String(hook.headers["webhook-signature"]),
  });
}

async function submit(stack: TestStack, path: string, body: Body): Promise<string> {
  const res = await stack.request(`/api/v1/jobs/${path}`, { method: "POST", json: body });
  const json = (await res.json()) as { job_id: string; error?: string };
  assert.equal(res.status, 202, json.error);
  return json.job_id;
}

/** Polls until the job's (or batch's) webhook delivery is no longer pending (bounded). */
async function settled(
  stack: TestStack,
  kind: "job" | "batch",
  id: string,
  limitMs = 30_000,
): Promise<Job | Batch> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const record =
      kind === "job" ? await stack.services.store.getJob(id) : await stack.services.store.getBatch(id);
    const status = record?.webhook_delivery?.status;
    if (status === "delivered" || status === "failed") return record!;
    if (Date.now() > deadline) assert.fail(`${kind} ${id} webhook not settled: ${JSON.stringify(record)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function metric(stack: TestStack, result: string): Promise<number> {
  const text = await (await stack.request("/metrics")).text();
  const match = new RegExp(`^media_webhook_deliveries_total\\{result="${result}"\\} (\\d+)$`, "m").exec(text);
  return match ? Number(match[1]) : 0;
}

async function pendingInGroup(stack: TestStack): Promise<number> {
  const summary = (await stack.services.redis.xpending(stack.services.store.keys.events(), "notifier")) as [
    number,
  ];
  return Number(summary[0]);
}

describe("through the local stack", () => {
  let stack: TestStack;
  let receiver: WebhookReceiver;

  before(async () => {
    receiver = await startWebhookReceiver();
    stack = await startTestStack({
      executor: true,
      notifier: true,
      config: { webhooks: { allow_private: true, signing_secret: SECRET, ...FAST_RETRIES } },
    });
    const png = await sharp({
      create: { width: 64, height: 48, channels: 3, background: { r: 10, g: 120, b: 200 } },
    })
      .png()
      .toBuffer();
    await stack.services.s3.send(
      new PutObjectCommand({ Bucket: stack.bucket, Key: "in/photo.png", Body: png }),
    );
  });
  after(async () => {
    await stack?.close();
    await receiver?.close();
  });

  const colors = (extra: Body = {}) => ({
    source_bucket: stack.bucket,
    source_key: "in/photo.png",
    ...extra,
  });
  const hooksTo = (path: string) => receiver.received.filter((r) => r.path === path);

  test("default style, completed: the documented payload field by field, signed, recorded as delivered", async () => {
    const id = await submit(
      stack,
      "image/colors",
      colors({ webhook_url: `${receiver.url}/done`, request_id: "req-7" }),
    );
    const record = (await settled(stack, "job", id)) as Job;
    const [hook] = hooksTo("/done");
    assert.ok(hook);
    assert.equal(hooksTo("/done").length, 1);
    assert.deepEqual(verify(hook), hook.json, "signature verifies with the reference implementation");
    assert.match(String(hook.headers["content-type"]), /^application\/json/);
    assert.equal(hook.headers["webhook-id"], record.webhook_delivery?.id);
    assert.match(String(hook.headers["webhook-id"]), /^msg_\d+-\d+$/);
    assert.deepEqual(hook.json, {
      event: "job.completed",
      timestamp: record.completed_at,
      job: {
        id,
        type: "image_colors",
        status: "completed",
        state: "completed",
        result: record.result,
        request_id: "req-7",
        created_at: record.created_at,
        completed_at: record.completed_at,
        duration_seconds: record.duration_seconds,
      },
    });
    const result = record.result as { colors: string[]; percentages: number[] };
    assert.ok(result.colors.length >= 1 && result.colors.length === result.percentages.length);
    assert.equal(record.webhook_delivery?.status, "delivered");
    assert.equal(record.webhook_delivery?.attempts, 1);
    assert.equal(record.webhook_delivery?.last_status_code, 200);
    assert.equal(record.webhook_delivery?.last_result, `${receiver.url} answered 200`);
    assert.match(record.webhook_delivery?.delivered_at ?? "", ISO_MS_UTC);

    // The API shows the delivery on the job too.
    const res = await stack.request(`/api/v1/jobs/${id}`);
    const body = (await res.json()) as { webhook_delivery?: { status: string; id: string } };
    assert.equal(body.webhook_delivery?.status, "delivered");
    assert.equal(body.webhook_delivery?.id, hook.headers["webhook-id"]);
  });

  test("default style, failed: the error instead of a result", async () => {
    const id = await submit(
      stack,
      "image/colors",
      colors({ source_key: "in/missing.png", webhook_url: `${receiver.url}/failed` }),
    );
    const record = (await settled(stack, "job", id)) as Job;
    const [hook] = hooksTo("/failed");
    assert.ok(hook && record.error);
    verify(hook);
    const job = (hook.json as { job: Body }).job;
    assert.deepEqual(hook.json, {
      event: "job.failed",
      timestamp: record.completed_at,
      job: {
        id,
        type: "image_colors",
        status: "failed",
        state: "failed",
        error: record.error,
        request_id: record.request_id,
        created_at: record.created_at,
        completed_at: record.completed_at,
        ...(record.duration_seconds !== undefined ? { duration_seconds: record.duration_seconds } : {}),
      },
    });
    assert.match(String(job.error), /not found/);
    assert.equal(typeof job.request_id, "string", "the request's id when the caller gave none");
  });

  test("chat style: a Slack-compatible {text, blocks} message, signed the same way", async () => {
    const id = await submit(
      stack,
      "image/colors",
      colors({ webhook_url: `${receiver.url}/chat`, webhook_style: "chat" }),
    );
    await settled(stack, "job", id);
    const [hook] = hooksTo("/chat");
    assert.ok(hook);
    verify(hook);
    const body = hook.json as {
      text: string;
      blocks: Array<{ type: string; text?: { type: string; text: string } }>;
    };
    assert.deepEqual(Object.keys(body).sort(), ["blocks", "text"]);
    assert.match(body.text, new RegExp(`image_colors job ${id} completed`));
    assert.ok(body.blocks.length >= 2);
    for (const block of body.blocks) assert.ok(["section", "context"].includes(block.type));
    assert.match(JSON.stringify(body.blocks), /\*Colors\*\\n#[0-9a-f]{6}/);
  });

  test("batch: one batch.completed per batch, exactly the documented fields, for completed, failed and partial", async () => {
    const ok = { type: "image_colors", source_bucket: stack.bucket, source_key: "in/photo.png" };
    const bad = { ...ok, source_key: "in/nothing.png" };
    const cases = [
      { path: "/batch-completed", jobs: [ok, ok], status: "completed", completed: 2, failed: 0 },
      { path: "/batch-failed", jobs: [bad], status: "failed", completed: 0, failed: 1 },
      { path: "/batch-partial", jobs: [ok, bad, ok], status: "partial", completed: 2, failed: 1 },
    ];
    const ids: string[] = [];
    for (const c of cases) {
      const res = await stack.request("/api/v1/jobs/batch", {
        method: "POST",
        json: { jobs: c.jobs, options: { webhook_url: `${receiver.url}${c.path}` } },
      });
      assert.equal(res.status, 201);
      ids.push(((await res.json()) as { batch_id: string }).batch_id);
    }
    for (const [i, c] of cases.entries()) {
      const batch = (await settled(stack, "batch", ids[i]!)) as Batch;
      const hooks = hooksTo(c.path);
      assert.equal(hooks.length, 1, c.path);
      verify(hooks[0]!);
      assert.deepEqual(hooks[0]!.json, {
        event: "batch.completed",
        timestamp: batch.completed_at,
        batch: {
          id: ids[i],
          status: c.status,
          total_jobs: c.jobs.length,
          completed: c.completed,
          failed: c.failed,
        },
      });
      assert.equal(batch.webhook_delivery?.status, "delivered");
    }
  });
});

describe("delivery", () => {
  let stack: TestStack;

  before(async () => {
    stack = await startTestStack({
      notifier: true,
      config: { webhooks: { allow_private: true, signing_secret: SECRET, timeout: "60s", ...FAST_RETRIES } },
    });
  });
  after(async () => {
    await stack?.close();
  });

  /** Submits jobs through the API and completes them through the store, as an executor would. */
  async function completeJobs(bodies: Body[]): Promise<string[]> {
    const ids: string[] = [];
    for (const body of bodies) {
      ids.push(
        await submit(stack, "image/colors", { source_bucket: stack.bucket, source_key: "in/x.png", ...body }),
      );
    }
    for (const id of ids) {
      await claimJob(stack.services.store, "image_colors", id);
      await stack.services.store.start(id, 60_000);
      await stack.services.store.complete(id, { colors: ["#000000"], percentages: [100] });
    }
    return ids;
  }

  test("a receiver failing 3 times (500, 503, 429) then succeeding gets one accepted delivery, same id throughout", async () => {
    const before = { retry: await metric(stack, "retry"), delivered: await metric(stack, "delivered") };
    const answers = [
      { status: 500 },
      { status: 503 },
      { status: 429, headers: { "retry-after": "0" } },
      { status: 200 },
    ];
    const receiver = await startWebhookReceiver({ answer: (n) => answers[Math.min(n, 3)]! });
    try {
      const [id] = await completeJobs([{ webhook_url: `${receiver.url}/flaky` }]);
      const record = (await settled(stack, "job", id!)) as Job;
      assert.equal(receiver.received.length, 4);
      assert.equal(receiver.accepted().length, 1);
      const ids = new Set(receiver.received.map((r) => r.headers["webhook-id"]));
      assert.deepEqual([...ids], [record.webhook_delivery?.id]);
      assert.equal(new Set(receiver.received.map((r) => r.body)).size, 1, "the same body on every attempt");
      for (const hook of receiver.received) verify(hook);
      assert.equal(record.webhook_delivery?.status, "delivered");
      assert.equal(record.webhook_delivery?.attempts, 4);
      assert.equal(await metric(stack, "retry"), before.retry + 3);
      assert.equal(await metric(stack, "delivered"), before.delivered + 1);
    } finally {
      await receiver.close();
    }
  });

  test("a job cancelled by request gets its webhook as a failed job, with the cancellation as its error", async () => {
    const receiver = await startWebhookReceiver();
    try {
      const id = await submit(stack, "image/colors", {
        source_bucket: stack.bucket,
        source_key: "in/x.png",
        webhook_url: `${receiver.url}/cancelled`,
      });
      const res = await stack.request(`/api/v1/jobs/${id}/cancel`, { method: "POST" });
      assert.equal(res.status, 200);
      const record = (await settled(stack, "job", id)) as Job;
      assert.equal(record.webhook_delivery?.status, "delivered");
      const [hook] = receiver.received;
      assert.ok(hook);
      verify(hook);
      assert.deepEqual(hook.json, {
        event: "job.failed",
        timestamp: record.completed_at,
        job: {
          id,
          type: "image_colors",
          status: "failed",
          state: "cancelled",
          error: "cancelled by request",
          request_id: record.request_id,
          created_at: record.created_at,
          completed_at: record.completed_at,
        },
      });
    } finally {
      await receiver.close();
    }
  });

  test("a 4xx is not retried: one request, recorded as failed, the event acknowledged", async () => {
    const receiver = await startWebhookReceiver({ answer: () => ({ status: 404 }) });
    try {
      const [id] = await completeJobs([{ webhook_url: `${receiver.url}/gone` }]);
      const record = (await settled(stack, "job", id!)) as Job;
      assert.equal(record.webhook_delivery?.status, "failed");
      assert.equal(record.webhook_delivery?.attempts, 1);
      assert.equal(record.webhook_delivery?.last_status_code, 404);
      assert.equal(record.webhook_delivery?.next_attempt_at, undefined);
      assert.equal(receiver.received.length, 1);
      assert.equal(await pendingInGroup(stack), 0, "nothing left to deliver");
    } finally {
      await receiver.close();
    }
  });

  test("a receiver that is down while the notifier restarts still gets its webhook, with the same id", async () => {
    const placeholder = await startWebhookReceiver();
    const port = placeholder.port;
    await placeholder.close();
    const [id] = await completeJobs([{ webhook_url: `http://127.0.0.1:${port}/later` }]);
    // Wait for a failed attempt to be on record, then restart the notifier while the receiver is down.
    let failedOnce: Job | undefined;
    for (const deadline = Date.now() + 30_000; !failedOnce;) {
      const job = await stack.services.store.getJob(id!);
      if ((job?.webhook_delivery?.attempts ?? 0) >= 1) failedOnce = job;
      else if (Date.now() > deadline) assert.fail("no failed attempt recorded");
      else await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(failedOnce.webhook_delivery?.status, "pending");
    assert.match(failedOnce.webhook_delivery?.last_result ?? "", /ECONNREFUSED|could not deliver/);
    await stack.notifier!.stop();
    const receiver = await startWebhookReceiver({ port });
    const restarted = await stack.startNotifier();
    try {
      const record = (await settled(stack, "job", id!)) as Job;
      assert.equal(record.webhook_delivery?.status, "delivered");
      assert.equal(receiver.accepted().length, 1);
      assert.equal(receiver.received[0]!.headers["webhook-id"], failedOnce.webhook_delivery?.id);
      assert.ok(record.webhook_delivery.attempts >= 2);
    } finally {
      await restarted.stop();
      await receiver.close();
    }
  });

  test("500 webhooks held by a slow receiver: the API keeps answering, and each is delivered once", async () => {
    const receiver = await startWebhookReceiver({ answer: () => ({ status: 200, hold: true }) });
    const notifier = await stack.startNotifier();
    try {
      const ids: string[] = [];
      for (let b = 0; b < 5; b++) {
        const jobs = Array.from({ length: 100 }, () => ({
          type: "image_colors",
          source_bucket: stack.bucket,
          source_key: "in/x.png",
          webhook_url: `${receiver.url}/slow`,
        }));
        const res = await stack.request("/api/v1/jobs/batch", { method: "POST", json: { jobs } });
        assert.equal(res.status, 201);
        ids.push(...((await res.json()) as { job_ids: string[] }).job_ids);
      }
      for (const id of ids) {
        await claimJob(stack.services.store, "image_colors", id);
        await stack.services.store.start(id, 60_000);
        await stack.services.store.complete(id, { colors: ["#000000"], percentages: [100] });
      }
      await receiver.waitFor(8);
      // Every delivery slot to this receiver is now taken and none is answered; the API is unaffected.
      for (let i = 0; i < 20; i++) {
        const id = await submit(stack, "image/colors", {
          source_bucket: stack.bucket,
          source_key: "in/y.png",
        });
        const res = await stack.request(`/api/v1/jobs/${id}`);
        assert.equal(res.status, 200);
      }
      assert.ok(receiver.accepted().length === 0, "no webhook was answered while the API was used");
      receiver.release();
      await receiver.waitFor(500, 60_000);
      for (const id of ids)
        assert.equal(((await settled(stack, "job", id)) as Job).webhook_delivery?.status, "delivered");
      const distinct = new Set(receiver.received.map((r) => r.headers["webhook-id"]));
      assert.equal(distinct.size, 500);
      assert.equal(receiver.accepted().length, 500);
    } finally {
      await notifier.stop();
      await receiver.close();
    }
  });
});

describe("address policy (the chart's default: private targets refused)", () => {
  let stack: TestStack;
  let receiver: WebhookReceiver;

  before(async () => {
    receiver = await startWebhookReceiver();
    // allow_private unset, as in the Helm chart: only the local stack (`start`) allows private targets.
    stack = await startTestStack({ notifier: true, config: { webhooks: { ...FAST_RETRIES } } });
  });
  after(async () => {
    await stack?.close();
    await receiver?.close();
  });

  test("loopback targets, by address or by a name resolving to one, are refused and never contacted", async () => {
    assert.equal(stack.config.webhooks.allowPrivate, undefined);
    const before = await metric(stack, "refused");
    const urls = [`${receiver.url}/by-ip`, `http://localhost:${receiver.port}/by-name`];
    const ids: string[] = [];
    for (const webhook_url of urls) {
      ids.push(
        await submit(stack, "image/colors", {
          source_bucket: stack.bucket,
          source_key: "in/x.png",
          webhook_url,
        }),
      );
    }
    for (const id of ids) {
      await claimJob(stack.services.store, "image_colors", id);
      await stack.services.store.start(id, 60_000);
      await stack.services.store.fail(id, "broken");
    }
    for (const id of ids) {
      const record = (await settled(stack, "job", id)) as Job;
      assert.equal(record.webhook_delivery?.status, "failed");
      assert.equal(record.webhook_delivery?.attempts, 1, "refusals are not retried");
      assert.match(
        record.webhook_delivery?.last_result ?? "",
        /loopback address; webhooks\.allow_private is false/,
      );
    }
    assert.equal(receiver.received.length, 0);
    assert.equal(await metric(stack, "refused"), before + 2);
  });
});
