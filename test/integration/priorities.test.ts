// Priorities through the whole local stack: one runner, a queue kept busy, jobs submitted over HTTP
// with priorities start in priority order; the field on single submits, batch options and entries,
// retries; what the interface refuses.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import type { Job } from "../../core/jobs/records.js";
import { makeAudio, removeMediaDirs } from "../support/av.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { finished } from "../support/jobs.js";
import { streamEvents } from "../support/store.js";

describe("priorities through the local stack (one runner)", () => {
  let stack: TestStack;
  before(async () => {
    stack = await startTestStack({ executor: true, config: { executor: { local_concurrency: 1 } } });
    const put = async (key: string, path: string) =>
      stack.services.s3.send(
        new PutObjectCommand({
          Bucket: stack.bucket,
          Key: key,
          Body: await readFile(path),
          ContentType: "audio/wav",
        }),
      );
    // 40 minutes of audio to AAC keeps the runner busy (about 15 s of one core) until it is cancelled.
    await put("in/long.wav", await makeAudio({ durationSeconds: 2400, sampleRate: 8000, channels: 1 }));
    await put("in/short.wav", await makeAudio({ durationSeconds: 1, sampleRate: 8000, channels: 1 }));
  });
  after(async () => {
    await stack?.close();
    removeMediaDirs();
  });

  const convert = (dest: string, extra: Record<string, unknown> = {}) => ({
    source_bucket: stack.bucket,
    source_key: "in/short.wav",
    dest_bucket: stack.bucket,
    dest_key: dest,
    format: "mp3",
    ...extra,
  });

  async function submitted(
    body: Record<string, unknown>,
  ): Promise<{ job_id: string; queue_position: number }> {
    const res = await stack.request("/api/v1/jobs/audio/convert", { method: "POST", json: body });
    const json = (await res.json()) as { job_id: string; queue_position: number; error?: string };
    assert.equal(res.status, 202, json.error);
    return json;
  }

  /** Waits until the job is processing (the one runner is busy with it). */
  async function processing(id: string): Promise<void> {
    const deadline = Date.now() + 30_000;
    while ((await stack.services.store.getJob(id))?.status !== "processing") {
      if (Date.now() > deadline) assert.fail(`job ${id} never started`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  test("jobs with priorities 0, 10, -10, 50 submitted into a busy queue start as 50, 10, 0, -10", async () => {
    const busy = await submitted(convert("out/busy.aac", { source_key: "in/long.wav", format: "aac" }));
    await processing(busy.job_id);

    const p0 = await submitted(convert("out/p0.mp3", { priority: 0 }));
    const p10 = await submitted(convert("out/p10.mp3", { priority: 10 }));
    const m10 = await submitted(convert("out/m10.mp3", { priority: -10 }));
    const p50 = await submitted(convert("out/p50.mp3", { priority: 50 }));
    // Each answer counts the jobs ahead of it in the queue by this order, itself included.
    assert.deepEqual(
      [p0, p10, m10, p50].map((s) => s.queue_position),
      [1, 1, 3, 1],
    );

    const cancel = await stack.request(`/api/v1/jobs/${busy.job_id}/cancel`, { method: "POST" });
    assert.equal(cancel.status, 200);
    for (const s of [p0, p10, m10, p50]) {
      const job = await finished(stack, s.job_id);
      assert.equal(job.status, "completed", job.error);
    }
    // A run that fails transiently (the store slow to answer under load) is requeued and started
    // again: priority decides the order of first starts.
    const started = (await streamEvents(stack.services.store, "job.started")).map((e) => e.fields.job_id);
    const order = [...new Set(started)].filter((id) => [p0, p10, m10, p50].some((s) => s.job_id === id));
    assert.deepEqual(order, [p50.job_id, p10.job_id, p0.job_id, m10.job_id]);
    assert.equal((await stack.services.store.getJob(p50.job_id))?.priority, 50);
  });

  test("a batch's options give its entries a priority; an entry's own wins; a retry keeps it", async () => {
    const entry = (dest: string, extra: Record<string, unknown> = {}) => ({
      type: "audio_convert",
      source_bucket: stack.bucket,
      source_key: "in/missing.wav",
      dest_bucket: stack.bucket,
      dest_key: dest,
      parameters: { format: "mp3" },
      ...extra,
    });
    const res = await stack.request("/api/v1/jobs/batch", {
      method: "POST",
      json: { jobs: [entry("out/b1.mp3"), entry("out/b2.mp3", { priority: -3 })], options: { priority: 7 } },
    });
    assert.equal(res.status, 201);
    const { job_ids } = (await res.json()) as { job_ids: [string, string] };
    const [inherits, own] = await Promise.all(job_ids.map((id) => finished(stack, id)));
    assert.deepEqual([inherits!.priority, own!.priority], [7, -3]);
    assert.equal(inherits!.status, "failed", "its source does not exist");

    const retry = await stack.request(`/api/v1/jobs/${inherits!.id}/retry`, { method: "POST" });
    assert.equal(retry.status, 202);
    const { job_id } = (await retry.json()) as { job_id: string };
    assert.equal((await stack.services.store.getJob(job_id))?.priority, 7);
  });

  test("a priority outside -50..50, or not an integer, is refused with a 400 naming it", async () => {
    for (const priority of [51, -51, 1.5, "high"]) {
      const res = await stack.request("/api/v1/jobs/audio/convert", {
        method: "POST",
        json: convert("out/refused.mp3", { priority }),
      });
      assert.equal(res.status, 400, `priority ${JSON.stringify(priority)}`);
      assert.match(((await res.json()) as { error: string }).error, /priority/);
    }
    const batch = await stack.request("/api/v1/jobs/batch", {
      method: "POST",
      json: {
        jobs: [{ type: "image_colors", source_bucket: stack.bucket, source_key: "in/x.jpg" }],
        options: { priority: 100 },
      },
    });
    assert.equal(batch.status, 400);
    assert.match(((await batch.json()) as { error: string }).error, /priority/);
  });

  test("a job without a priority shows none", async () => {
    const plain = await submitted(convert("out/plain.mp3"));
    const job = (await (await stack.request(`/api/v1/jobs/${plain.job_id}`)).json()) as Job;
    assert.equal("priority" in job, false);
    await finished(stack, plain.job_id);
  });
});
