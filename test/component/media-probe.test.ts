// media_probe's processor on real ffprobe, of media made here with ffmpeg: a video with audio (its
// language tagged) turned by its display matrix, a 10-bit HEVC video, audio alone, and bad media
// (cut short, text, empty, noise). The result is compared with ffprobe's own JSON of the file.
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { mediaProbe } from "../../jobs/media_probe/processor.js";
import { isPermanent } from "../../runner/errors.js";
import {
  emptyFile,
  ffprobe,
  makeAudio,
  makeContext,
  makeVideo,
  mediaDir,
  noiseFile,
  removeMediaDirs,
  textFile,
  truncated,
} from "../support/av.js";
import type { ProbeResult } from "../../core/jobs/types.js";

after(removeMediaDirs);

async function probe(source: string): Promise<ProbeResult> {
  const { ctx } = await makeContext("media_probe", source, {});
  const out = await mediaProbe(ctx);
  assert.equal(out.output, undefined, "media_probe writes no output");
  return out.result as ProbeResult;
}

async function failsPermanently(source: string, message: RegExp): Promise<void> {
  const { ctx } = await makeContext("media_probe", source, {});
  await assert.rejects(mediaProbe(ctx), (err: unknown) => {
    assert.ok(isPermanent(err), `expected a PermanentError, got ${String(err)}`);
    assert.match(err.message, message);
    return true;
  });
}

/** No field of the result is null or undefined: absent facts are left out. */
function assertNoEmptyFields(value: unknown, path = "result"): void {
  assert.notEqual(value, null, `${path} is null`);
  assert.notEqual(value, undefined, `${path} is undefined`);
  if (typeof value === "object") {
    for (const [key, inner] of Object.entries(value as object)) assertNoEmptyFields(inner, `${path}.${key}`);
  }
}

describe("media_probe", () => {
  test("a turned MP4 with French audio: container, streams, rotation, frame rate, language", async () => {
    const source = await makeVideo({
      durationSeconds: 2,
      width: 160,
      height: 90,
      rate: "30000/1001",
      audio: { sampleRate: 48000, channels: 2, language: "fra" },
      rotate: 90,
    });

    const result = await probe(source);
    const raw = await ffprobe(source);
    assertNoEmptyFields(result);
    assert.match(result.container, /mp4/);
    assert.ok(result.duration! > 1.9 && result.duration! < 2.2, `duration ${result.duration}`);
    assert.equal(result.size, Number((raw.format as { size?: string }).size));
    assert.ok(result.bit_rate! > 0);
    assert.equal(result.streams.length, 2);
    const [video, audio] = result.streams;
    assert.equal(video!.kind, "video");
    assert.equal(video!.codec, "h264");
    assert.equal(video!.width, 160);
    assert.equal(video!.height, 90);
    assert.equal(video!.display_aspect_ratio, "16:9");
    assert.equal(video!.frame_rate, 29.97);
    assert.equal(video!.pixel_format, "yuv420p");
    assert.equal(video!.bit_depth, 8);
    assert.equal(video!.language, undefined, "an undetermined language is left out");
    // ffprobe's side data says counterclockwise; the result says clockwise, a quarter turn either way.
    const sideData = (raw.streams[0] as { side_data_list?: Array<{ rotation?: number }> }).side_data_list;
    const counterclockwise = sideData?.find((d) => d.rotation !== undefined)?.rotation;
    assert.ok(counterclockwise === 90 || counterclockwise === -90, `side data ${String(counterclockwise)}`);
    assert.equal(video!.rotation, (360 - counterclockwise) % 360);
    assert.deepEqual(
      { ...audio, bit_rate: undefined },
      {
        index: 1,
        kind: "audio",
        codec: "aac",
        profile: "LC",
        language: "fra",
        channels: 2,
        channel_layout: "stereo",
        sample_rate: 48000,
        bit_rate: undefined,
      },
    );
    assert.ok(audio!.bit_rate! > 0);
  });

  test("10-bit HEVC: Main 10, yuv420p10le, bit depth 10", async () => {
    const source = await makeVideo({
      durationSeconds: 1,
      width: 160,
      height: 90,
      container: "mkv",
      tenBitHevc: true,
    });
    const result = await probe(source);
    assertNoEmptyFields(result);
    assert.equal(result.container, "matroska,webm");
    const [video] = result.streams;
    assert.equal(video!.codec, "hevc");
    assert.equal(video!.profile, "Main 10");
    assert.equal(video!.pixel_format, "yuv420p10le");
    assert.equal(video!.bit_depth, 10);
    assert.equal(video!.rotation, 0);
    assert.equal(video!.frame_rate, 25);
  });

  test("audio alone: one audio stream, its duration and rate", async () => {
    const source = await makeAudio({ durationSeconds: 2, format: "flac", sampleRate: 22050, channels: 1 });
    const result = await probe(source);
    assertNoEmptyFields(result);
    assert.equal(result.container, "flac");
    assert.ok(Math.abs(result.duration! - 2) < 0.05, `duration ${result.duration}`);
    assert.deepEqual(
      result.streams.map((s) => [s.kind, s.codec, s.sample_rate, s.channels, s.bit_depth]),
      [["audio", "flac", 22050, 1, 16]],
    );
  });

  test("bad media fails permanently, saying what is wrong", async () => {
    const dir = mediaDir("probe-bad");
    const video = await makeVideo({ durationSeconds: 2, width: 160, height: 90, dir });
    await failsPermanently(await truncated(video), /source is not decodable media: .*moov atom not found/);
    await failsPermanently(await textFile(dir), /source is not decodable media: it looks like a text file/);
    await failsPermanently(await emptyFile(dir), /source is not decodable media: the file is empty/);
    await failsPermanently(
      await noiseFile(dir),
      /source is not decodable media|source has no video or audio stream/,
    );
  });
});
