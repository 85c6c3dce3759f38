// A corpus of hostile media, made at test time (sharp and ffmpeg make real files, then byte surgery
// here breaks them: nothing binary is kept in git), run through runJob (the code path of
// `runner --job`) against a real redis-server and the embedded S3-protocol store, for every job
// type that reads that kind of media (jobs/registry.ts: each type's media.source, its route and its
// example). No such job may complete (but one that reads an image's header alone, or media's headers
// with ffprobe, where the damage lies past intact headers: it reports what the headers say): each
// must fail with the right classification (exit code, and the job's status in the store) and a
// message that says what is wrong with the file. The AI jobs have a provider to talk to, which must
// never be reached.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Writable } from "node:stream";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import {
  definitionOf,
  JOB_DEFINITIONS,
  JOB_TYPES,
  type JobType,
  type MediaKind,
} from "../../core/jobs/types.js";
import type { Logger } from "../../core/logger.js";
import { EXIT } from "../../core/policy.js";
import { TestAiProvider } from "../support/ai-provider.js";
import { startTestStack, type TestStack } from "../support/api.js";
import {
  ffmpeg,
  makeAudio,
  makeVideo,
  mediaDir,
  removeMediaDirs,
  type AudioContainer,
} from "../support/av.js";
import { makeImage, noiseBytes, truncated } from "../support/media.js";
import { putObject, runClaimed, submitAndClaim } from "../support/runner.js";
import { submission } from "../support/submission.js";

const execFileAsync = promisify(execFile);

// ---------------------------------------------------------------------------------------------
// Byte surgery.

/** A JPEG whose frame header (SOF) declares another size; the coded data stays as it was. */
function withJpegSize(jpeg: Buffer, width: number, height: number): Buffer {
  const out = Buffer.from(jpeg);
  for (let at = 2; at + 9 < out.length;) {
    assert.equal(out[at], 0xff, "a JPEG marker");
    const marker = out[at + 1]!;
    if (marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker)) {
      out.writeUInt16BE(height, at + 5);
      out.writeUInt16BE(width, at + 7);
      return out;
    }
    at += 2 + out.readUInt16BE(at + 2);
  }
  throw new Error("no SOF marker in the JPEG");
}

/** A PNG with one byte of its first IDAT chunk's data flipped (its CRC left as it was). */
function withCorruptIdat(png: Buffer): Buffer {
  const out = Buffer.from(png);
  for (let at = 8; at + 8 <= out.length;) {
    const length = out.readUInt32BE(at);
    if (out.toString("latin1", at + 4, at + 8) === "IDAT") {
      out[at + 8 + Math.floor(length / 2)]! ^= 0xff;
      return out;
    }
    at += 12 + length;
  }
  throw new Error("no IDAT chunk in the PNG");
}

/** The RIFF chunks of a WAV file. */
function* riffChunks(wav: Buffer): Generator<{ id: string; at: number; length: number }> {
  for (let at = 12; at + 8 <= wav.length;) {
    const length = wav.readUInt32LE(at + 4);
    yield { id: wav.toString("latin1", at, at + 4), at, length };
    at += 8 + length + (length & 1);
  }
}

/** A WAV's header with a `data` chunk of 0 bytes: a valid file that holds no sample. */
function withoutSamples(wav: Buffer): Buffer {
  for (const chunk of riffChunks(wav)) {
    if (chunk.id !== "data") continue;
    const out = Buffer.from(wav.subarray(0, chunk.at + 8));
    out.writeUInt32LE(0, chunk.at + 4);
    out.writeUInt32LE(out.length - 8, 4);
    return out;
  }
  throw new Error("no data chunk in the WAV");
}

/** A Matroska file whose first Cluster keeps its ID and size, with garbage for its contents. */
function withGarbageCluster(mkv: Buffer): Buffer {
  const at = mkv.indexOf(Buffer.from([0x1f, 0x43, 0xb6, 0x75]));
  assert.ok(at > 0, "a Cluster in the Matroska file");
  // EBML variable-length size: its length is given by the first byte's leading zeros.
  const first = mkv[at + 4]!;
  const sizeLength = 9 - first.toString(2).length;
  let size = first & (0xff >> sizeLength);
  for (let i = 1; i < sizeLength; i++) size = size * 256 + mkv[at + 4 + i]!;
  const start = at + 4 + sizeLength;
  const end = Math.min(mkv.length, start + size);
  const out = Buffer.from(mkv);
  noiseBytes(end - start, 0xc1).copy(out, start);
  return out;
}

/**
 * An MJPEG AVI whose frames say they are width x height: in the JPEG frame header of every frame,
 * and with `headers` also in the AVI's main header (avih) and the stream's format (strf).
 */
function withMjpegSize(avi: Buffer, width: number, height: number, headers: boolean): Buffer {
  const out = Buffer.from(avi);
  if (headers) {
    const avih = out.indexOf("avih", 0, "latin1");
    out.writeUInt32LE(width, avih + 8 + 32);
    out.writeUInt32LE(height, avih + 8 + 36);
    const strf = out.indexOf("strf", 0, "latin1");
    out.writeInt32LE(width, strf + 8 + 4);
    out.writeInt32LE(height, strf + 8 + 8);
  }
  let frames = 0;
  for (
    let at = out.indexOf(Buffer.from([0xff, 0xc0]));
    at >= 0;
    at = out.indexOf(Buffer.from([0xff, 0xc0]), at + 2)
  ) {
    out.writeUInt16BE(height, at + 5);
    out.writeUInt16BE(width, at + 7);
    frames++;
  }
  assert.ok(frames > 0, "MJPEG frames in the AVI");
  return out;
}

// ---------------------------------------------------------------------------------------------
// Real media to start from.

const PHOTO = { width: 400, height: 300, photo: true, format: "jpeg" as const, quality: 60 };

async function audio(format: AudioContainer): Promise<Buffer> {
  return readFile(await makeAudio({ durationSeconds: 3, format, channels: 1 }));
}

async function mkv(): Promise<Buffer> {
  // Two seconds fit in one Cluster.
  return readFile(await makeVideo({ durationSeconds: 2, container: "mkv", audio: true }));
}

async function longMkv(): Promise<Buffer> {
  // Five seconds: a cut at 46 % leaves about 2.3 s.
  return readFile(await makeVideo({ durationSeconds: 5, container: "mkv", audio: true }));
}

async function mjpegAvi(): Promise<Buffer> {
  const path = join(mediaDir("mjpeg"), "small.avi");
  await ffmpeg([
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=64x48:rate=5:duration=2",
    "-c:v",
    "mjpeg",
    "-q:v",
    "5",
    path,
  ]);
  return readFile(path);
}

// ---------------------------------------------------------------------------------------------
// The corpus.

/** The types whose source may be of `kind` (a type of any kind reads every one). */
/** What a type's example reads: its source, or for a pipeline what its example's first step reads. */
const readsOf = (d: (typeof JOB_DEFINITIONS)[number]): MediaKind => {
  const steps = (d.example as { steps?: Record<string, { type: JobType }> }).steps;
  const first = steps ? Object.values(steps)[0] : undefined;
  return first ? definitionOf(first.type).media.source : d.media.source;
};
const reading = (kind: MediaKind): JobType[] =>
  JOB_DEFINITIONS.filter((d) => readsOf(d) === kind || readsOf(d) === "any").map((d) => d.name);
const IMAGE_TYPES = reading("image");
const AUDIO_TYPES = reading("audio");
const VIDEO_TYPES = reading("video");
/**
 * Types that read an image's header alone, never its pixels (jobs/image_metadata/processor.ts): where
 * the damage lies past an intact header, they complete with what the header says.
 */
const HEADER_READERS: JobType[] = ["image_metadata"];
/**
 * Types that read media's headers alone, with ffprobe (jobs/media_probe/processor.ts): where the
 * headers are intact and the damage past them, they complete, describing what the headers say.
 */
const MEDIA_HEADER_READERS: JobType[] = ["media_probe"];

interface HostileCase {
  name: string;
  /** The hostile file. */
  make: () => Promise<Buffer>;
  /** Its name's extension in the bucket. */
  extension: string;
  /** Every job type that reads this kind of media. */
  types: JobType[];
  /** A stable part of the job's error. */
  message: string;
  /** Where a type says it otherwise. */
  messageFor?: Partial<Record<JobType, string>>;
  classification: "permanent" | "transient";
  /** The file is the watermark image of a watermark job on a sound source, not the source. */
  asWatermark?: boolean;
  /** The damage lies past an intact header declaring this size (see HEADER_READERS). */
  header?: { width: number; height: number };
}

const CASES: HostileCase[] = [
  {
    name: "a small JPEG whose SOF claims 10000x9999",
    make: async () => withJpegSize(await makeImage(PHOTO), 10_000, 9_999),
    extension: "jpg",
    types: IMAGE_TYPES,
    message: "source image is truncated or corrupt: its header declares 10000x9999 pixels",
    messageFor: { media_probe: "source is not decodable media: ffprobe finds no frame size" },
    classification: "permanent",
  },
  {
    name: "a JPEG whose SOF claims 1200x900, a size its data could hold",
    make: async () => withJpegSize(await makeImage(PHOTO), 1200, 900),
    extension: "jpg",
    types: IMAGE_TYPES,
    message: "source image is truncated or corrupt: Corrupt JPEG data: premature end of data segment",
    header: { width: 1200, height: 900 },
    classification: "permanent",
  },
  {
    name: "a JPEG cut at 50 %",
    make: async () => truncated(await makeImage(PHOTO)),
    extension: "jpg",
    types: IMAGE_TYPES,
    message: "source image is truncated or corrupt: premature end of JPEG image",
    header: { width: 400, height: 300 },
    classification: "permanent",
  },
  {
    name: "a PNG cut at 50 %",
    make: async () => truncated(await makeImage({ ...PHOTO, format: "png" })),
    extension: "png",
    types: IMAGE_TYPES,
    message: "source image is truncated or corrupt: not enough data",
    header: { width: 400, height: 300 },
    classification: "permanent",
  },
  {
    name: "a PNG with a corrupt IDAT chunk (bad CRC)",
    make: async () => withCorruptIdat(await makeImage({ ...PHOTO, format: "png" })),
    extension: "png",
    types: IMAGE_TYPES,
    message: "source image is truncated or corrupt: libpng read error",
    header: { width: 400, height: 300 },
    classification: "permanent",
  },
  {
    name: "a text file named .jpg",
    make: async () => Buffer.from("This is not a picture.\n".repeat(20)),
    extension: "jpg",
    types: IMAGE_TYPES,
    message: "source is not a decodable image: not a known image format",
    messageFor: {
      analyze: "source is not an image, a video or audio",
      media_probe: "source is not decodable media: ffprobe finds no frame size",
    },
    classification: "permanent",
  },
  {
    name: "a zero-byte file",
    make: async () => Buffer.alloc(0),
    extension: "jpg",
    types: [...JOB_TYPES],
    // The runner refuses it as it downloads it.
    message: "is empty",
    classification: "permanent",
  },
  {
    name: "a watermark image whose SOF claims 10000x9999",
    make: async () => withJpegSize(await makeImage(PHOTO), 10_000, 9_999),
    extension: "jpg",
    types: ["image_watermark"],
    asWatermark: true,
    message: "is truncated or corrupt: its header declares 10000x9999 pixels",
    classification: "permanent",
  },
  {
    name: "a WAV cut at 50 %",
    make: async () => truncated(await audio("wav")),
    extension: "wav",
    types: AUDIO_TYPES,
    message: "source audio is truncated: it declares 3.00 s but holds 1.5",
    classification: "permanent",
  },
  {
    name: "an MP3 cut at 50 %",
    make: async () => truncated(await audio("mp3")),
    extension: "mp3",
    types: AUDIO_TYPES,
    message: "source audio is truncated: it declares 3.03 s but holds 1.5",
    classification: "permanent",
  },
  {
    name: "a FLAC cut at 50 %",
    make: async () => truncated(await audio("flac")),
    extension: "flac",
    types: AUDIO_TYPES,
    message: "source audio is truncated: it declares 3.00 s but holds",
    classification: "permanent",
  },
  {
    name: "an M4A cut at 50 % (its index in front)",
    make: async () => truncated(await audio("m4a")),
    extension: "m4a",
    types: AUDIO_TYPES,
    message: "source audio is truncated: it declares 3.0",
    classification: "permanent",
  },
  {
    name: "an MKV of 5 s cut at 46 % (the demuxer: File ended prematurely)",
    make: async () => truncated(await longMkv(), 0.46),
    extension: "mkv",
    types: [...VIDEO_TYPES, "audio_convert"],
    message: "source video is truncated: File ended prematurely",
    messageFor: {
      audio_convert: "source audio is truncated: it declares 5.0",
      video_transcode: "source video is truncated: it declares 5.0",
      // Given the length to encode (its progress), the ladder says how much of it there was.
      video_adaptive: "source video is truncated: it declares 5.0",
    },
    classification: "permanent",
  },
  {
    name: "a WAV that holds no samples (a data chunk of 0 bytes)",
    make: async () => withoutSamples(await audio("wav")),
    extension: "wav",
    types: AUDIO_TYPES,
    message: "source holds no audio samples",
    classification: "permanent",
  },
  {
    name: "an MKV whose cluster is overwritten with garbage",
    make: async () => withGarbageCluster(await mkv()),
    extension: "mkv",
    types: [...VIDEO_TYPES, "audio_convert"],
    message: "source video is corrupt: none of its frames decode",
    messageFor: { audio_convert: "source holds no audio samples that decode" },
    classification: "permanent",
  },
  {
    name: "an AVI of 65500x65500 MJPEG frames",
    make: async () => withMjpegSize(await mjpegAvi(), 65_500, 65_500, true),
    extension: "avi",
    types: VIDEO_TYPES,
    message: "source video frames are 65500x65500 (4290250000 pixels), more than limits.max_input_pixels",
    classification: "permanent",
  },
  {
    name: "an AVI that says 64x48 and holds 65500x65500 MJPEG frames",
    make: async () => withMjpegSize(await mjpegAvi(), 65_500, 65_500, false),
    extension: "avi",
    types: VIDEO_TYPES,
    message: "source video frames are 65500x65500 (4290250000 pixels), more than limits.max_input_pixels",
    classification: "permanent",
  },
];

// ---------------------------------------------------------------------------------------------

const KEY = "sk-hostile-media-provider";
let provider: TestAiProvider;
let stack: TestStack;

before(async () => {
  provider = await TestAiProvider.start({ apiKey: KEY, model: "vision-test" });
  stack = await startTestStack({
    config: {
      ai: {
        base_url: provider.baseUrl,
        api_key: KEY,
        model: "vision-test",
        transcription_model: "whisper-test",
      },
    },
  });
  await putObject(stack, "in/good.jpg", await makeImage(PHOTO));
});

after(async () => {
  await stack?.close();
  await provider?.close();
  removeMediaDirs();
});

/** A logger whose lines are kept, to check what the runner logged. */
function capturingLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split("\n").filter(Boolean));
      done();
    },
  });
  return { logger: pino({ level: "debug" }, sink), lines };
}

/**
 * Submits a job of `type` on `key` (its definition's route and example: test/support/submission.ts),
 * runs it as `runner --job` does; its outcome and record.
 */
async function runOn(type: JobType, key: string, asWatermark: boolean, more: Record<string, unknown> = {}) {
  const source = asWatermark ? "in/good.jpg" : key;
  const { path, body } = submission(definitionOf(type), {
    bucket: stack.bucket,
    sources: { image: source, video: source, audio: source },
    dest: `out/${type}/${key}`,
    parameters: { ...more, ...(asWatermark ? { watermark_text: undefined, watermark_image: key } : {}) },
  });
  const id = await submitAndClaim(stack, type, path, body);
  const { logger, lines } = capturingLogger();
  return { ...(await runClaimed(stack, id, logger)), lines };
}

describe("hostile media never completes, and fails with a clear message", () => {
  for (const [n, c] of CASES.entries()) {
    test(c.name, async () => {
      const key = `hostile/${n}.${c.extension}`;
      await putObject(stack, key, await c.make());
      for (const type of c.types) {
        const what = `${type} on ${c.name}`;
        provider.reset();
        const { outcome, job, lines } = await runOn(type, key, c.asWatermark === true);
        if (c.header && HEADER_READERS.includes(type)) {
          assert.equal(outcome.code, EXIT.done, `${what}: reads the intact header: ${outcome.error}`);
          assert.equal(job.status, "completed", what);
          assert.deepEqual(
            {
              width: (job.result as { width: number }).width,
              height: (job.result as { height: number }).height,
            },
            c.header,
            `${what}: the header's size`,
          );
          continue;
        }
        if (MEDIA_HEADER_READERS.includes(type) && outcome.code === EXIT.done) {
          const { streams } = job.result as { streams: Array<{ kind: string; width?: number }> };
          assert.ok(streams.length > 0, `${what}: describes the streams its headers declare`);
          if (c.header) {
            // An image is one video stream of its size, as its header says.
            assert.deepEqual(
              streams.map((s) => [s.kind, s.width]),
              [["video", c.header.width]],
              `${what}: the header's size`,
            );
          }
          continue;
        }
        assert.notEqual(
          outcome.code,
          EXIT.done,
          `${what}: must not complete (${JSON.stringify(job.result)})`,
        );
        assert.notEqual(job.status, "completed", what);
        if (c.classification === "permanent") {
          assert.equal(
            outcome.code,
            EXIT.permanent,
            `${what}: permanent, got ${outcome.code}: ${outcome.error}`,
          );
          assert.equal(job.status, "failed", what);
          assert.equal(job.error, outcome.error, `${what}: the job records the runner's reason`);
        } else {
          assert.equal(
            outcome.code,
            EXIT.transient,
            `${what}: transient, got ${outcome.code}: ${outcome.error}`,
          );
          assert.equal(job.status, "processing", `${what}: left for the executor to retry`);
        }
        const message = c.messageFor?.[type] ?? c.message;
        assert.ok(outcome.error?.includes(message), `${what}: expected "${message}" in: ${outcome.error}`);
        assert.doesNotMatch(outcome.error!, /\n|\n\s+at |\.ts:\d+/, `${what}: one line, no stack trace`);
        assert.ok(
          lines.every((line) => !/"stack"|\\n\s+at /.test(line)),
          `${what}: no stack trace in the runner's logs`,
        );
        assert.deepEqual(provider.to("/chat/completions"), [], `${what}: nothing reached the AI provider`);
        assert.deepEqual(provider.to("/audio/transcriptions"), [], `${what}: nothing was transcribed`);
      }
    });
  }
});

describe("a video cut short fails as truncated, at a timestamp just past the cut too", () => {
  // A thumbnail a moment past the last frame used to take that frame (the near-the-end retry),
  // and audio_convert delivered the part before the cut.
  for (const container of ["mkv", "mp4"] as const) {
    test(`a ${container} of 5 s cut at 46 %`, async () => {
      const whole = await makeVideo({
        durationSeconds: 5,
        container,
        audio: true,
        faststart: container === "mp4",
      });
      const cut = join(mediaDir("cut"), `cut.${container}`);
      await writeFile(cut, truncated(await readFile(whole), 0.46));
      const last = Math.max(...(await videoPacketTimes(cut)));
      assert.ok(last > 1.5 && last < 3, `the cut leaves about 2.3 s of video (last frame at ${last} s)`);
      const key = `truncated/cut.${container}`;
      await putObject(stack, key, await readFile(cut));

      const timestamp = (last + 0.1).toFixed(2);
      const thumbnail = await runOn("video_thumbnail", key, false, { timestamp });
      assert.equal(
        thumbnail.outcome.code,
        EXIT.permanent,
        `thumbnail at ${timestamp}: ${thumbnail.outcome.error}`,
      );
      assert.equal(thumbnail.job.status, "failed");
      assert.match(thumbnail.job.error ?? "", /^source video is truncated: /);

      const audio = await runOn("audio_convert", key, false);
      assert.equal(audio.outcome.code, EXIT.permanent, `audio_convert: ${audio.outcome.error}`);
      assert.match(
        audio.job.error ?? "",
        /^source audio is truncated: it declares 5\.0\d s but holds [12]\.\d\d s/,
      );
    });
  }
});

/** The times of a file's video packets, from ffprobe. */
async function videoPacketTimes(path: string): Promise<number[]> {
  const { stdout } = await execFileAsync("ffprobe", [
    ...["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0"],
    path,
  ]);
  return stdout
    .split("\n")
    .map((line) => Number(line.trim().replace(/,$/, "")))
    .filter((t) => Number.isFinite(t) && t > 0);
}

describe("quirks that lose no data still complete", () => {
  test("a JPEG with extraneous bytes before its end marker", async () => {
    const photo = await makeImage(PHOTO);
    const quirky = Buffer.concat([photo.subarray(0, -2), Buffer.from([1, 2, 3, 4]), photo.subarray(-2)]);
    await putObject(stack, "quirks/extraneous.jpg", quirky);
    for (const type of ["image_resize", "image_colors"] as const) {
      const { outcome, job } = await runOn(type, "quirks/extraneous.jpg", false);
      assert.equal(outcome.code, EXIT.done, `${type}: ${outcome.error}`);
      assert.equal(job.status, "completed");
    }
  });
});
