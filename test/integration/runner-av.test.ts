// The video_thumbnail and audio_convert processors against real ffmpeg, on media generated with
// `ffmpeg -f lavfi`: real outputs checked with ffprobe and sharp, bad media of every kind failing
// permanently and promptly, and an abort that leaves no ffmpeg behind.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFile, stat, writeFile } from "node:fs/promises";
import { Writable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import sharp from "sharp";
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import { isPermanent } from "../../runner/errors.js";
import { FfmpegError, runFfmpeg } from "../../runner/av/run.js";
import { cpuLimit } from "../../runner/cpus.js";
import type { ProcessOutput, Processor } from "../../runner/processor.js";
import { audioConvert } from "../../jobs/audio_convert/processor.js";
import { targetSize, videoThumbnail } from "../../jobs/video_thumbnail/processor.js";
import { formatTimestamp, parseTimestamp } from "../../runner/av/timestamp.js";
import {
  emptyFile,
  ffmpeg as ffmpegRun,
  ffprobe,
  makeAudio,
  makeContext,
  makeVideo,
  mediaDir,
  noiseFile,
  removeMediaDirs,
  textFile,
  truncated,
  type VideoContainer,
} from "../support/av.js";

// Bad media must fail within this bound; a hang fails the test instead of stalling the suite.
const BOUNDED = { timeout: 30_000 };

after(removeMediaDirs);

async function thumbnail(source: string, parameters: Record<string, unknown> = {}) {
  const handle = await makeContext("video_thumbnail", source, {
    timestamp: "00:00:01",
    format: "jpeg",
    ...parameters,
  });
  const out = await videoThumbnail(handle.ctx);
  return { ...handle, out };
}

async function convert(source: string, parameters: Record<string, unknown>) {
  const handle = await makeContext("audio_convert", source, parameters);
  const out = await audioConvert(handle.ctx);
  return { ...handle, out };
}

/** Asserts that the processor fails with a PermanentError whose message matches. */
async function failsPermanently(
  processor: Processor,
  type: "video_thumbnail" | "audio_convert",
  source: string,
  parameters: Record<string, unknown>,
  message: RegExp,
): Promise<void> {
  const { ctx } = await makeContext(type, source, parameters);
  await assert.rejects(processor(ctx), (err: unknown) => {
    assert.ok(isPermanent(err), `expected a PermanentError, got ${String(err)}`);
    assert.match(err.message, message);
    return true;
  });
}

function outputPath(out: ProcessOutput): string {
  assert.ok(out.output && "path" in out.output, "the processor names an output file");
  return out.output.path;
}

async function magic(path: string): Promise<"jpeg" | "png" | "webp" | "unknown"> {
  const head = (await readFile(path)).subarray(0, 12);
  if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return "jpeg";
  if (head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return "png";
  if (head.toString("latin1", 0, 4) === "RIFF" && head.toString("latin1", 8, 12) === "WEBP") return "webp";
  return "unknown";
}

/** Mean absolute difference of two same-sized images, per channel value (0–255). */
async function pixelDifference(a: string, b: string): Promise<number> {
  const [x, y] = await Promise.all([
    sharp(a).removeAlpha().raw().toBuffer({ resolveWithObject: true }),
    sharp(b).removeAlpha().raw().toBuffer({ resolveWithObject: true }),
  ]);
  assert.equal(x.info.width, y.info.width);
  assert.equal(x.info.height, y.info.height);
  let sum = 0;
  for (let i = 0; i < x.data.length; i++) sum += Math.abs(x.data[i]! - y.data[i]!);
  return sum / x.data.length;
}

function ffmpegRunningOn(path: string): boolean {
  try {
    execFileSync("pgrep", ["-f", path], { stdio: "pipe" });
    return true;
  } catch {
    return false; // pgrep exits 1 when nothing matches
  }
}

describe("timestamps", () => {
  test("HH:MM:SS, MM:SS and seconds, with fractions; formatted back as HH:MM:SS[.mmm]", () => {
    assert.equal(parseTimestamp("00:00:01"), 1);
    assert.equal(parseTimestamp("01:02:03.5"), 3723.5);
    assert.equal(parseTimestamp("2:05"), 125);
    assert.equal(parseTimestamp("2.25"), 2.25);
    assert.equal(parseTimestamp(7), 7);
    assert.equal(formatTimestamp(1), "00:00:01");
    assert.equal(formatTimestamp(125), "00:02:05");
    assert.equal(formatTimestamp(2.25), "00:00:02.250");
    assert.equal(formatTimestamp(360_000), "100:00:00");
    assert.throws(() => parseTimestamp("1:2:3:4"), /invalid timestamp/);
  });

  test("thumbnail size: as shown, even heights, capped at the output limit", () => {
    const square = { displayWidth: 320, displayHeight: 240, sampleAspectRatio: 1 };
    assert.equal(targetSize(square, undefined, 16_384), undefined, "no width, square pixels: as decoded");
    assert.deepEqual(targetSize(square, 100, 16_384), { width: 100, height: 76 });
    assert.deepEqual(targetSize(square, 100_000, 1000), { width: 1000, height: 750 });
    const tall = { displayWidth: 240, displayHeight: 320, sampleAspectRatio: 1 };
    assert.deepEqual(targetSize(tall, 3000, 1000), { width: 750, height: 1000 });
    const anamorphic = { displayWidth: 640, displayHeight: 240, sampleAspectRatio: 2 };
    assert.deepEqual(targetSize(anamorphic, undefined, 16_384), { width: 640, height: 240 });
  });
});

describe("video_thumbnail", { concurrency: 2 }, () => {
  let mp4: string;
  before(async () => {
    mp4 = await makeVideo({ durationSeconds: 4, container: "mp4" });
  });

  test("defaults: a JPEG of the source's size at 00:00:01, progress reported", async () => {
    const { out, progress, ctx } = await thumbnail(mp4);
    const path = outputPath(out);
    assert.equal(out.output!.contentType, "image/jpeg");
    assert.equal(await magic(path), "jpeg");
    assert.deepEqual(out.result, { timestamp: "00:00:01", metadata: { width: 320, height: 240 } });
    const meta = await sharp(path).metadata();
    assert.equal(meta.width, 320);
    assert.equal(meta.height, 240);
    assert.ok(path.startsWith(`${ctx.scratchDir}/`), "the output is in the job's scratch dir");
    assert.ok(progress.length >= 2, "progress was reported");
    assert.equal(progress.at(-1)!.percent, 100);
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i]!.percent >= progress[i - 1]!.percent);
  });

  test("width given: that width, aspect kept, even height", async () => {
    const { out } = await thumbnail(mp4, { width: 100 });
    // 100 × 240/320 = 75, rounded to the even 76 as scale=100:-2 does.
    assert.deepEqual(out.result.metadata, { width: 100, height: 76 });
    const meta = await sharp(outputPath(out)).metadata();
    assert.deepEqual([meta.width, meta.height], [100, 76]);

    const wide = await thumbnail(mp4, { width: 640 });
    assert.deepEqual(wide.out.result.metadata, { width: 640, height: 480 });
  });

  test("png and webp outputs are what they say", async () => {
    for (const [format, type] of [
      ["png", "image/png"],
      ["webp", "image/webp"],
      ["jpeg", "image/jpeg"],
    ] as const) {
      const { out } = await thumbnail(mp4, { format, width: 160 });
      const path = outputPath(out);
      assert.equal(out.output!.contentType, type);
      assert.equal(await magic(path), format);
      const meta = await sharp(path).metadata();
      assert.equal(meta.format, format);
      assert.deepEqual([meta.width, meta.height], [160, 120]);
      assert.deepEqual(out.result.metadata, { width: 160, height: 120 });
    }
  });

  test("different timestamps give different frames; the same timestamp the same frame", async () => {
    const a = await thumbnail(mp4, { timestamp: "00:00:01", format: "png" });
    const b = await thumbnail(mp4, { timestamp: "00:00:03", format: "png" });
    const again = await thumbnail(mp4, { timestamp: 1, format: "png" });
    const diff = await pixelDifference(outputPath(a.out), outputPath(b.out));
    assert.ok(diff > 5, `frames at 1 s and 3 s differ (mean difference ${diff.toFixed(2)})`);
    assert.equal(await pixelDifference(outputPath(a.out), outputPath(again.out)), 0);
  });

  test("all three timestamp forms, normalised in the result", async () => {
    const cases: Array<[string | number, string]> = [
      ["00:00:02", "00:00:02"],
      ["00:02", "00:00:02"],
      ["0:02.5", "00:00:02.500"],
      [2, "00:00:02"],
      ["2", "00:00:02"],
      [2.5, "00:00:02.500"],
    ];
    const paths: string[] = [];
    for (const [timestamp, expected] of cases) {
      const { out } = await thumbnail(mp4, { timestamp, format: "png" });
      assert.equal(out.result.timestamp, expected, `timestamp ${String(timestamp)}`);
      paths.push(outputPath(out));
    }
    // "00:00:02", "00:02", 2 and "2" are one moment; 2.5 s is another.
    for (const i of [1, 3, 4]) assert.equal(await pixelDifference(paths[0]!, paths[i]!), 0);
    assert.ok((await pixelDifference(paths[0]!, paths[5]!)) > 1);
  });

  test("a timestamp past the end fails permanently, naming the duration", BOUNDED, async () => {
    await failsPermanently(
      videoThumbnail,
      "video_thumbnail",
      mp4,
      { timestamp: "00:10:00" },
      /timestamp 00:10:00 is past the end of the video \(duration 00:00:04\.000\)/,
    );
    await failsPermanently(videoThumbnail, "video_thumbnail", mp4, { timestamp: 4 }, /past the end/);
  });

  test("a timestamp inside the last frame still gives that frame", BOUNDED, async () => {
    // The last frame starts at 3.96 s; a seek to 3.99 s decodes nothing after it.
    const { out } = await thumbnail(mp4, { timestamp: 3.99, format: "png" });
    assert.equal(out.result.timestamp, "00:00:03.990");
    const last = await thumbnail(mp4, { timestamp: 3.96, format: "png" });
    assert.equal(await pixelDifference(outputPath(out), outputPath(last.out)), 0);
  });

  test("rotation metadata is applied", async () => {
    const rotated = await makeVideo({ durationSeconds: 2, container: "mp4", rotate: 90 });
    const { out } = await thumbnail(rotated);
    assert.deepEqual(out.result.metadata, { width: 240, height: 320 });
    const scaled = await thumbnail(rotated, { width: 120 });
    assert.deepEqual(scaled.out.result.metadata, { width: 120, height: 160 });
  });

  test("non-square pixels are shown at their display aspect", async () => {
    const anamorphic = await makeVideo({
      durationSeconds: 2,
      codec: ["-vf", "setsar=2", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"],
    });
    const { out } = await thumbnail(anamorphic);
    assert.deepEqual(out.result.metadata, { width: 640, height: 240 });
    const scaled = await thumbnail(anamorphic, { width: 320 });
    assert.deepEqual(scaled.out.result.metadata, { width: 320, height: 120 });
  });

  test("MP4, WebM, MOV, AVI, MKV and FLV sources", async () => {
    const containers: VideoContainer[] = ["mp4", "webm", "mov", "avi", "mkv", "flv"];
    const dir = mediaDir("containers");
    const sources = await Promise.all(
      containers.map((container) => makeVideo({ durationSeconds: 3, container, audio: true, dir })),
    );
    for (const [i, container] of containers.entries()) {
      const { out } = await thumbnail(sources[i]!, { timestamp: "00:00:02", width: 160 });
      assert.deepEqual(
        out.result,
        { timestamp: "00:00:02", metadata: { width: 160, height: 120 } },
        `${container} source`,
      );
      assert.equal(await magic(outputPath(out)), "jpeg", `${container} source`);
    }
  });

  test("odd sizes: square pixels kept as decoded; sides capped at the output limit", async () => {
    const odd = await makeVideo({
      durationSeconds: 2,
      container: "mkv",
      // testsrc2 rounds its size down to even sides: scale after it, to RGB (odd sides allowed).
      codec: ["-vf", "scale=321:241,format=bgr0", "-c:v", "ffv1"],
    });
    const { out } = await thumbnail(odd, { format: "png" });
    assert.deepEqual(out.result.metadata, { width: 321, height: 241 });
    const scaled = await thumbnail(odd, { width: 100, format: "png" });
    assert.deepEqual(
      scaled.out.result.metadata,
      targetSize({ displayWidth: 321, displayHeight: 241, sampleAspectRatio: 1 }, 100, 16_384),
    );

    const capped = await makeContext("video_thumbnail", odd, { timestamp: 1 });
    capped.ctx.limits = { ...capped.ctx.limits, maxOutputDimension: 201 };
    const small = await videoThumbnail(capped.ctx);
    assert.deepEqual(small.result.metadata, { width: 201, height: 150 });
  });

  test("frames over the pixel limit fail permanently, naming the limit", BOUNDED, async () => {
    const { ctx } = await makeContext("video_thumbnail", mp4, { timestamp: 1 });
    ctx.limits = { ...ctx.limits, maxInputPixels: 320 * 240 - 1 };
    await assert.rejects(videoThumbnail(ctx), (err: Error) => {
      assert.ok(isPermanent(err), `permanent: ${err.message}`);
      assert.match(
        err.message,
        /^source video frames are 320x240 \(76800 pixels\), more than limits\.max_input_pixels \(76799\)$/,
      );
      return true;
    });
  });
});

describe("audio_convert", { concurrency: 2 }, () => {
  let wav: string;
  before(async () => {
    wav = await makeAudio({ durationSeconds: 3, format: "wav", sampleRate: 44100, channels: 2 });
  });

  const FORMATS = [
    { format: "mp3", codec: "mp3", container: "mp3", type: "audio/mpeg", rate: 44100 },
    { format: "aac", codec: "aac", container: "aac", type: "audio/aac", rate: 44100 },
    { format: "m4a", codec: "aac", container: "mov,mp4,m4a,3gp,3g2,mj2", type: "audio/mp4", rate: 44100 },
    { format: "opus", codec: "opus", container: "ogg", type: "audio/ogg", rate: 48000 },
    { format: "ogg", codec: "vorbis", container: "ogg", type: "audio/ogg", rate: 44100 },
    { format: "flac", codec: "flac", container: "flac", type: "audio/flac", rate: 44100 },
    { format: "wav", codec: "pcm_s16le", container: "wav", type: "audio/wav", rate: 44100 },
  ] as const;

  for (const expected of FORMATS) {
    test(`to ${expected.format}: ${expected.codec} in ${expected.container}, duration kept`, async () => {
      const { out } = await convert(wav, { format: expected.format });
      const path = outputPath(out);
      assert.equal(out.output!.contentType, expected.type);
      assert.ok(path.endsWith(`.${expected.format}`));
      const probed = await ffprobe(path);
      const streams = probed.streams.filter((s) => s.codec_type === "audio");
      assert.equal(streams.length, 1);
      assert.equal(probed.streams.length, 1, "nothing but the audio stream");
      assert.equal(streams[0]!.codec_name, expected.codec);
      assert.equal(probed.format.format_name, expected.container);

      const result = out.result as {
        duration: number;
        metadata: { format: string; codec: string; bitrate?: number; sample_rate: number; channels: number };
      };
      assert.ok(Math.abs(result.duration - 3) <= 0.1, `duration ${result.duration} within 0.1 s of 3 s`);
      assert.equal(result.metadata.format, expected.format);
      assert.equal(result.metadata.codec, expected.codec);
      assert.equal(result.metadata.sample_rate, expected.rate);
      assert.equal(Number(streams[0]!.sample_rate), expected.rate);
      assert.equal(result.metadata.channels, 2);
      assert.equal(streams[0]!.channels, 2);
      assert.ok(Number.isInteger(result.metadata.bitrate) && result.metadata.bitrate! > 0, "bitrate known");
      assert.equal((await stat(path)).size > 0, true);
    });
  }

  test("default bitrates: mp3 192k, aac and m4a 192k, ogg 160k; wav is PCM's 1411.2k", async () => {
    const expectations: Array<[string, number]> = [
      ["mp3", 192_000],
      ["aac", 192_000],
      ["m4a", 192_000],
      ["ogg", 160_000],
      ["wav", 1_411_200],
    ];
    for (const [format, bits] of expectations) {
      const { out } = await convert(wav, { format });
      const bitrate = (out.result.metadata as { bitrate: number }).bitrate;
      assert.ok(Math.abs(bitrate - bits) / bits <= 0.1, `${format}: ${bitrate} close to ${bits}`);
    }
  });

  test("a requested bitrate is honoured: mp3 128k and 320k within 10%, aac 128k", async () => {
    for (const [format, bitrate, bits] of [
      ["mp3", "128k", 128_000],
      ["mp3", "320k", 320_000],
      ["m4a", "128k", 128_000],
      ["mp3", "32k", 32_000], // outside the recommended range: accepted as given
    ] as const) {
      const { out } = await convert(wav, { format, bitrate });
      const reported = (out.result.metadata as { bitrate: number }).bitrate;
      assert.ok(Math.abs(reported - bits) / bits <= 0.1, `${format} ${bitrate}: reported ${reported}`);
      const probed = await ffprobe(outputPath(out));
      const measured = Number(probed.streams[0]!.bit_rate);
      assert.ok(Math.abs(measured - bits) / bits <= 0.1, `${format} ${bitrate}: ffprobe says ${measured}`);
    }
  });

  test("sources of other shapes: 96 kHz to opus (48 kHz), 22.05 kHz mono, 6 channels to mp3 (stereo)", async () => {
    const hiRes = await makeAudio({ durationSeconds: 2, format: "flac", sampleRate: 96000 });
    const opus = await convert(hiRes, { format: "opus" });
    assert.equal((opus.out.result.metadata as { sample_rate: number }).sample_rate, 48000);

    const mono = await makeAudio({ durationSeconds: 2, format: "mp3", sampleRate: 22050, channels: 1 });
    const ogg = await convert(mono, { format: "ogg", bitrate: "64k" });
    assert.deepEqual(
      [ogg.out.result.metadata, Math.abs((ogg.out.result.duration as number) - 2) <= 0.1],
      [
        {
          format: "ogg",
          codec: "vorbis",
          bitrate: (ogg.out.result.metadata as { bitrate: number }).bitrate,
          sample_rate: 22050,
          channels: 1,
        },
        true,
      ],
    );
    // libvorbis has no 96k mode for mono 22.05 kHz: the same job fails every time, so permanently.
    await failsPermanently(
      audioConvert,
      "audio_convert",
      mono,
      { format: "ogg", bitrate: "96k" },
      /^libvorbis cannot encode 1 channel\(s\) at 22050 Hz at 96k \(encoder setup failed\)/,
    );
    const opusMono = await convert(mono, { format: "opus" });
    assert.equal((opusMono.out.result.metadata as { sample_rate: number }).sample_rate, 48000);
    assert.equal((opusMono.out.result.metadata as { channels: number }).channels, 1);

    const surround = await makeAudio({ durationSeconds: 2, format: "wav", channels: 6 });
    const mp3 = await convert(surround, { format: "mp3" });
    assert.equal((mp3.out.result.metadata as { channels: number }).channels, 2);
    const flac = await convert(surround, { format: "flac" });
    assert.equal((flac.out.result.metadata as { channels: number }).channels, 6);
  });

  test("cover art and video are dropped, tags kept; a video's soundtrack converts", async () => {
    const tagged = await makeAudio({
      durationSeconds: 2,
      format: "mp3",
      coverArt: true,
      tags: { title: "Test Tone", artist: "media-service" },
    });
    assert.ok(
      (await ffprobe(tagged)).streams.some((s) => s.codec_type === "video"),
      "source has cover art",
    );
    const { out } = await convert(tagged, { format: "ogg" });
    const probed = await ffprobe(outputPath(out));
    assert.deepEqual(
      probed.streams.map((s) => s.codec_type),
      ["audio"],
    );
    const tags = await tagsOf(outputPath(out));
    assert.equal(tags.title, "Test Tone");
    assert.equal(tags.artist, "media-service");

    const video = await makeVideo({ durationSeconds: 3, container: "mkv", audio: true });
    const soundtrack = await convert(video, { format: "m4a" });
    const probedTrack = await ffprobe(outputPath(soundtrack.out));
    assert.deepEqual(
      probedTrack.streams.map((s) => s.codec_type),
      ["audio"],
    );
    assert.ok(Math.abs((soundtrack.out.result.duration as number) - 3) <= 0.1);
  });

  // ffmpeg reports twice a second of its own time; a minute of audio keeps it busy for more than one
  // report on any machine.
  test("progress on a 60 s source rises to 100", async () => {
    const long = await makeAudio({ durationSeconds: 60, format: "wav" });
    const { progress } = await convert(long, { format: "mp3", bitrate: "192k" });
    const percents = progress.map((p) => p.percent);
    for (let i = 1; i < percents.length; i++) {
      assert.ok(percents[i]! >= percents[i - 1]!, `progress never goes back: ${percents.join(", ")}`);
    }
    assert.equal(percents.at(-1), 100);
    const during = percents.filter((p) => p > 5 && p < 95);
    assert.ok(during.length >= 1, `ffmpeg's progress was reported while it ran: ${percents.join(", ")}`);
    assert.ok(
      percents.some((p) => p >= 94 && p <= 95),
      `the conversion itself reached its end: ${percents.join(", ")}`,
    );
  });
});

async function tagsOf(path: string): Promise<Record<string, string>> {
  const out = execFileSync("ffprobe", ["-v", "error", "-show_format", "-show_streams", "-of", "json", path]);
  const json = JSON.parse(out.toString()) as {
    format: { tags?: Record<string, string> };
    streams: Array<{ tags?: Record<string, string> }>;
  };
  const all = { ...json.format.tags, ...json.streams[0]?.tags };
  return Object.fromEntries(Object.entries(all).map(([k, v]) => [k.toLowerCase(), v]));
}

describe("bad media fails permanently with a clear message", { concurrency: 2 }, () => {
  let dir: string;
  let mp4: string;
  let fastStartMp4: string;
  let m4a: string;
  before(async () => {
    dir = mediaDir("bad");
    [mp4, fastStartMp4, m4a] = await Promise.all([
      makeVideo({ durationSeconds: 4, container: "mp4", audio: true, dir }),
      makeVideo({ durationSeconds: 4, container: "mp4", audio: true, faststart: true, dir }),
      makeAudio({ durationSeconds: 6, format: "m4a", dir }),
    ]);
  });

  test("video_thumbnail: empty, text, random bytes, truncated (index lost)", BOUNDED, async () => {
    const notVideo = /^source is not a decodable video: .+/;
    await failsPermanently(
      videoThumbnail,
      "video_thumbnail",
      await emptyFile(dir),
      {},
      /video: the file is empty$/,
    );
    await failsPermanently(
      videoThumbnail,
      "video_thumbnail",
      await textFile(dir),
      {},
      /it looks like a text file/,
    );
    await failsPermanently(videoThumbnail, "video_thumbnail", await textFile(dir, "notes.ans"), {}, notVideo);
    await failsPermanently(videoThumbnail, "video_thumbnail", await noiseFile(dir), {}, notVideo);
    await failsPermanently(
      videoThumbnail,
      "video_thumbnail",
      await truncated(mp4),
      {},
      /source is not a decodable video: .*moov atom not found/,
    );
  });

  test("video_thumbnail: truncated with the index in front, frame in the lost half", BOUNDED, async () => {
    await failsPermanently(
      videoThumbnail,
      "video_thumbnail",
      await truncated(fastStartMp4),
      { timestamp: "00:00:03" },
      /^source video is truncated: stream \d+, offset 0x[0-9a-f]+: partial file$/,
    );
  });

  test("video_thumbnail: audio only, and audio with cover art, have no video stream", BOUNDED, async () => {
    const mp3 = await makeAudio({ durationSeconds: 2, format: "mp3", coverArt: true, dir });
    await failsPermanently(
      videoThumbnail,
      "video_thumbnail",
      mp3,
      {},
      /^source has no video stream \(it holds: audio \(mp3\), cover art \(mjpeg\)\)$/,
    );
    const wav = await makeAudio({ durationSeconds: 2, dir });
    await failsPermanently(videoThumbnail, "video_thumbnail", wav, {}, /^source has no video stream/);
  });

  test("audio_convert: empty, text, random bytes, truncated (index lost)", BOUNDED, async () => {
    const notAudio = /^source is not a decodable audio: .+/;
    const params = { format: "mp3" };
    await failsPermanently(
      audioConvert,
      "audio_convert",
      await emptyFile(dir, "empty.mp3"),
      params,
      /^source is not a decodable audio: the file is empty$/,
    );
    await failsPermanently(
      audioConvert,
      "audio_convert",
      await textFile(dir, "lyrics.txt"),
      params,
      notAudio,
    );
    await failsPermanently(
      audioConvert,
      "audio_convert",
      await noiseFile(dir, 64 * 1024, "n.mp3"),
      params,
      notAudio,
    );
    await failsPermanently(
      audioConvert,
      "audio_convert",
      await truncated(mp4),
      params,
      /source is not a decodable audio: .*moov atom not found/,
    );
  });

  test("audio_convert: truncated with the index in front", BOUNDED, async () => {
    await failsPermanently(
      audioConvert,
      "audio_convert",
      await truncated(m4a),
      { format: "ogg" },
      /^source audio is truncated: it declares 6\.\d\d s but holds \d+\.\d\d s \(stream \d+, offset 0x[0-9a-f]+: partial file\)$/,
    );
  });

  test("a playlist is refused, even one that points at a real local video", BOUNDED, async () => {
    const segment = await makeVideo({ durationSeconds: 2, container: "mp4", dir });
    const ts = join(dir, "segment.ts");
    await ffmpegRun(["-i", segment, "-c", "copy", "-f", "mpegts", ts]);
    const playlist = join(dir, "playlist.m3u8");
    await writeFile(playlist, `#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\n${ts}\n#EXT-X-ENDLIST\n`);
    await failsPermanently(videoThumbnail, "video_thumbnail", playlist, {}, /it is a playlist \(hls\)/);
    await failsPermanently(
      audioConvert,
      "audio_convert",
      playlist,
      { format: "mp3" },
      /not a decodable audio/,
    );
  });

  test("audio_convert: a video without sound has no audio stream", BOUNDED, async () => {
    const silent = await makeVideo({ durationSeconds: 2, container: "mp4", dir });
    await failsPermanently(
      audioConvert,
      "audio_convert",
      silent,
      { format: "mp3" },
      /^source has no audio stream \(it holds: video \(h264\)\)$/,
    );
  });
});

describe("aborting", () => {
  test("an abort mid-conversion kills ffmpeg and rejects", { timeout: 60_000 }, async () => {
    const source = await makeAudio({ durationSeconds: 120, format: "wav", channels: 1 });
    const { ctx, abort, progress } = await makeContext("audio_convert", source, { format: "mp3" });
    let seenRunning = false;
    ctx.progress = (percent, message) => {
      progress.push({ percent, ...(message ? { message } : {}) });
      if (percent > 5 && percent < 95 && !abort.signal.aborted) {
        seenRunning = ffmpegRunningOn(source);
        abort.abort(new Error("job stopped by test"));
      }
    };
    await assert.rejects(audioConvert(ctx), /job stopped by test/);
    assert.ok(seenRunning, "ffmpeg was running when the job was aborted");
    assert.equal(ffmpegRunningOn(source), false, "no ffmpeg left running on the source");
    const last = progress.at(-1)!.percent;
    assert.ok(last < 95, `the conversion did not finish (last progress ${last})`);
  });

  test("an abort before the start spawns nothing", async () => {
    const source = await makeAudio({ durationSeconds: 2 });
    const { ctx, abort } = await makeContext("audio_convert", source, { format: "flac" });
    abort.abort(new Error("cancelled before start"));
    await assert.rejects(audioConvert(ctx), /cancelled before start/);
    assert.equal(ffmpegRunningOn(source), false);
  });

  test("a thumbnail job aborted before its ffmpeg starts rejects", async () => {
    const source = await makeVideo({ durationSeconds: 2 });
    const { ctx, abort } = await makeContext("video_thumbnail", source, { timestamp: "00:00:01" });
    ctx.progress = (percent) => {
      if (percent >= 20) abort.abort(new Error("thumbnail stopped"));
    };
    await assert.rejects(videoThumbnail(ctx), /thumbnail stopped/);
    assert.equal(ffmpegRunningOn(source), false);
  });
});

describe("runFfmpeg", () => {
  // An endless tone read at its own pace (-re): ffmpeg runs until it is stopped.
  const endless = (output: string) => ({
    input: "sine=frequency=440:sample_rate=8000",
    inputOptions: ["-re", "-f", "lavfi"],
    output,
    outputOptions: ["-c:a", "pcm_s16le", "-f", "wav"],
  });

  test("an abort while ffmpeg runs kills it with SIGKILL before settling", { timeout: 30_000 }, async () => {
    const output = join(mediaDir("run"), "endless-running.wav");
    const abort = new AbortController();
    let child: ChildProcess | undefined;
    const done = runFfmpeg(endless(output), {
      signal: abort.signal,
      onSpawn: (c) => (child = c),
      onProgress: () => abort.abort(new Error("stop now")),
      duration: 3600,
    });
    await assert.rejects(done, /stop now/);
    assert.ok(child, "ffmpeg was spawned");
    assert.equal(child.signalCode, "SIGKILL");
    assert.equal(ffmpegRunningOn(output), false);
  });

  test("an abort between the call and the spawn still kills the process", { timeout: 30_000 }, async () => {
    const output = join(mediaDir("run"), "endless-early.wav");
    const abort = new AbortController();
    const done = runFfmpeg(endless(output), { signal: abort.signal });
    abort.abort(new Error("too early"));
    await assert.rejects(done, /too early/);
    assert.equal(ffmpegRunningOn(output), false);
  });

  test("a failure that is not the input's is transient, with ffmpeg's reason", BOUNDED, async () => {
    const source = await makeAudio({ durationSeconds: 1 });
    const done = runFfmpeg(
      { input: source, output: "/nonexistent-dir/out.wav", outputOptions: ["-f", "wav"] },
      { signal: new AbortController().signal },
    );
    await assert.rejects(done, (err: unknown) => {
      assert.equal(isPermanent(err), false, `transient, got ${String(err)}`);
      assert.ok(err instanceof FfmpegError, `an FfmpegError, got ${String(err)}`);
      assert.match(err.message, /^ffmpeg failed: .*No such file or directory/);
      return true;
    });
  });

  test(
    "a filter graph's command failing for another reason is transient: its check decodes what the graph reads",
    BOUNDED,
    async () => {
      const source = await makeVideo({ durationSeconds: 1, width: 64, height: 48 });
      const done = runFfmpeg(
        {
          input: source,
          output: "/nonexistent-dir/out.mp4",
          outputOptions: [
            "-filter_complex",
            "[0:v]split=1[s0];[s0]scale=32:24[v0]",
            "-map",
            "[v0]",
            "-c:v",
            "mjpeg",
            "-f",
            "mov",
          ],
          reads: "video",
        },
        { signal: new AbortController().signal },
      );
      await assert.rejects(done, (err: unknown) => {
        assert.equal(isPermanent(err), false, `transient, got ${String(err)}`);
        assert.match((err as Error).message, /^ffmpeg failed: .*No such file or directory/);
        return true;
      });
    },
  );

  test(
    "the start of ffmpeg is logged on the job's logger: its threads and where they come from",
    BOUNDED,
    async () => {
      const lines: Array<Record<string, unknown>> = [];
      const sink = new Writable({
        write(chunk, _enc, next) {
          for (const line of String(chunk).split("\n").filter(Boolean))
            lines.push(JSON.parse(line) as Record<string, unknown>);
          next();
        },
      });
      const logger = pino({ level: "info" }, sink).child({ job_id: "job-1" });
      const source = await makeAudio({ durationSeconds: 1 });
      const output = join(mediaDir("run"), "logged.wav");
      await runFfmpeg(
        { input: source, output, outputOptions: ["-f", "wav"] },
        { signal: new AbortController().signal, logger },
      );
      const started = lines.filter((l) => l.msg === "ffmpeg started");
      assert.equal(started.length, 1, JSON.stringify(lines));
      const { cpus, quota, cores } = cpuLimit();
      assert.deepEqual(
        [
          started[0]!.job_id,
          started[0]!.level,
          started[0]!.threads,
          started[0]!.cpu_quota,
          started[0]!.cores,
        ],
        ["job-1", 30, cpus, quota ?? null, cores],
      );
      assert.equal(typeof started[0]!.pid, "number");
    },
  );
});
