// video_transcode through the whole stack: its combinations refused at submit with a 400 that names
// the fields, a transcode run by the local executor's runner from the API to the object store, a
// cancelled 2-minute transcode that stops its ffmpeg and leaves no object.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";
import { HeadObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { after, before, describe, test } from "node:test";
import { startTestStack, type TestStack } from "../support/api.js";
import { makeVideo, removeMediaDirs } from "../support/av.js";
import { finished, submit } from "../support/jobs.js";

const run = promisify(execFile);

let stack: TestStack;
const LOCATION = () => ({
  source_bucket: stack.bucket,
  source_key: "in/clip.mp4",
  dest_bucket: stack.bucket,
  dest_key: "out/clip.webm",
});

before(async () => {
  stack = await startTestStack({ executor: true });
  const clip = await readFile(await makeVideo({ durationSeconds: 2, audio: true }));
  await stack.services.s3.send(
    new PutObjectCommand({ Bucket: stack.bucket, Key: "in/clip.mp4", Body: clip }),
  );
});

after(async () => {
  await stack?.close();
  removeMediaDirs();
});

async function refused(body: Record<string, unknown>): Promise<string> {
  const res = await stack.request("/api/v1/jobs/video/transcode", {
    method: "POST",
    json: { ...LOCATION(), ...body },
  });
  const json = (await res.json()) as { error: string };
  assert.equal(res.status, 400, JSON.stringify(json));
  return json.error;
}

async function exists(key: string): Promise<boolean> {
  try {
    await stack.services.s3.send(new HeadObjectCommand({ Bucket: stack.bucket, Key: key }));
    return true;
  } catch {
    return false;
  }
}

describe("video_transcode at submit", () => {
  test("a container that cannot hold the codecs: 400 naming both fields", async () => {
    assert.equal(
      await refused({ container: "webm" }),
      "container webm cannot hold h264 video (video_codec, h264 by default): h264 goes in mp4, mkv or mov",
    );
    assert.equal(
      await refused({ container: "webm", video_codec: "vp9" }),
      "container webm cannot hold aac audio (audio_codec, aac by default): aac goes in mp4, mkv or mov; or set audio_codec none",
    );
    assert.equal(
      await refused({ container: "mov", video_codec: "vp9" }),
      "container mov cannot hold vp9 video (video_codec): vp9 goes in mp4, webm or mkv",
    );
    assert.equal(
      await refused({ container: "mov", audio_codec: "opus" }),
      "container mov cannot hold opus audio (audio_codec): opus goes in mp4, webm or mkv; or set audio_codec none",
    );
  });

  test("crf and video_bitrate together, out-of-range values, 10 bits where the codec has none", async () => {
    assert.equal(
      await refused({ crf: 20, video_bitrate: "2000k" }),
      "video_bitrate cannot be given with crf: crf asks for a quality, video_bitrate for a size; give one of them",
    );
    assert.equal(await refused({ crf: 60 }), "crf 60 is out of range for h264: 0 to 51");
    assert.equal(await refused({ video_codec: "av1", crf: 0 }), "crf 0 is out of range for av1: 1 to 63");
    assert.equal(
      await refused({ pixel_format: "yuv420p10le" }),
      "pixel_format yuv420p10le is not accepted with h264 (video_codec, h264 by default): 10-bit output needs h265, vp9 or av1",
    );
    assert.equal(
      await refused({ video_bitrate: "5" }),
      "video_bitrate must be a bitrate in kbit/s such as 2500k, 16k to 200000k; got 5",
    );
    assert.equal(
      await refused({ audio_codec: "mp3", audio_bitrate: "400k" }),
      "audio_bitrate 400k is out of range for mp3: 8k to 320k",
    );
    assert.equal(
      await refused({ audio_codec: "opus", audio_sample_rate: 44100 }),
      "audio_sample_rate 44100 is not a sample rate opus takes: 48000, 24000, 16000, 12000 or 8000",
    );
    assert.equal(
      await refused({ audio_codec: "mp3", audio_channels: 6 }),
      "audio_channels 6 is more than mp3 takes: 1 or 2",
    );
  });

  test("copy and none take no encoding fields", async () => {
    assert.equal(
      await refused({ video_codec: "copy", width: 100 }),
      "width is not accepted with video_codec copy: the video stream is copied as it is",
    );
    assert.equal(
      await refused({ audio_codec: "none", audio_bitrate: "96k" }),
      "audio_bitrate is not accepted with audio_codec none: the output has no audio",
    );
  });
});

describe("video_transcode run by the executor", () => {
  test("vp9 and opus in webm, fitted inside 160x160: the object and its result", async () => {
    const id = await submit(stack, "video/transcode", {
      ...LOCATION(),
      container: "webm",
      video_codec: "vp9",
      audio_codec: "opus",
      width: 160,
      height: 160,
      preset: "fast",
    });
    const job = await finished(stack, id, 120_000);
    assert.equal(job.status, "completed", job.error);
    const result = job.result as Record<string, unknown>;
    assert.deepEqual(
      [result.width, result.height, result.video_codec, result.audio_codec, result.frame_rate],
      [160, 120, "vp9", "opus", 25],
    );
    assert.ok(Math.abs((result.duration as number) - 2) <= 0.04);
    assert.match(String(result.output_url), /out\/clip\.webm$/);
    const head = await stack.services.s3.send(
      new HeadObjectCommand({ Bucket: stack.bucket, Key: "out/clip.webm" }),
    );
    assert.equal(head.ContentType, "video/webm");
    assert.equal(head.ContentLength, result.file_size);
  });

  test("a cancelled 2-minute transcode stops its ffmpeg and leaves no object", async () => {
    const long = await readFile(await makeVideo({ durationSeconds: 120 }));
    await stack.services.s3.send(
      new PutObjectCommand({ Bucket: stack.bucket, Key: "in/long.mp4", Body: long }),
    );
    const id = await submit(stack, "video/transcode", {
      ...LOCATION(),
      source_key: "in/long.mp4",
      dest_key: "out/long.mp4",
      video_codec: "h265",
      preset: "slow",
    });
    // The runner's scratch directory, where its ffmpeg reads the source, is named after the job.
    const ffmpegOf = async () => {
      try {
        return (await run("pgrep", ["-f", `ffmpeg .*${id}`])).stdout.trim();
      } catch {
        return ""; // pgrep exits 1 when nothing matches
      }
    };
    const deadline = Date.now() + 60_000;
    while (!(await ffmpegOf())) {
      assert.ok(Date.now() < deadline, "the transcode's ffmpeg starts");
      await new Promise((r) => setTimeout(r, 50));
    }
    const res = await stack.request(`/api/v1/jobs/${id}/cancel`, { method: "POST" });
    assert.equal(res.status, 200);
    const stopped = Date.now() + 15_000;
    while (await ffmpegOf()) {
      assert.ok(Date.now() < stopped, "ffmpeg is gone");
      await new Promise((r) => setTimeout(r, 50));
    }
    const job = await stack.services.store.getJob(id);
    assert.equal(job?.status, "failed");
    assert.match(job?.error ?? "", /cancel/i, "the job says it was cancelled");
    assert.equal(await exists("out/long.mp4"), false, "nothing uploaded");
  });
});
