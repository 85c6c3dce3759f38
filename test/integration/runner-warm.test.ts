// One warm `runner --serve` process of the local executor runs image jobs, then a video job, then an
// image job again: each type's processor is loaded when its first job runs (runner/registry.ts),
// beside the ones loaded before, and the collections the runner makes to keep its memory down (once
// started, and as a download goes) leave nothing of a job's working state behind.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { after, before, test } from "node:test";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import sharp from "sharp";
import { makeVideo, removeMediaDirs } from "../support/av.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { finished, submit } from "../support/jobs.js";

let stack: TestStack;
before(async () => {
  stack = await startTestStack({
    executor: true,
    config: { executor: { local_concurrency: 1, local_runner_max_jobs: 10 } },
  });
});
after(async () => {
  await stack?.close();
  removeMediaDirs();
});

/** The `runner --serve` processes this test process started (through its executor). */
function runnerProcesses(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(ppid) !== process.pid || state === "Z") continue;
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      if (argv.includes("runner") && argv.includes("--serve")) pids.push(Number(entry));
    } catch {
      // ended meanwhile
    }
  }
  return pids;
}

async function put(key: string, body: Buffer, contentType: string): Promise<void> {
  await stack.services.s3.send(
    new PutObjectCommand({ Bucket: stack.bucket, Key: key, Body: body, ContentType: contentType }),
  );
}

async function completes(path: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const id = await submit(stack, path, { source_bucket: stack.bucket, dest_bucket: stack.bucket, ...body });
  const job = await finished(stack, id, 120_000);
  assert.equal(job.status, "completed", job.error);
  assert.equal(job.attempts, 1);
  return job.result as Record<string, unknown>;
}

test("one warm runner runs image jobs, then a video job, then an image job again", async () => {
  const photo = await sharp({ create: { width: 640, height: 480, channels: 3, background: "#c83c1e" } })
    .jpeg()
    .toBuffer();
  await put("in/photo.jpg", photo, "image/jpeg");
  await put("in/clip.mp4", await readFile(await makeVideo({ durationSeconds: 1 })), "video/mp4");
  const resize = { source_key: "in/photo.jpg", width: 160, height: 120, format: "webp" };

  await completes("image/resize", { ...resize, dest_key: "out/1.webp" });
  const [runner, ...others] = runnerProcesses();
  assert.ok(runner !== undefined, "a runner --serve process ran the first job");
  assert.deepEqual(others, [], "local_concurrency 1: one runner process");
  await completes("image/resize", { ...resize, dest_key: "out/2.webp" });

  const video = await completes("video/transcode", {
    source_key: "in/clip.mp4",
    dest_key: "out/clip.mp4",
    height: 120,
    preset: "fast",
  });
  assert.ok((video.file_size as number) > 0);
  assert.ok(Math.abs((video.duration as number) - 1) < 0.1, `duration ${String(video.duration)}`);

  const again = await completes("image/resize", { ...resize, dest_key: "out/3.webp" });
  assert.deepEqual(again.metadata, { width: 160, height: 120, format: "webp" });
  assert.deepEqual(runnerProcesses(), [runner], "the same runner process ran every job");
});
