// Media for the audio/video tests, generated with `ffmpeg -f lavfi` into temporary directories
// (nothing binary is kept in git), bad media of several kinds, and a ProcessContext to call a
// processor directly.
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { pino } from "pino";
import { loadConfig } from "../../core/config/load.js";
import type { Job } from "../../core/jobs/records.js";
import type { JobType } from "../../core/jobs/types.js";
import type { ProcessContext } from "../../runner/processor.js";

const run = promisify(execFile);

/** A temporary directory, removed by removeMediaDirs(). */
const dirs: string[] = [];
export function mediaDir(label = "av"): string {
  const dir = mkdtempSync(join(tmpdir(), `media-service-${label}-`));
  dirs.push(dir);
  return dir;
}
export function removeMediaDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export async function ffmpeg(args: string[]): Promise<void> {
  await run("ffmpeg", ["-hide_banner", "-nostdin", "-v", "error", "-y", ...args], {
    maxBuffer: 16 * 1024 * 1024,
  });
}

export type VideoContainer = "mp4" | "webm" | "mov" | "avi" | "mkv" | "flv";

// Fast encoders per container, all in Debian's ffmpeg.
const VIDEO_CODECS: Record<VideoContainer, { video: string[]; audio: string[] }> = {
  mp4: { video: ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"], audio: ["-c:a", "aac"] },
  mov: { video: ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"], audio: ["-c:a", "aac"] },
  mkv: { video: ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"], audio: ["-c:a", "aac"] },
  webm: {
    video: ["-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "400k"],
    audio: ["-c:a", "libvorbis"],
  },
  avi: { video: ["-c:v", "mpeg4", "-q:v", "5"], audio: ["-c:a", "libmp3lame"] },
  flv: { video: ["-c:v", "flv1", "-q:v", "5"], audio: ["-c:a", "libmp3lame", "-ar", "44100"] },
};

/** 10-bit HEVC (x265's Main 10), for the containers that take it (mp4, mov, mkv). */
const HEVC_10_BIT = [
  ...["-c:v", "libx265", "-preset", "ultrafast", "-pix_fmt", "yuv420p10le"],
  ...["-x265-params", "log-level=error"],
];

export interface VideoOptions {
  durationSeconds: number;
  width?: number;
  height?: number;
  container?: VideoContainer;
  /** Replaces the container's default video encoder options. */
  codec?: string[];
  /** Encodes 10-bit HEVC (x265's Main 10, yuv420p10le) instead of the container's default. */
  tenBitHevc?: boolean;
  /** Frames a second, a number or a ratio ("30000/1001"). */
  rate?: number | string;
  /** Adds a sine tone as an audio stream: mono at 44.1 kHz, untagged, unless told otherwise. */
  audio?: boolean | { sampleRate?: number; channels?: number; language?: string };
  /** MP4/MOV: the index (moov) at the front. */
  faststart?: boolean;
  /** Display rotation in degrees (written as the stream's display matrix). */
  rotate?: number;
  dir?: string;
}

/**
 * A video of testsrc2 (moving shapes and a running clock, so every moment looks different),
 * 320x240 at 25 fps unless told otherwise.
 */
export async function makeVideo(options: VideoOptions): Promise<string> {
  const { durationSeconds, width = 320, height = 240, container = "mp4", rate = 25 } = options;
  const dir = options.dir ?? mediaDir("video");
  const path = join(dir, `${randomUUID()}.${container}`);
  const codecs = VIDEO_CODECS[container];
  const args = [
    "-f",
    "lavfi",
    "-i",
    `testsrc2=size=${width}x${height}:rate=${rate}:duration=${durationSeconds}`,
  ];
  const audio = options.audio === true ? {} : options.audio || undefined;
  if (audio) {
    const rate = audio.sampleRate === undefined ? "" : `:sample_rate=${audio.sampleRate}`;
    args.push("-f", "lavfi", "-i", `sine=frequency=440:duration=${durationSeconds}${rate}`);
  }
  args.push(...(options.codec ?? (options.tenBitHevc ? HEVC_10_BIT : codecs.video)));
  if (audio) {
    args.push(...codecs.audio);
    if (audio.channels !== undefined) args.push("-ac", String(audio.channels));
    if (audio.language !== undefined) args.push("-metadata:s:a:0", `language=${audio.language}`);
  }
  if (options.faststart) args.push("-movflags", "+faststart");
  await ffmpeg([...args, path]);
  if (options.rotate !== undefined) {
    // ffmpeg 5.1 writes the display matrix from the `rotate` tag only when it copies the stream.
    const rotated = path.replace(/(\.[^./]+)$/, `-rotated$1`);
    await ffmpeg(["-i", path, "-c", "copy", "-metadata:s:v:0", `rotate=${options.rotate}`, rotated]);
    return rotated;
  }
  return path;
}

export type AudioContainer = "wav" | "mp3" | "flac" | "ogg" | "opus" | "m4a" | "aac";

const AUDIO_ENCODERS: Record<AudioContainer, string[]> = {
  wav: ["-c:a", "pcm_s16le"],
  mp3: ["-c:a", "libmp3lame", "-b:a", "128k"],
  flac: ["-c:a", "flac"],
  ogg: ["-c:a", "libvorbis"],
  opus: ["-c:a", "libopus"],
  m4a: ["-c:a", "aac", "-movflags", "+faststart"],
  aac: ["-c:a", "aac", "-f", "adts"],
};

export interface AudioOptions {
  durationSeconds: number;
  format?: AudioContainer;
  sampleRate?: number;
  channels?: number;
  frequency?: number;
  dir?: string;
  /** Global tags to write, e.g. { title: "x" }. */
  tags?: Record<string, string>;
  /** Adds a cover picture (an attached picture stream); mp3 only. */
  coverArt?: boolean;
}

/** A sine tone, 44.1 kHz stereo wav unless told otherwise. */
export async function makeAudio(options: AudioOptions): Promise<string> {
  const { durationSeconds, format = "wav", sampleRate = 44100, channels = 2, frequency = 440 } = options;
  const dir = options.dir ?? mediaDir("audio");
  const path = join(dir, `${randomUUID()}.${format}`);
  const args = [
    "-f",
    "lavfi",
    "-i",
    `sine=frequency=${frequency}:duration=${durationSeconds}:sample_rate=${sampleRate}`,
  ];
  if (options.coverArt) args.push("-f", "lavfi", "-i", "color=c=red:size=64x64:duration=1", "-frames:v", "1");
  args.push("-map", "0:a");
  if (options.coverArt) args.push("-map", "1:v", "-c:v", "mjpeg", "-disposition:v", "attached_pic");
  args.push("-ac", String(channels), ...AUDIO_ENCODERS[format]);
  for (const [key, value] of Object.entries(options.tags ?? {})) args.push("-metadata", `${key}=${value}`);
  await ffmpeg([...args, path]);
  return path;
}

/** Bad media, each of its own kind. */
export async function emptyFile(dir: string, name = "empty.mp4"): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, Buffer.alloc(0));
  return path;
}

export async function textFile(dir: string, name = "notes.txt"): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, "This is not a video.\nIt is a few lines of plain text.\n".repeat(20));
  return path;
}

/** Pseudo-random bytes from a fixed seed (xorshift32), so every run probes the same bytes. */
export async function noiseFile(dir: string, size = 64 * 1024, name = "noise.bin"): Promise<string> {
  const bytes = Buffer.alloc(size);
  let x = 0x9e3779b9;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    bytes[i] = x & 0xff;
  }
  const path = join(dir, name);
  await writeFile(path, bytes);
  return path;
}

/** The first `fraction` of a file's bytes, as a new file. */
export async function truncated(source: string, fraction = 0.5): Promise<string> {
  const bytes = await readFile(source);
  const path = source.replace(/(\.[^./]+)$/, `-cut$1`);
  await writeFile(path, bytes.subarray(0, Math.floor(bytes.length * fraction)));
  return path;
}

export interface Probed {
  format: { format_name: string; duration?: string; bit_rate?: string };
  streams: Array<{
    codec_type: string;
    codec_name: string;
    width?: number;
    height?: number;
    sample_rate?: string;
    channels?: number;
    bit_rate?: string;
    duration?: string;
  }>;
}

/** ffprobe's JSON view of a file, independent of the code under test. */
export async function ffprobe(path: string): Promise<Probed> {
  const { stdout } = await run("ffprobe", [
    "-v",
    "error",
    "-show_format",
    "-show_streams",
    "-of",
    "json",
    path,
  ]);
  return JSON.parse(stdout) as Probed;
}

export interface ContextHandle {
  ctx: ProcessContext;
  /** Every progress report, in order. */
  progress: Array<{ percent: number; message?: string }>;
  abort: AbortController;
}

/** A ProcessContext for calling a processor directly: its own scratch dir, progress collected. */
export async function makeContext(
  type: JobType,
  sourcePath: string,
  parameters: Record<string, unknown>,
): Promise<ContextHandle> {
  const config = loadConfig({ env: {} });
  const scratchDir = join(mediaDir("scratch"), "job");
  await mkdir(scratchDir, { recursive: true });
  await stat(sourcePath);
  const now = new Date().toISOString();
  const job: Job = {
    id: randomUUID(),
    type,
    status: "processing",
    source_bucket: "media-in",
    source_key: `in/${sourcePath.split("/").pop()}`,
    dest_bucket: "media-out",
    dest_key: `out/${randomUUID()}`,
    parameters,
    created_at: now,
    updated_at: now,
  };
  const progress: ContextHandle["progress"] = [];
  const abort = new AbortController();
  const ctx: ProcessContext = {
    job,
    sourcePath,
    scratchDir,
    limits: {
      maxInputPixels: config.limits.maxInputPixels,
      maxOutputDimension: config.limits.maxOutputDimension,
    },
    signal: abort.signal,
    progress: (percent, message) => progress.push(message === undefined ? { percent } : { percent, message }),
    fetchObject: () => Promise.reject(new Error("fetchObject is not used by audio/video processors")),
    logger: pino({ level: "silent" }),
    config,
  };
  return { ctx, progress, abort };
}
