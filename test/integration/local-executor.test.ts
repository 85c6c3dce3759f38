// Jobs through the whole local stack: the API, the store, the local executor and its runner
// processes, the embedded S3-protocol store, sharp and ffmpeg. Media is generated here.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import sharp from "sharp";
import { LocalExecutor } from "../../controller/local-executor.js";
import { runnerEntry } from "../../controller/runner-process.js";
import { RESOLVED_CONFIG_ENV } from "../../core/config/load.js";
import type { Job } from "../../core/jobs/records.js";
import type { JobType } from "../../core/jobs/types.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { finished, submit } from "../support/jobs.js";
import { startTestRedis, type TestRedis } from "../support/redis.js";
import { openStream } from "../support/sse.js";
import { streamEvents } from "../support/store.js";

const run = promisify(execFile);

/** The pid of the runner process that runs a job, once the job is processing. */
async function runnerOnceProcessing(stack: TestStack, id: string): Promise<number> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const job = await stack.services.store.getJob(id);
    const pid = job?.status === "processing" ? stack.executor!.runnerPid(id) : undefined;
    if (pid) return pid;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`job ${id} never started in a runner process`);
}

/**
 * The pid of the runner process of a job once its ffmpeg converts: the runner is in the middle of
 * the job's work, which a cancellation must stop.
 */
async function runnerConverting(stack: TestStack, id: string): Promise<number> {
  const pid = await runnerOnceProcessing(stack, id);
  const deadline = Date.now() + 30_000;
  while (!processGroup(pid).some((p) => p.command === "ffmpeg")) {
    if (Date.now() > deadline) throw new Error(`job ${id}'s runner never started ffmpeg`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return pid;
}

/**
 * A cancelled job's runner process group is gone and the executor runs nothing for the job. With
 * `runnerMayStay`, for a job that may have ended before its runner began its work (the runner then
 * goes back to the pool): nothing but the runner itself is left in its group.
 */
async function waitUntilGone(
  pid: number,
  stack: TestStack,
  id: string,
  options: { runnerMayStay?: boolean } = {},
): Promise<void> {
  const left = () => {
    const group = processGroup(pid);
    return options.runnerMayStay ? group.filter((p) => p.pid !== pid) : group;
  };
  const limit = Date.now() + 15_000;
  while (Date.now() < limit && (left().length > 0 || stack.executor!.runnerPid(id) !== undefined)) {
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.deepEqual(left(), [], "no process of the cancelled job's runner is left");
  assert.equal(stack.executor!.runnerPid(id), undefined);
}

/** media_jobs_cancelled_total of audio_convert, from /metrics. */
async function cancelledMetric(stack: TestStack): Promise<number> {
  const text = await (await stack.request("/metrics")).text();
  const match = /^media_jobs_cancelled_total\{type="audio_convert"\} (\d+)$/m.exec(text);
  assert.ok(match, "media_jobs_cancelled_total is served");
  return Number(match[1]);
}

/** The executor still runs jobs: a small one completes. */
async function assertStillRunsJobs(stack: TestStack): Promise<void> {
  const next = await submit(stack, "image/colors", {
    source_bucket: stack.bucket,
    source_key: "in/small.jpg",
  });
  assert.equal((await finished(stack, next)).status, "completed");
}

/**
 * The live processes of the process group led by `pgid`, with their commands. Zombies do not count: in a
 * container whose first process reaps nothing, a killed ffmpeg stays one, dead but listed.
 */
function processGroup(pgid: number): Array<{ pid: number; command: string }> {
  const members: Array<{ pid: number; command: string }> = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // ended meanwhile
    }
    // pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so read after the last ")".
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(pgrp) === pgid && state !== "Z") {
      members.push({ pid: Number(entry), command: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")) });
    }
  }
  return members;
}

async function put(stack: TestStack, key: string, body: Buffer, contentType = "application/octet-stream") {
  await stack.services.s3.send(
    new PutObjectCommand({ Bucket: stack.bucket, Key: key, Body: body, ContentType: contentType }),
  );
}

async function get(stack: TestStack, key: string): Promise<{ body: Buffer; contentType?: string }> {
  const res = await stack.services.s3.send(new GetObjectCommand({ Bucket: stack.bucket, Key: key }));
  return {
    body: Buffer.from(await res.Body!.transformToByteArray()),
    ...(res.ContentType ? { contentType: res.ContentType } : {}),
  };
}

async function exists(stack: TestStack, key: string): Promise<boolean> {
  try {
    await stack.services.s3.send(new HeadObjectCommand({ Bucket: stack.bucket, Key: key }));
    return true;
  } catch {
    return false;
  }
}

const jpeg = (width: number, height: number, color = { r: 200, g: 60, b: 30 }) =>
  sharp({ create: { width, height, channels: 3, background: color } })
    .jpeg()
    .toBuffer();

/** A WAV of `seconds` of a sine tone, made by ffmpeg. */
async function wav(seconds: number, sampleRate = 8000): Promise<Buffer> {
  const dir = await mkdtemp(join(tmpdir(), "media-service-wav-"));
  const path = join(dir, "tone.wav");
  await run("ffmpeg", [
    "-v",
    "error",
    "-f",
    "lavfi",
    "-i",
    `sine=frequency=440:sample_rate=${sampleRate}:duration=${seconds}`,
    "-ac",
    "1",
    path,
  ]);
  const body = await readFile(path);
  await rm(dir, { recursive: true, force: true });
  return body;
}

describe("jobs through the local stack", () => {
  let stack: TestStack;
  before(async () => {
    stack = await startTestStack({ executor: true });
  });
  after(async () => {
    await stack?.close();
  });

  test("an image is resized end to end: output object, content type, result shape", async () => {
    await put(stack, "in/photo.jpg", await jpeg(1200, 800), "image/jpeg");
    const id = await submit(stack, "image/resize", {
      source_bucket: stack.bucket,
      source_key: "in/photo.jpg",
      dest_bucket: stack.bucket,
      dest_key: "out/photo.webp",
      width: 300,
      height: 200,
      format: "webp",
    });
    const job = await finished(stack, id);
    assert.equal(job.status, "completed", job.error);
    const result = job.result as {
      output_url: string;
      file_size: number;
      duration: number;
      metadata: Record<string, unknown>;
    };
    assert.equal(result.output_url, `${stack.s3.url}/${stack.bucket}/out/photo.webp`);
    assert.deepEqual(result.metadata, { width: 300, height: 200, format: "webp" });
    assert.equal(typeof result.duration, "number");
    const out = await get(stack, "out/photo.webp");
    assert.equal(out.contentType, "image/webp");
    assert.equal(result.file_size, out.body.length);
    const meta = await sharp(out.body).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ["webp", 300, 200]);
    assert.equal(job.attempts, 1);
    assert.ok(job.completed_at && job.started_at && typeof job.duration_seconds === "number");
  });

  test("a missing source fails the job with a message naming it, and writes nothing", async () => {
    const id = await submit(stack, "image/resize", {
      source_bucket: stack.bucket,
      source_key: "in/absent.jpg",
      dest_bucket: stack.bucket,
      dest_key: "out/absent.jpg",
      width: 10,
      height: 10,
    });
    const job = await finished(stack, id);
    assert.equal(job.status, "failed");
    assert.equal(job.error, `source s3://${stack.bucket}/in/absent.jpg not found`);
    assert.equal(await exists(stack, "out/absent.jpg"), false);
    assert.equal(job.attempts, 1, "a permanent error is not retried");
  });

  test("a burst of 100 jobs all complete, each started exactly once", async () => {
    await put(stack, "in/small.jpg", await jpeg(320, 240), "image/jpeg");
    const res = await stack.request("/api/v1/jobs/batch", {
      method: "POST",
      json: {
        jobs: Array.from({ length: 100 }, (_, i) => ({
          type: "image_resize",
          source_bucket: stack.bucket,
          source_key: "in/small.jpg",
          dest_bucket: stack.bucket,
          dest_key: `out/burst/${i}.jpg`,
          parameters: { width: 64, height: 48 },
        })),
      },
    });
    assert.equal(res.status, 201);
    const { batch_id, job_ids } = (await res.json()) as { batch_id: string; job_ids: string[] };
    const jobs = await Promise.all(job_ids.map((id) => finished(stack, id, 180_000)));
    assert.deepEqual(
      jobs.filter((j) => j.status !== "completed").map((j) => j.error),
      [],
      "every job completed",
    );
    assert.ok(jobs.every((j) => j.attempts === 1));
    const starts = (await streamEvents(stack.services.store, "job.started")).filter((e) =>
      job_ids.includes(e.fields.job_id!),
    );
    assert.equal(starts.length, 100, "no job was started twice");
    assert.equal(new Set(starts.map((e) => e.fields.job_id)).size, 100);
    const batch = await stack.services.store.getBatch(batch_id);
    assert.equal(batch?.status, "completed");
    assert.equal(batch?.completed, 100);
    for (const i of [0, 57, 99]) {
      const meta = await sharp((await get(stack, `out/burst/${i}.jpg`)).body).metadata();
      assert.deepEqual([meta.width, meta.height], [64, 48]);
    }
    const stats = await stack.services.store.queueStats();
    assert.equal(stats.total_pending + stats.total_processing, 0, "nothing left queued or running");
  });

  test("a job that overruns its timeout_seconds is failed and its runner replaced", async () => {
    await put(stack, "in/long.wav", await wav(1200), "audio/wav");
    const id = await submit(stack, "audio/convert", {
      source_bucket: stack.bucket,
      source_key: "in/long.wav",
      dest_bucket: stack.bucket,
      dest_key: "out/long.mp3",
      format: "mp3",
      timeout_seconds: 1,
    });
    const job = await finished(stack, id);
    assert.equal(job.status, "failed");
    assert.match(job.error ?? "", /timed out after 1 s \(timeout_seconds\)/);
    assert.equal(await exists(stack, "out/long.mp3"), false);
    await assertStillRunsJobs(stack);
  });

  test("a long conversion streams real progress over SSE, then complete", async () => {
    const id = await submit(stack, "audio/convert", {
      source_bucket: stack.bucket,
      source_key: "in/long.wav",
      dest_bucket: stack.bucket,
      dest_key: "out/progress.ogg",
      format: "ogg",
    });
    const stream = await openStream(`${stack.baseUrl}/api/v1/jobs/${id}/stream`);
    await stream.closed;
    const progress = stream.events
      .filter((e) => e.event === "progress")
      .map((e) => (e.json as { percent: number }).percent);
    assert.ok(progress.length >= 3, `progress events: ${JSON.stringify(progress)}`);
    assert.ok(
      progress.every((p, i) => i === 0 || p > progress[i - 1]!),
      `percent only increases: ${JSON.stringify(progress)}`,
    );
    assert.ok(
      progress.some((p) => p > 5 && p < 95),
      "percent between download and upload (ffmpeg's own)",
    );
    const last = stream.events.at(-1)!;
    assert.equal(last.event, "complete");
    assert.equal((last.json as { status: string }).status, "completed");
  });

  // The cancellations below convert 40 minutes of audio to AAC, about 15 s of one core here (to MP3 it
  // is under 2 s), and cancel once ffmpeg runs: every runner is stopped in the middle of its work.
  test("a fail_fast batch stopped by a failure stops its running job: runner and ffmpeg gone, nothing uploaded", async () => {
    await put(stack, "in/cancel.wav", await wav(2400), "audio/wav");
    const entry = (dest: string, extra: Record<string, unknown>) => ({
      type: "audio_convert",
      source_bucket: stack.bucket,
      source_key: "in/cancel.wav",
      dest_bucket: stack.bucket,
      dest_key: dest,
      parameters: { format: "aac" },
      ...extra,
    });
    // The second job runs out of its time first and fails the batch while the first still converts.
    const res = await stack.request("/api/v1/jobs/batch", {
      method: "POST",
      json: {
        jobs: [entry("out/cancel-long.aac", {}), entry("out/cancel-short.aac", { timeout_seconds: 2 })],
        options: { fail_fast: true },
      },
    });
    assert.equal(res.status, 201);
    const { batch_id, job_ids } = (await res.json()) as { batch_id: string; job_ids: string[] };
    const [long, short] = job_ids as [string, string];
    // The other job's 2 s may run out before this one's ffmpeg starts (a loaded machine downloads
    // its source slowly): its runner is taken whatever it was doing.
    const pid = await runnerOnceProcessing(stack, long);

    const failed = await finished(stack, short);
    assert.match(failed.error ?? "", /timed out after 2 s \(timeout_seconds\)/);
    const cancelled = await finished(stack, long);
    assert.equal(cancelled.status, "failed");
    assert.equal(cancelled.error, `cancelled: batch ${batch_id} stopped by the failure of job ${short}`);
    // The runner's process group (the runner and its ffmpeg) is gone, long before the conversion
    // would have ended, and the executor runs nothing for the job any more.
    await waitUntilGone(pid, stack, long, { runnerMayStay: true });
    assert.equal(await exists(stack, "out/cancel-long.aac"), false, "nothing uploaded");
    assert.equal((await stack.services.store.getJob(long))?.status, "failed");
    assert.equal((await stack.services.store.getBatch(batch_id))?.status, "failed");
    await assertStillRunsJobs(stack);
  });

  test("POST /jobs/{id}/cancel stops a running conversion: failed at once, runner and ffmpeg gone, nothing uploaded", async () => {
    await put(stack, "in/cancel-me.wav", await wav(2400), "audio/wav");
    const id = await submit(stack, "audio/convert", {
      source_bucket: stack.bucket,
      source_key: "in/cancel-me.wav",
      dest_bucket: stack.bucket,
      dest_key: "out/cancel-me.aac",
      format: "aac",
    });
    const stream = await openStream(`${stack.baseUrl}/api/v1/jobs/${id}/stream`);
    const pid = await runnerConverting(stack, id);
    const before = await cancelledMetric(stack);

    const res = await stack.request(`/api/v1/jobs/${id}/cancel`, { method: "POST" });
    assert.equal(res.status, 200);
    const job = (await res.json()) as Job;
    assert.deepEqual([job.id, job.status, job.error], [id, "failed", "cancelled by request"]);
    assert.ok(job.cancelled_at && job.started_at, "cancelled after it started");
    await stream.closed;
    const last = stream.events.at(-1)!;
    assert.equal(last.event, "complete");
    assert.deepEqual(
      [(last.json as Job).status, (last.json as Job).error],
      ["failed", "cancelled by request"],
    );

    await waitUntilGone(pid, stack, id);
    assert.equal(await exists(stack, "out/cancel-me.aac"), false, "nothing uploaded");
    assert.equal((await stack.services.store.getJob(id))?.error, "cancelled by request");
    assert.equal(await cancelledMetric(stack), before + 1);

    // Again: nothing changes. An unknown job is 404, a completed one 409.
    const again = await stack.request(`/api/v1/jobs/${id}/cancel`, { method: "POST" });
    assert.equal(again.status, 200);
    assert.deepEqual(await again.json(), await stack.services.store.getJob(id));
    assert.equal((await stack.request(`/api/v1/jobs/no-such-job/cancel`, { method: "POST" })).status, 404);
    const done = await submit(stack, "image/colors", {
      source_bucket: stack.bucket,
      source_key: "in/small.jpg",
    });
    assert.equal((await finished(stack, done)).status, "completed");
    const conflict = await stack.request(`/api/v1/jobs/${done}/cancel`, { method: "POST" });
    assert.equal(conflict.status, 409);
    assert.match(((await conflict.json()) as { error: string }).error, /has already completed/);
  });

  test("a cancelled pending job never starts; a batch's cancel takes every unfinished job", async () => {
    // Both runners busy with long conversions: the batch's third job waits.
    const entry = (n: number) => ({
      type: "audio_convert",
      source_bucket: stack.bucket,
      source_key: "in/cancel-me.wav",
      dest_bucket: stack.bucket,
      dest_key: `out/cancel-batch-${n}.aac`,
      parameters: { format: "aac" },
    });
    const res = await stack.request("/api/v1/jobs/batch", {
      method: "POST",
      json: { jobs: [1, 2, 3].map(entry) },
    });
    assert.equal(res.status, 201);
    const { batch_id, job_ids } = (await res.json()) as { batch_id: string; job_ids: string[] };
    const [first, second, waiting] = job_ids as [string, string, string];
    const pids = [await runnerConverting(stack, first), await runnerConverting(stack, second)];
    const cancelWaiting = await stack.request(`/api/v1/jobs/${waiting}/cancel`, { method: "POST" });
    assert.equal(cancelWaiting.status, 200);
    assert.equal(((await cancelWaiting.json()) as Job).started_at, undefined);

    const cancelBatch = await stack.request(`/api/v1/jobs/batch/${batch_id}/cancel`, { method: "POST" });
    assert.equal(cancelBatch.status, 200);
    const { batch } = (await cancelBatch.json()) as {
      batch: { status: string; failed: number; cancelled_at?: string };
    };
    assert.deepEqual([batch.status, batch.failed, Boolean(batch.cancelled_at)], ["failed", 3, true]);
    await waitUntilGone(pids[0]!, stack, first);
    await waitUntilGone(pids[1]!, stack, second);
    for (const id of job_ids) {
      assert.equal((await stack.services.store.getJob(id))?.error, "cancelled by request");
    }
    const started = (await streamEvents(stack.services.store, "job.started")).filter(
      (e) => e.fields.job_id === waiting,
    );
    assert.deepEqual(started, [], "the cancelled pending job never started");
    assert.equal((await stack.services.store.getJob(waiting))?.attempts ?? 0, 0, "never charged an attempt");
    const ended = await stack.request(`/api/v1/jobs/batch/${batch_id}/cancel`, { method: "POST" });
    assert.equal(ended.status, 200, "a cancelled batch cancelled again changes nothing");
  });

  test("a runner killed mid-job is a transient failure: the job is retried and completes", async () => {
    const id = await submit(stack, "audio/convert", {
      source_bucket: stack.bucket,
      source_key: "in/long.wav",
      dest_bucket: stack.bucket,
      dest_key: "out/retried.mp3",
      format: "mp3",
    });
    const pid = await runnerOnceProcessing(stack, id);
    process.kill(pid, "SIGKILL");
    const job = await finished(stack, id, 120_000);
    assert.equal(job.status, "completed", job.error);
    assert.equal(job.attempts, 2);
    const requeued = (await streamEvents(stack.services.store, "job.requeued")).filter(
      (e) => e.fields.job_id === id,
    );
    assert.equal(requeued.length, 1);
    assert.ok(await exists(stack, "out/retried.mp3"));
  });
});

describe("recovery", () => {
  let redis: TestRedis;
  before(async () => {
    redis = await startTestRedis();
  });
  after(async () => {
    await redis?.stop();
  });

  test("jobs a crashed executor held are re-queued when it starts again, and complete", async () => {
    const stack = await startTestStack({ redis });
    try {
      await put(stack, "in/a.jpg", await jpeg(64, 64), "image/jpeg");
      const id = await submit(stack, "image/colors", { source_bucket: stack.bucket, source_key: "in/a.jpg" });
      const opts = {
        config: stack.config,
        store: stack.services.store,
        subscriber: stack.services.subscriber,
        redis: stack.services.redis,
        logger: stack.api.app.log as never,
      };
      // What a crash leaves: the job claimed by this executor's identity and processing, no runner.
      const crashed = new LocalExecutor(opts);
      assert.equal(await stack.services.store.claim("image_colors", 60_000, crashed.owner), id);
      assert.equal(await stack.services.store.start(id, 60_000), true);
      const restarted = new LocalExecutor(opts);
      await restarted.start();
      try {
        const job = await finished(stack, id);
        assert.equal(job.status, "completed", job.error);
        assert.equal(job.attempts, 2);
      } finally {
        await restarted.stop(0);
      }
    } finally {
      await stack.close();
    }
  });

  test("a job whose lease ran out (its executor vanished) is taken back and completes", async () => {
    const stack = await startTestStack({ redis, config: { executor: { lease: "2s" } } });
    try {
      await put(stack, "in/b.jpg", await jpeg(64, 64), "image/jpeg");
      const id = await submit(stack, "image/colors", { source_bucket: stack.bucket, source_key: "in/b.jpg" });
      assert.equal(await stack.services.store.claim("image_colors", 500, "vanished-executor"), id);
      assert.equal(await stack.services.store.start(id, 500), true);
      const executor = new LocalExecutor({
        config: stack.config,
        store: stack.services.store,
        subscriber: stack.services.subscriber,
        redis: stack.services.redis,
        logger: stack.api.app.log as never,
      });
      const listeners = stack.services.subscriber.listenerCount("message");
      await executor.start();
      try {
        const job = await finished(stack, id);
        assert.equal(job.status, "completed", job.error);
        const requeued = (await streamEvents(stack.services.store, "job.requeued")).filter(
          (e) => e.fields.job_id === id,
        );
        assert.equal(requeued.length, 1);
      } finally {
        await executor.stop(0);
      }
      // A stopped executor leaves nothing on the shared subscriber: no listener holds it.
      assert.equal(stack.services.subscriber.listenerCount("message"), listeners);
    } finally {
      await stack.close();
    }
  });
});

describe("runner exit codes (media-service runner --job)", () => {
  let stack: TestStack;
  before(async () => {
    stack = await startTestStack();
    await put(stack, "bad/garbage.bin", Buffer.from("this is not media at all, just text\n".repeat(20)));
    await put(stack, "bad/empty.bin", Buffer.alloc(0));
  });
  after(async () => {
    await stack?.close();
  });

  /** Runs the real CLI on one job, as the Kubernetes executor's pod will. */
  async function runner(jobId: string): Promise<number> {
    const entry = runnerEntry();
    const child = spawn(process.execPath, [...entry.execArgv, entry.path, "runner", "--job", jobId], {
      env: { ...process.env, [RESOLVED_CONFIG_ENV]: JSON.stringify(stack.config) },
      stdio: ["ignore", "ignore", "inherit"],
    });
    return new Promise((resolve) => child.once("exit", (code) => resolve(code ?? -1)));
  }

  /** A job claimed as the controller claims it; an output (dest_key) goes to the stack's bucket. */
  async function queued(type: JobType, spec: Record<string, unknown>): Promise<string> {
    const dest = spec.dest_key ? { dest_bucket: stack.bucket } : {};
    const { jobIds } = await stack.services.store.submit([
      {
        type,
        source_bucket: stack.bucket,
        source_key: "bad/garbage.bin",
        parameters: {},
        ...dest,
        ...spec,
      },
    ]);
    assert.equal(await stack.services.store.claim(type, 60_000, "test"), jobIds[0]);
    return jobIds[0]!;
  }

  const out = (name: string) => ({ dest_key: `bad-out/${name}` });
  const cases: Array<[JobType, Record<string, unknown>, RegExp]> = [
    [
      "image_resize",
      { ...out("r.jpg"), parameters: { width: 10, height: 10, quality: 85, fit: "cover", enlarge: false } },
      /not a decodable image/,
    ],
    [
      "image_optimize",
      { ...out("o.jpg"), parameters: { quality: 80, strip_metadata: false } },
      /not a decodable image/,
    ],
    [
      "image_watermark",
      {
        ...out("w.jpg"),
        parameters: { watermark_text: "x", position: "center", opacity: 100, color: "#ffffff" },
      },
      /not a decodable image/,
    ],
    ["image_colors", { parameters: { color_count: 5, format: "hex" } }, /not a decodable image/],
    [
      "video_thumbnail",
      { ...out("t.jpg"), parameters: { timestamp: "00:00:01", format: "jpeg" } },
      /not a decodable video/,
    ],
    ["audio_convert", { ...out("a.mp3"), parameters: { format: "mp3" } }, /not a decodable audio/],
    ["image_ai_keywords", { parameters: { keyword_count: 15, language: "en" } }, /needs an AI provider/],
    ["analyze", { parameters: { max_frames: 8, language: "en" } }, /needs an AI provider/],
  ];
  for (const [type, spec, message] of cases) {
    test(`${type} on bad input: exit code 2, job failed with a clear error, no output`, async () => {
      const id = await queued(type, spec);
      assert.equal(await runner(id), 2);
      const job = await stack.services.store.getJob(id);
      assert.equal(job?.status, "failed");
      assert.match(job?.error ?? "", message);
      if (spec.dest_key) assert.equal(await exists(stack, spec.dest_key as string), false);
    });
  }

  test("an empty source fails with exit code 2", async () => {
    const id = await queued("image_resize", {
      source_key: "bad/empty.bin",
      ...out("e.jpg"),
      parameters: { width: 5, height: 5 },
    });
    assert.equal(await runner(id), 2);
    assert.match((await stack.services.store.getJob(id))?.error ?? "", /is empty/);
  });

  test("a good job exits 0 and a job that already ended exits 0 without touching it", async () => {
    await put(stack, "good/a.jpg", await jpeg(40, 30), "image/jpeg");
    const id = await queued("image_colors", {
      source_key: "good/a.jpg",
      parameters: { color_count: 3, format: "hex" },
    });
    assert.equal(await runner(id), 0);
    const done = await stack.services.store.getJob(id);
    assert.equal(done?.status, "completed");
    assert.equal(await runner(id), 0);
    assert.deepEqual(await stack.services.store.getJob(id), done);
  });
});

describe("runner processes that cannot start", () => {
  test("are reported once with their reason and started again with a growing delay, not in a tight loop", async () => {
    // What an older Node does with the runner's flags, made here with a flag no Node knows: every
    // runner process dies before it is ready.
    const saved = process.env.NODE_OPTIONS;
    process.env.NODE_OPTIONS = "--no-such-runner-option";
    let stack: TestStack;
    try {
      stack = await startTestStack({ executor: true });
    } finally {
      if (saved === undefined) delete process.env.NODE_OPTIONS;
      else process.env.NODE_OPTIONS = saved;
    }
    try {
      await put(stack, "in/never.jpg", await jpeg(40, 30), "image/jpeg");
      const id = await submit(stack, "image/colors", {
        source_bucket: stack.bucket,
        source_key: "in/never.jpg",
      });
      const failures = () =>
        stack.logs.filter((l) => /runner (process failed to start|start failed again)/.test(String(l.msg)));
      const deadline = Date.now() + 30_000;
      while (failures().length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      const errors = stack.logs.filter((l) => (l.level as number) >= 50);
      assert.equal(errors.length, 1, `one error line for one reason:\n${JSON.stringify(errors.slice(0, 5))}`);
      assert.match(
        String(errors[0]!.err),
        /exited at start \(9\): \S*node: --no-such-runner-option is not allowed in NODE_OPTIONS/,
      );
      assert.ok(typeof errors[0]!.retry_in_ms === "number");
      const again = failures().slice(1);
      assert.ok(again.length >= 2, "it keeps trying");
      const delays = again.map((l) => l.retry_in_ms as number);
      assert.ok(
        delays.at(-1)! > errors[0]!.retry_in_ms,
        `the delay grows: ${errors[0]!.retry_in_ms} then ${delays.join(", ")}`,
      );
      assert.equal((await stack.services.store.getJob(id))?.status, "pending", "no runner, no job run");
    } finally {
      await stack.close();
    }
  });
});
