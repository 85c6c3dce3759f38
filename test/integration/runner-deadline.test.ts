// `runner --job` with JOB_TIMEOUT_SECONDS, as a Kubernetes runner pod gets it (the job's time, as
// its Job has it): it is the job's deadline, whatever the job's timeout_seconds or its type's
// configured timeout. runOne is called in-process against a real redis-server and the embedded
// S3-protocol store; the job is claimed first, as the controller does.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import sharp from "sharp";
import type { Logger } from "../../core/logger.js";
import { EXIT } from "../../core/policy.js";
import { runOne } from "../../runner/main.js";
import { runDeadline } from "../../runner/run-job.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { putObject, submitAndClaim } from "../support/runner.js";

const run = promisify(execFile);

let stack: TestStack;
before(async () => {
  stack = await startTestStack();
  const tiny = await sharp({ create: { width: 32, height: 24, channels: 3, background: "#c83c1e" } })
    .jpeg()
    .toBuffer();
  await putObject(stack, "in/tiny.jpg", tiny);
  await putObject(stack, "in/long.wav", await wav(1200));
});
after(async () => {
  await stack?.close();
});

/** A WAV of `seconds` of a sine tone, made by ffmpeg (long enough that its conversion takes > 1 s). */
async function wav(seconds: number): Promise<Buffer> {
  const dir = await mkdtemp(join(tmpdir(), "media-service-wav-"));
  const path = join(dir, "tone.wav");
  await run("ffmpeg", [
    ...["-v", "error", "-f", "lavfi", "-i", `sine=frequency=440:sample_rate=8000:duration=${seconds}`],
    ...["-ac", "1", path],
  ]);
  const body = await readFile(path);
  await rm(dir, { recursive: true, force: true });
  return body;
}

/** A logger whose lines are kept, to read the deadline the runner took. */
function capturingLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split("\n"))
        if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: "debug" }, sink), lines };
}

describe("JOB_TIMEOUT_SECONDS", () => {
  test("the deadline it sets wins over timeout_seconds and the type's timeout", () => {
    const config = stack.config;
    const job = { type: "audio_convert" as const, timeout_seconds: 120 };
    assert.deepEqual(runDeadline(config, job), { ms: 120_000, seconds: 120, setting: "timeout_seconds" });
    assert.deepEqual(runDeadline(config, job, 7), { ms: 7000, seconds: 7, setting: "JOB_TIMEOUT_SECONDS" });
    assert.equal(runDeadline(config, { type: "audio_convert" }).ms, config.executor.timeoutsMs.audio_convert);
    assert.deepEqual(runDeadline(config, { type: "audio_convert" }, 9), {
      ms: 9000,
      seconds: 9,
      setting: "executor.timeouts.audio_convert",
    });
  });

  test("a job with a longer timeout_seconds fails when JOB_TIMEOUT_SECONDS runs out", async () => {
    const id = await submitAndClaim(stack, "audio_convert", "audio/convert", {
      source_bucket: stack.bucket,
      source_key: "in/long.wav",
      dest_bucket: stack.bucket,
      dest_key: "out/long.mp3",
      format: "mp3",
      timeout_seconds: 3600,
    });
    const { logger, lines } = capturingLogger();
    const started = Date.now();
    const code = await runOne(id, stack.config, logger, { JOB_TIMEOUT_SECONDS: "1" });
    const elapsed = Date.now() - started;
    assert.equal(code, EXIT.permanent);
    const job = await stack.services.store.getJob(id);
    assert.equal(job?.status, "failed");
    assert.equal(job?.error, "job timed out after 1 s (JOB_TIMEOUT_SECONDS)");
    assert.equal(lines.find((l) => l.msg === "job started")?.timeout_ms, 1000);
    assert.ok(elapsed < 30_000, `stopped at its deadline, not at timeout_seconds (${elapsed} ms)`);
  });

  for (const [name, timeout, setting] of [
    ["its own timeout_seconds", 1, "timeout_seconds"],
    ["its type's timeout", undefined, "executor.timeouts.audio_convert"],
  ] as const) {
    test(`a deadline the executor derived from ${name} is reported as ${setting}, the setting to change`, async () => {
      const id = await submitAndClaim(stack, "audio_convert", "audio/convert", {
        source_bucket: stack.bucket,
        source_key: "in/long.wav",
        dest_bucket: stack.bucket,
        dest_key: "out/long-own.mp3",
        format: "mp3",
        ...(timeout === undefined ? {} : { timeout_seconds: timeout }),
      });
      const { logger } = capturingLogger();
      assert.equal(await runOne(id, stack.config, logger, { JOB_TIMEOUT_SECONDS: "1" }), EXIT.permanent);
      assert.equal((await stack.services.store.getJob(id))?.error, `job timed out after 1 s (${setting})`);
    });
  }

  test("a job with a shorter timeout_seconds gets the longer JOB_TIMEOUT_SECONDS", async () => {
    const id = await submitAndClaim(stack, "image_colors", "image/colors", {
      source_bucket: stack.bucket,
      source_key: "in/tiny.jpg",
      timeout_seconds: 1,
    });
    const { logger, lines } = capturingLogger();
    const code = await runOne(id, stack.config, logger, { JOB_TIMEOUT_SECONDS: "600" });
    assert.equal(code, EXIT.done);
    assert.equal((await stack.services.store.getJob(id))?.status, "completed");
    assert.equal(lines.find((l) => l.msg === "job started")?.timeout_ms, 600_000);
  });

  test("without it, the job's own timeout_seconds", async () => {
    const id = await submitAndClaim(stack, "image_colors", "image/colors", {
      source_bucket: stack.bucket,
      source_key: "in/tiny.jpg",
      timeout_seconds: 45,
    });
    const { logger, lines } = capturingLogger();
    assert.equal(await runOne(id, stack.config, logger, {}), EXIT.done);
    assert.equal(lines.find((l) => l.msg === "job started")?.timeout_ms, 45_000);
  });

  test("a value that is not a positive integer: exit 2 naming it, and the job is not touched", async () => {
    const id = await submitAndClaim(stack, "image_colors", "image/colors", {
      source_bucket: stack.bucket,
      source_key: "in/tiny.jpg",
    });
    const { logger, lines } = capturingLogger();
    assert.equal(await runOne(id, stack.config, logger, { JOB_TIMEOUT_SECONDS: "30s" }), EXIT.permanent);
    assert.match(String(lines.at(-1)?.msg), /JOB_TIMEOUT_SECONDS must be a positive integer .*"30s"/);
    assert.equal((await stack.services.store.getJob(id))?.status, "pending");
  });
});
