// Job control over HTTP, on a stack with no executor (jobs stay where the test puts them): retrying a
// failed job (a cancelled one included) submits a new job doing the same, marked retry_of; a completed
// or unfinished job cannot be retried; cancel answers 404, 409 and a repeat as documented.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Job } from "../../core/jobs/records.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { submit } from "../support/jobs.js";
import { claimJob } from "../support/store.js";

let stack: TestStack;
before(async () => {
  stack = await startTestStack();
});
after(async () => {
  await stack?.close();
});

const post = (path: string, headers: Record<string, string> = {}) =>
  stack.request(`/api/v1/jobs/${path}`, { method: "POST", headers });

const resizeBody = () => ({
  source_bucket: stack.bucket,
  source_key: "in/photo.jpg",
  dest_bucket: stack.bucket,
  dest_key: "out/photo.webp",
  width: 320,
  height: 200,
  format: "webp",
  webhook_url: "https://hooks.example.com/media",
  webhook_style: "slack",
  timeout_seconds: 60,
});

describe("retry", () => {
  test("a cancelled job comes back as a new pending job doing the same, marked retry_of", async () => {
    const id = await submit(stack, "image/resize", resizeBody());
    assert.equal((await post(`${id}/cancel`)).status, 200);
    const res = await post(`${id}/retry`, { "x-request-id": "retry-1" });
    assert.equal(res.status, 202);
    const answer = (await res.json()) as {
      job_id: string;
      status: string;
      message: string;
      queue_position: number;
    };
    assert.notEqual(answer.job_id, id);
    assert.equal(answer.status, "pending");
    assert.equal(answer.message, `image_resize job queued (retry of ${id})`);
    assert.equal(answer.queue_position, 1);

    const [original, retried] = (await Promise.all(
      [id, answer.job_id].map(async (j) => (await stack.request(`/api/v1/jobs/${j}`)).json()),
    )) as [Job, Job];
    assert.equal(retried.retry_of, id);
    assert.equal(retried.status, "pending");
    assert.equal(retried.request_id, "retry-1");
    for (const field of [
      "type",
      "source_bucket",
      "source_key",
      "dest_bucket",
      "dest_key",
      "parameters",
      "webhook_url",
      "webhook_style",
      "timeout_seconds",
    ] as const) {
      assert.deepEqual(retried[field], original[field], field);
    }
    assert.equal(original.retry_of, undefined);
  });

  test("a job that failed on its own can be retried; a completed, pending or unknown one cannot", async () => {
    const failed = await submit(stack, "image/resize", resizeBody());
    await claimJob(stack.services.store, "image_resize", failed);
    await stack.services.store.start(failed, 60_000);
    await stack.services.store.fail(failed, `source s3://${stack.bucket}/in/photo.jpg not found`);
    assert.equal((await post(`${failed}/retry`)).status, 202);

    const pending = await submit(stack, "image/resize", resizeBody());
    const notYet = await post(`${pending}/retry`);
    assert.equal(notYet.status, 409);
    assert.deepEqual(await notYet.json(), {
      error: `job ${pending} is pending; only a failed job can be retried`,
    });

    await claimJob(stack.services.store, "image_resize", pending);
    await stack.services.store.start(pending, 60_000);
    await stack.services.store.complete(pending, {});
    assert.equal((await post(`${pending}/retry`)).status, 409);
    assert.equal((await post("no-such-job/retry")).status, 404);
  });
});

describe("cancel answers", () => {
  test("a pending job is cancelled once; a repeat answers the same record; failed on its own is 409", async () => {
    const id = await submit(stack, "image/resize", resizeBody());
    const first = await post(`${id}/cancel`);
    assert.equal(first.status, 200);
    const record = (await first.json()) as Job;
    assert.deepEqual(
      [record.status, record.error, record.started_at],
      ["failed", "cancelled by request", undefined],
    );
    const again = await post(`${id}/cancel`);
    assert.equal(again.status, 200);
    assert.deepEqual(await again.json(), record);

    const broken = await submit(stack, "image/resize", resizeBody());
    await stack.services.store.fail(broken, "the runner reported a permanent failure");
    const conflict = await post(`${broken}/cancel`);
    assert.equal(conflict.status, 409);
    assert.match(((await conflict.json()) as { error: string }).error, /has already failed/);
    assert.equal((await post("no-such-job/cancel")).status, 404);
    assert.equal((await post("batch/no-such-batch/cancel")).status, 404);
  });
});
