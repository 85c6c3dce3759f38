// Job control over HTTP, on a stack with no executor (jobs stay where the test puts them): retrying a
// failed job (a cancelled one included) submits a new job doing the same, marked retry_of; a completed
// or unfinished job cannot be retried; cancel answers 404, 409 and a repeat as documented; a completed
// job's output is one redirect away, through a presigned URL of the store.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { PutObjectCommand } from "@aws-sdk/client-s3";
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

describe("retry lineage", () => {
  type Answer = { job_id: string; status: string; message: string };
  const retry = async (id: string, json?: unknown) => {
    const res = await stack.request(`/api/v1/jobs/${id}/retry`, {
      method: "POST",
      ...(json !== undefined ? { json } : {}),
    });
    return { status: res.status, body: (await res.json()) as Answer };
  };
  const job = async (id: string) => (await (await stack.request(`/api/v1/jobs/${id}`)).json()) as Job;
  const cancelled = async () => {
    const id = await submit(stack, "image/resize", resizeBody());
    assert.equal((await post(`${id}/cancel`)).status, 200);
    return id;
  };

  test("a job retried before answers 200 with its retry and makes nothing; force makes another", async () => {
    const id = await cancelled();
    const first = await retry(id);
    assert.equal(first.status, 202);
    assert.equal((await job(id)).retried_as, first.body.job_id);
    const again = await retry(id, {});
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, {
      job_id: first.body.job_id,
      status: "pending",
      message: `job ${id} was retried already as ${first.body.job_id}; send {"force": true} to retry it again`,
    });
    const forced = await retry(id, { force: true });
    assert.equal(forced.status, 202);
    assert.notEqual(forced.body.job_id, first.body.job_id);
    assert.equal((await job(forced.body.job_id)).retry_of, id);
    assert.equal((await job(id)).retried_as, forced.body.job_id, "retried_as names the newest");
    assert.equal((await retry(id, { force: false })).body.job_id, forced.body.job_id);
  });

  test("concurrent retries of one job make one job; the others answer it", async () => {
    const id = await cancelled();
    const answers = await Promise.all(Array.from({ length: 10 }, () => retry(id)));
    const made = answers.filter((a) => a.status === 202);
    assert.equal(made.length, 1);
    for (const a of answers) assert.equal(a.body.job_id, made[0]!.body.job_id);
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 200, 200, 200, 200, 200, 200, 200, 200, 202]);
  });

  test("a body other than {force: boolean} is a 400 naming what is wrong", async () => {
    const id = await cancelled();
    const wrong = await retry(id, { force: "yes" });
    assert.equal(wrong.status, 400);
    assert.match((wrong.body as unknown as { error: string }).error, /force/);
    const extra = await retry(id, { forse: true });
    assert.equal(extra.status, 400);
    assert.match((extra.body as unknown as { error: string }).error, /forse/);
    assert.equal((await job(id)).retried_as, undefined, "nothing retried");
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

describe("output", () => {
  test("a completed job's output: 302 to a presigned URL that serves the object without a key", async () => {
    const body = Buffer.from("the output's bytes");
    const id = await submit(stack, "image/resize", { ...resizeBody(), dest_key: "out/linked.webp" });
    const pending = await stack.request(`/api/v1/jobs/${id}/output`, { redirect: "manual" });
    assert.equal(pending.status, 409);
    assert.deepEqual(await pending.json(), {
      error: `job ${id} is pending; its output exists once it has completed`,
    });

    await stack.services.s3.send(
      new PutObjectCommand({
        Bucket: stack.bucket,
        Key: "out/linked.webp",
        Body: body,
        ContentType: "image/webp",
      }),
    );
    await claimJob(stack.services.store, "image_resize", id);
    await stack.services.store.start(id, 60_000);
    await stack.services.store.complete(id, {});
    const res = await stack.request(`/api/v1/jobs/${id}/output`, { redirect: "manual" });
    assert.equal(res.status, 302);
    assert.equal(res.headers.get("cache-control"), "no-store");
    const location = new URL(res.headers.get("location")!);
    assert.equal(location.pathname, `/${stack.bucket}/out/linked.webp`);
    assert.equal(location.searchParams.get("X-Amz-Expires"), "900", "storage.output_link_expiry, 15m");
    const object = await fetch(location);
    assert.equal(object.status, 200);
    assert.equal(object.headers.get("content-type"), "image/webp");
    assert.deepEqual(Buffer.from(await object.arrayBuffer()), body);
    // The signature is the only credential: the same URL with another key is refused.
    location.pathname = `/${stack.bucket}/out/other.webp`;
    assert.equal((await fetch(location)).status, 403);
  });

  test("a job type that writes no file is 404, as is an unknown job", async () => {
    const id = await submit(stack, "image/colors", {
      source_bucket: stack.bucket,
      source_key: "in/photo.jpg",
    });
    const res = await stack.request(`/api/v1/jobs/${id}/output`, { redirect: "manual" });
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), { error: `job ${id} is image_colors, which writes no output file` });
    assert.equal(
      (await stack.request("/api/v1/jobs/no-such-job/output", { redirect: "manual" })).status,
      404,
    );
  });
});
