// A process the runner starts (ffprobe, ffmpeg) that dies of a signal, as the kernel's OOM killer
// kills it, says nothing about the job's input: the run is transient (exit code contract in
// core/policy.ts), the job stays processing for its executor to retry, and the next attempt, with
// nothing killed, completes. FFPROBE_PATH and FFMPEG_PATH point at wrappers of the real programs
// that kill themselves with SIGKILL while a flag file exists; jobs run through runJob (the code path
// of `runner --job`) against a real redis-server and the embedded S3-protocol store.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, beforeEach, describe, test } from "node:test";
import type { JobType } from "../../core/jobs/types.js";
import { EXIT } from "../../core/policy.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { makeAudio, makeVideo, mediaDir, removeMediaDirs } from "../support/av.js";
import { putObject, runClaimed, submitAndClaim } from "../support/runner.js";

const bin = mediaDir("killed-bin");
const flags = { ffprobe: join(bin, "kill-ffprobe"), ffmpeg: join(bin, "kill-ffmpeg") };

/**
 * A wrapper of the real `program` that, while its flag file exists, kills itself with SIGKILL when
 * its arguments match `when` (a shell `case` pattern), and runs the real program otherwise.
 */
function wrapper(program: "ffprobe" | "ffmpeg", when: string): string {
  const real = execFileSync("sh", ["-c", `command -v ${program}`], { encoding: "utf8" }).trim();
  const path = join(bin, program);
  writeFileSync(
    path,
    [
      "#!/bin/sh",
      `if [ -e '${flags[program]}' ]; then`,
      `  case " $* " in ${when}) kill -KILL $$ ;; esac`,
      "fi",
      `exec '${real}' "$@"`,
      "",
    ].join("\n"),
  );
  chmodSync(path, 0o755);
  return path;
}

// fluent-ffmpeg finds its programs through these on first use (and the runner's own ffprobe runs).
process.env.FFPROBE_PATH = wrapper("ffprobe", "*");
// Only the runner's own ffmpeg commands (they report progress), not fluent-ffmpeg's capability queries.
process.env.FFMPEG_PATH = wrapper("ffmpeg", "*' -progress pipe:1 '*");

let stack: TestStack;
before(async () => {
  stack = await startTestStack();
  await putObject(stack, "in/tone.wav", await readFile(await makeAudio({ durationSeconds: 2 })));
  await putObject(stack, "in/clip.mp4", await readFile(await makeVideo({ durationSeconds: 2 })));
});
after(async () => {
  await stack?.close();
  removeMediaDirs();
});
beforeEach(() => {
  for (const flag of Object.values(flags)) rmSync(flag, { force: true });
});

const JOBS: Record<string, { type: JobType; path: string; body: Record<string, unknown> }> = {
  audio_convert: {
    type: "audio_convert",
    path: "audio/convert",
    body: { source_key: "in/tone.wav", dest_key: "out/tone.mp3", format: "mp3" },
  },
  // Past the end: ffmpeg gives no frame, so the source is probed to say why.
  video_thumbnail: {
    type: "video_thumbnail",
    path: "video/thumbnail",
    body: { source_key: "in/clip.mp4", dest_key: "out/late.jpg", timestamp: "00:00:05" },
  },
};

async function submit(name: keyof typeof JOBS): Promise<string> {
  const { type, path, body } = JOBS[name]!;
  return submitAndClaim(stack, type, path, {
    source_bucket: stack.bucket,
    dest_bucket: stack.bucket,
    ...body,
  });
}

describe("a child process killed by a signal is a transient failure", () => {
  test("ffprobe SIGKILLed while audio_convert reads a valid WAV: retried, then completes", async () => {
    const id = await submit("audio_convert");
    writeFileSync(flags.ffprobe, "");
    const killed = await runClaimed(stack, id);
    assert.equal(killed.outcome.code, EXIT.transient, `transient, got: ${killed.outcome.error}`);
    assert.match(killed.outcome.error ?? "", /^ffprobe was killed by signal SIGKILL/);
    assert.equal(killed.job.status, "processing", "left for the executor to retry");
    assert.equal(killed.job.error, undefined);

    rmSync(flags.ffprobe);
    const again = await runClaimed(stack, id);
    assert.equal(again.outcome.code, EXIT.done, again.outcome.error);
    assert.equal(again.job.status, "completed");
    assert.ok((again.job.result as { duration: number }).duration > 1.9);
  });

  test("ffprobe SIGKILLed while video_thumbnail probes for its error: transient, not bad media", async () => {
    const id = await submit("video_thumbnail");
    writeFileSync(flags.ffprobe, "");
    const killed = await runClaimed(stack, id);
    assert.equal(killed.outcome.code, EXIT.transient, `transient, got: ${killed.outcome.error}`);
    assert.match(killed.outcome.error ?? "", /^ffprobe was killed by signal SIGKILL/);
    assert.equal(killed.job.status, "processing");

    // Nothing killed: the input's own failure, permanent.
    rmSync(flags.ffprobe);
    const again = await runClaimed(stack, id);
    assert.equal(again.outcome.code, EXIT.permanent, again.outcome.error);
    assert.match(again.job.error ?? "", /timestamp 00:00:05 is past the end of the video/);
  });

  test("ffmpeg SIGKILLed while audio_convert converts: retried, then completes", async () => {
    const id = await submit("audio_convert");
    writeFileSync(flags.ffmpeg, "");
    const killed = await runClaimed(stack, id);
    assert.equal(killed.outcome.code, EXIT.transient, `transient, got: ${killed.outcome.error}`);
    assert.match(killed.outcome.error ?? "", /ffmpeg was killed with signal SIGKILL/);
    assert.equal(killed.job.status, "processing");

    rmSync(flags.ffmpeg);
    const again = await runClaimed(stack, id);
    assert.equal(again.outcome.code, EXIT.done, again.outcome.error);
    assert.equal(again.job.status, "completed");
  });
});
