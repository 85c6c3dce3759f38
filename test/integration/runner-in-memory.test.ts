// Small image sources kept in memory (limits.in_memory_source_bytes): downloaded into a buffer,
// processed and uploaded without a scratch file, through runJob (the code path of `runner --job`)
// against the embedded S3-protocol store. The scratch directory is watched while a job runs: a job
// kept in memory makes nothing there; a larger source, or a type that needs a file, still does.
import assert from "node:assert/strict";
import { watch, type FSWatcher } from "node:fs";
import { mkdir, readdir } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { GetObjectCommand } from "@aws-sdk/client-s3";
import sharp from "sharp";
import { startTestStack, type TestStack } from "../support/api.js";
import { makeImage } from "../support/media.js";
import { putObject, runClaimed, submitAndClaim } from "../support/runner.js";

let stack: TestStack;
let photo: Buffer;

before(async () => {
  stack = await startTestStack();
  photo = await makeImage({ width: 640, height: 480, photo: true, format: "jpeg", quality: 90 });
  await putObject(stack, "in/photo.jpg", photo);
  // Cut short: its declared frame cannot fit in what is left.
  await putObject(stack, "in/truncated.jpg", photo.subarray(0, Math.floor(photo.length / 3)));
  await mkdir(stack.config.executor.scratchDir, { recursive: true });
});

after(async () => {
  await stack?.close();
});

/** Runs `work` while watching the scratch directory; the names of whatever appeared there. */
async function watchingScratch<T>(work: () => Promise<T>): Promise<{ result: T; seen: string[] }> {
  const dir = stack.config.executor.scratchDir;
  const seen: string[] = [];
  const watcher: FSWatcher = watch(dir, (_event, name) => seen.push(String(name)));
  try {
    const result = await work();
    // Events of the job's last moments are delivered before the watcher is closed.
    await new Promise((r) => setImmediate(r));
    return { result, seen };
  } finally {
    watcher.close();
  }
}

/** The stack's configuration with another in-memory threshold, for one job. */
async function withThreshold<T>(bytes: number, work: () => Promise<T>): Promise<T> {
  const limits = stack.config.limits;
  const saved = limits.inMemorySourceBytes;
  limits.inMemorySourceBytes = bytes;
  try {
    return await work();
  } finally {
    limits.inMemorySourceBytes = saved;
  }
}

async function output(key: string): Promise<Buffer> {
  const got = await stack.services.s3.send(new GetObjectCommand({ Bucket: stack.bucket, Key: key }));
  return Buffer.from(await got.Body!.transformToByteArray());
}

const resize = (dest: string, source = "in/photo.jpg") => ({
  source_bucket: stack.bucket,
  source_key: source,
  dest_bucket: stack.bucket,
  dest_key: dest,
  width: 160,
  height: 120,
  format: "webp",
});

describe("a source under limits.in_memory_source_bytes", () => {
  test("is resized and uploaded without touching the scratch directory", async () => {
    assert.ok(photo.length < stack.config.limits.inMemorySourceBytes, "the photo is under the default");
    const id = await submitAndClaim(stack, "image_resize", "image/resize", resize("out/mem.webp"));
    const { result, seen } = await watchingScratch(() => runClaimed(stack, id));
    assert.equal(result.outcome.code, 0, result.outcome.error);
    assert.equal(result.job.status, "completed");
    assert.deepEqual(seen, [], "nothing was made in the scratch directory");
    assert.deepEqual(await readdir(stack.config.executor.scratchDir), []);
    const out = await output("out/mem.webp");
    const meta = await sharp(out).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ["webp", 160, 120]);
    assert.equal((result.job.result as { file_size?: number }).file_size, out.length);
  });

  test("image_optimize keeping the source as the output uploads the source's bytes", async () => {
    const small = await makeImage({ width: 64, height: 48, photo: true, format: "jpeg", quality: 40 });
    await putObject(stack, "in/small.jpg", small);
    const id = await submitAndClaim(stack, "image_optimize", "image/optimize", {
      source_bucket: stack.bucket,
      source_key: "in/small.jpg",
      dest_bucket: stack.bucket,
      dest_key: "out/optimized.jpg",
      quality: 100,
      strip_metadata: false,
    });
    const { result, seen } = await watchingScratch(() => runClaimed(stack, id));
    assert.equal(result.outcome.code, 0, result.outcome.error);
    assert.deepEqual(seen, []);
    assert.ok((await output("out/optimized.jpg")).equals(small), "the output is the source");
  });

  test("a truncated JPEG fails for good with the message a file gets", async () => {
    const messages: string[] = [];
    for (const threshold of [stack.config.limits.inMemorySourceBytes, 0]) {
      const id = await submitAndClaim(stack, "image_resize", "image/resize", {
        ...resize(`out/truncated-${threshold}.webp`, "in/truncated.jpg"),
      });
      const { outcome, job } = await withThreshold(threshold, () => runClaimed(stack, id));
      assert.equal(outcome.code, 2, outcome.error);
      assert.equal(job.status, "failed");
      messages.push(job.error!);
    }
    assert.match(messages[0]!, /source image is truncated or corrupt/);
    assert.equal(messages[0], messages[1], "in memory and from a file: the same message");
  });
});

describe("a source over limits.in_memory_source_bytes", () => {
  test("still goes through a scratch file, with the same output", async () => {
    const id = await submitAndClaim(stack, "image_resize", "image/resize", resize("out/file.webp"));
    const { result, seen } = await withThreshold(1024, () => watchingScratch(() => runClaimed(stack, id)));
    assert.equal(result.outcome.code, 0, result.outcome.error);
    assert.ok(seen.length > 0, "the job made its scratch directory");
    assert.deepEqual(await readdir(stack.config.executor.scratchDir), [], "and removed it");
    assert.ok(
      (await output("out/file.webp")).equals(await output("out/mem.webp")),
      "same bytes as in memory",
    );
  });
});
