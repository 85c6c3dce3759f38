// What a media file holds, from ffprobe (through fluent-ffmpeg): container, duration, and the
// first video and audio streams. A file ffprobe cannot read is bad input: PermanentError, with
// ffprobe's own reason.
//
// ffprobe killed by a signal (the OOM killer) says nothing of the file: KilledError, transient.
//
// A job's source is checked further before anything decodes it (checkVideo, checkAudio): video
// frames within limits.max_input_pixels (ffprobe gives no size for frames too large for ffmpeg;
// their size is in ffprobe's complaint), and an audio header that does not declare zero samples
// (declared.ts).
import { execFile } from "node:child_process";
import { stat } from "node:fs/promises";
import ffmpeg, { type FfprobeData, type FfprobeStream } from "fluent-ffmpeg";
import { killedBy, PermanentError } from "../errors.js";
import { declaredLength, type DeclaredLength } from "./declared.js";
import { bitDepthOf, frameRateOf, matroskaDuration, positive, ratio, rotationOf } from "./streams.js";

export interface VideoStreamInfo {
  /** Absolute stream index in the file, for `-map 0:<index>`. */
  index: number;
  codec: string;
  /** Coded size, before rotation. */
  width: number;
  height: number;
  /** Sample aspect ratio (pixel shape); 1 for square pixels. */
  sampleAspectRatio: number;
  /** Degrees clockwise the player turns the picture (0, 90, 180, 270); 90 and 270 swap the sides. */
  rotation: number;
  /** Frames per second (average, else the stream's base rate), when the file says. */
  frameRate?: number;
  /** The stream's base rate (r_frame_rate): a variable rate's fastest, where it differs. */
  baseFrameRate?: number;
  /** ffprobe's pixel format, e.g. yuv420p, yuv420p10le. */
  pixelFormat?: string;
  /** Bits per component (8, 10, 12…), from the stream or its pixel format. */
  bitDepth?: number;
  /** Size as shown: square pixels and rotation applied (what ffmpeg's autorotate outputs). */
  displayWidth: number;
  displayHeight: number;
  duration?: number;
}

export interface AudioStreamInfo {
  index: number;
  codec: string;
  sampleRate?: number;
  channels?: number;
  bitRate?: number;
  duration?: number;
  /** The length the file's header declares (checkAudio fills it in; see declared.ts). */
  declared?: DeclaredLength;
}

export interface MediaInfo {
  /** ffprobe's format_name, e.g. `mov,mp4,m4a,3gp,3g2,mj2`, `matroska,webm`, `mp3`. */
  formatName: string;
  /** Seconds; undefined when neither the container nor the stream says. */
  duration?: number;
  bitRate?: number;
  /** The first video stream that is not an attached picture (cover art). */
  video?: VideoStreamInfo;
  /** That stream when ffprobe could not tell its frame size (`video` is then absent). */
  unsizedVideo?: { index: number; codec: string };
  /** The first audio stream. */
  audio?: AudioStreamInfo;
  raw: FfprobeData;
}

export type MediaKind = "video" | "audio";

/** ffprobe failed: `reason` is ffprobe's own message, cleaned of paths and addresses. */
export class ProbeError extends Error {
  override name = "ProbeError";
  constructor(readonly reason: string) {
    super(`ffprobe could not read the file: ${reason}`);
  }
}

// Demuxers that accept nearly anything and would turn a text file into "video".
export const NOT_MEDIA_FORMATS: ReadonlySet<string> = new Set(["tty"]);
// Playlists and lists of other files: their media would come from elsewhere on the runner's disk.
export const REFERENCE_FORMATS: ReadonlySet<string> = new Set(["hls", "dash", "concat"]);

/**
 * Input options for every ffprobe/ffmpeg run on a job's file: the local file protocol only, so a
 * file that refers to others (a playlist) cannot make ffmpeg fetch from the network.
 */
export const INPUT_PROTOCOLS = ["-protocol_whitelist", "file"];

/**
 * Probes a file. `args` are extra ffprobe options (e.g. `-count_packets`). Rejects with ProbeError
 * when ffprobe cannot read the file, with KilledError when a signal killed it; settles early when
 * `signal` aborts.
 */
export async function probeFile(
  path: string,
  options: { signal?: AbortSignal; args?: string[] } = {},
): Promise<MediaInfo> {
  const { signal, args = [] } = options;
  const data = await new Promise<FfprobeData>((resolve, reject) => {
    if (signal?.aborted) return reject(abortReason(signal));
    // fluent-ffmpeg does not expose ffprobe's process, so an abort can only stop the wait. ffprobe
    // of a local file ends by itself; it reads headers, not the whole file.
    const onAbort = () => reject(abortReason(signal!));
    signal?.addEventListener("abort", onAbort, { once: true });
    ffmpeg.ffprobe(
      path,
      ["-hide_banner", "-v", "error", ...INPUT_PROTOCOLS, ...args],
      (err: unknown, data: FfprobeData) => {
        signal?.removeEventListener("abort", onAbort);
        if (err) return reject(killedBy("ffprobe", err) ?? new ProbeError(probeReason(err, path)));
        resolve(data);
      },
    );
  });
  return describe(data);
}

export interface SourceCheckOptions {
  signal?: AbortSignal;
  /** limits.max_input_pixels: larger video frames are refused. */
  maxInputPixels?: number;
}

/** Probes a job's source that must hold a kind of stream; bad media → PermanentError. */
export async function probeSource(
  path: string,
  kind: MediaKind,
  options: SourceCheckOptions = {},
): Promise<MediaInfo> {
  const info = await probeReadable(path, `a decodable ${kind}`, options.signal);
  if (kind === "video" && info.unsizedVideo) await checkVideo(path, info, options);
  if (!info[kind]) throw new PermanentError(`source has no ${kind} stream${heldStreams(info)}`);
  if (kind === "video") await checkVideo(path, info, options);
  else await checkAudio(path, info);
  return info;
}

/**
 * Probes a job's source that must hold a video or an audio stream, or both, without decoding it: its
 * frames may be larger than `maxInputPixels` (nothing is decoded), which only names the limit when
 * ffprobe could give no frame size because of it. Bad media → PermanentError.
 */
export async function probeMedia(path: string, options: SourceCheckOptions = {}): Promise<MediaInfo> {
  const info = await probeReadable(path, "decodable media", options.signal);
  // A stream ffprobe gives no size is no video, unless ffprobe's complaint names one too large
  // (against maxInputPixels, when given, so the message names the limit as the other jobs' do).
  if (info.unsizedVideo && !info.video && !info.audio) {
    await checkVideo(path, info, options);
    throw new PermanentError(
      `source is not decodable media: ffprobe finds no frame size in its video stream (${info.unsizedVideo.codec})`,
    );
  }
  if (!info.video && !info.audio) {
    throw new PermanentError(`source has no video or audio stream${heldStreams(info)}`);
  }
  if (info.audio) await checkAudio(path, info);
  return info;
}

/**
 * What ffprobe reads of a file that is there, is not empty, and is neither text nor a playlist;
 * otherwise PermanentError: "source is not <what>: <why>".
 */
async function probeReadable(path: string, what: string, signal?: AbortSignal): Promise<MediaInfo> {
  if ((await stat(path)).size === 0) {
    throw new PermanentError(`source is not ${what}: the file is empty`);
  }
  let info: MediaInfo;
  try {
    info = await probeFile(path, signal ? { signal } : {});
  } catch (err) {
    if (err instanceof ProbeError) {
      throw new PermanentError(`source is not ${what}: ${err.reason}`);
    }
    throw err;
  }
  if (NOT_MEDIA_FORMATS.has(info.formatName)) {
    throw new PermanentError(`source is not ${what}: it looks like a text file`);
  }
  if (REFERENCE_FORMATS.has(info.formatName)) {
    throw new PermanentError(
      `source is not ${what}: it is a playlist (${info.formatName}); upload the media file itself`,
    );
  }
  return info;
}

/** " (it holds: video (h264), audio (aac))", or " (it holds no streams)". */
function heldStreams(info: MediaInfo): string {
  const held = describeStreams(info.raw);
  return held ? ` (it holds: ${held})` : " (it holds no streams)";
}

/**
 * The first video stream's frames must be within limits.max_input_pixels, and within what ffmpeg
 * decodes. Throws PermanentError naming their size; a stream ffprobe gave no size is probed once
 * more, to find the size in ffprobe's complaint about it.
 */
export async function checkVideo(
  path: string,
  info: MediaInfo,
  options: SourceCheckOptions = {},
): Promise<void> {
  const { maxInputPixels } = options;
  if (info.video) {
    const { width, height } = info.video;
    if (maxInputPixels !== undefined && width * height > maxInputPixels) {
      throw frameSizeError(width, height, maxInputPixels);
    }
    return;
  }
  if (!info.unsizedVideo) return;
  // Otherwise (e.g. a text file named .jpg, which ffprobe takes for an MJPEG stream) it is no video.
  const size = frameSizeIn(await probeStderr(path, info.unsizedVideo.index, options.signal));
  if (size) throw frameSizeError(size.width, size.height, maxInputPixels);
}

/**
 * Reads the length the first audio stream's header declares into `info.audio.declared`; a header
 * declaring no samples at all → PermanentError.
 */
export async function checkAudio(path: string, info: MediaInfo): Promise<void> {
  if (!info.audio) return;
  const declared = await declaredLength(path, info.formatName);
  if (!declared) return;
  if (declared.seconds === 0) {
    throw new PermanentError(`source holds no audio samples (its ${declared.from} declares none)`);
  }
  info.audio.declared = declared;
}

/** "source video frames are 65500x65500 (4290250000 pixels), more than limits.max_input_pixels (…)" */
export function frameSizeError(width: number, height: number, maxInputPixels?: number): PermanentError {
  const pixels = width * height;
  const limit =
    maxInputPixels !== undefined && pixels > maxInputPixels
      ? `more than limits.max_input_pixels (${maxInputPixels})`
      : "more than ffmpeg decodes";
  return new PermanentError(`source video frames are ${width}x${height} (${pixels} pixels), ${limit}`);
}

/** The frame size in an ffmpeg/ffprobe complaint about it ("Picture size 65500x65500 is invalid"). */
export function frameSizeIn(lines: string[]): { width: number; height: number } | undefined {
  for (const line of lines) {
    const m = /Picture size (\d+)x(\d+) (?:is invalid|exceeds)/i.exec(line);
    if (m) return { width: Number(m[1]), height: Number(m[2]) };
  }
  return undefined;
}

/**
 * ffprobe's complaints about one stream, one per line (it exits 0 when it only complains). Rejects
 * with KilledError when a signal other than the job's own abort killed it.
 */
function probeStderr(path: string, index: number, signal?: AbortSignal): Promise<string[]> {
  const args = ["-hide_banner", "-v", "error", ...INPUT_PROTOCOLS, "-select_streams", String(index)];
  args.push("-show_entries", "stream=width", "-of", "csv=p=0", path);
  return new Promise((resolve, reject) => {
    // As fluent-ffmpeg finds it.
    execFile(
      process.env.FFPROBE_PATH || "ffprobe",
      args,
      { ...(signal ? { signal } : {}), maxBuffer: 1024 * 1024 },
      (err, _out, stderr) => {
        const killed = err && !signal?.aborted ? killedBy("ffprobe", err) : undefined;
        if (killed) return reject(killed);
        resolve(
          String(stderr ?? "")
            .split(/\r?\n/)
            .filter((line) => line.trim().length > 0),
        );
      },
    );
  });
}

function describe(data: FfprobeData): MediaInfo {
  const streams = data.streams ?? [];
  const videoStream = streams.find((s) => s.codec_type === "video" && s.disposition?.attached_pic !== 1);
  const audioStream = streams.find((s) => s.codec_type === "audio");
  const video = videoStream && describeVideo(videoStream);
  const unsizedVideo =
    videoStream && !video
      ? { index: videoStream.index, codec: String(videoStream.codec_name ?? "unknown") }
      : undefined;
  const audio = audioStream && describeAudio(audioStream);
  const duration = positive(data.format?.duration) ?? video?.duration ?? audio?.duration ?? undefined;
  const bitRate = positive(data.format?.bit_rate);
  return {
    formatName: String(data.format?.format_name ?? "unknown"),
    ...(duration !== undefined ? { duration } : {}),
    ...(bitRate !== undefined ? { bitRate: Math.round(bitRate) } : {}),
    ...(video ? { video } : {}),
    ...(unsizedVideo ? { unsizedVideo } : {}),
    ...(audio ? { audio } : {}),
    raw: data,
  };
}

function describeVideo(s: FfprobeStream): VideoStreamInfo | undefined {
  const width = positive(s.width);
  const height = positive(s.height);
  // A video stream without a size has no decodable picture (e.g. a codec ffmpeg cannot decode).
  if (!width || !height) return undefined;
  const sar = ratio(s.sample_aspect_ratio) ?? 1;
  const rotation = rotationOf(s);
  const shownWidth = Math.max(1, Math.round(width * sar));
  const turned = rotation === 90 || rotation === 270;
  const duration = positive(s.duration) ?? matroskaDuration(s);
  const frameRate = frameRateOf(s);
  const baseFrameRate = ratio(s.r_frame_rate);
  const bitDepth = bitDepthOf(s);
  const pixelFormat = typeof s.pix_fmt === "string" && s.pix_fmt !== "unknown" ? s.pix_fmt : undefined;
  return {
    index: s.index,
    codec: String(s.codec_name ?? "unknown"),
    width,
    height,
    sampleAspectRatio: sar,
    rotation,
    displayWidth: turned ? height : shownWidth,
    displayHeight: turned ? shownWidth : height,
    ...(frameRate !== undefined ? { frameRate } : {}),
    ...(baseFrameRate !== undefined ? { baseFrameRate } : {}),
    ...(pixelFormat !== undefined ? { pixelFormat } : {}),
    ...(bitDepth !== undefined ? { bitDepth } : {}),
    ...(duration !== undefined ? { duration } : {}),
  };
}

function describeAudio(s: FfprobeStream): AudioStreamInfo {
  const sampleRate = positive(s.sample_rate);
  const channels = positive(s.channels);
  const bitRate = positive(s.bit_rate);
  const duration = positive(s.duration) ?? matroskaDuration(s);
  return {
    index: s.index,
    codec: String(s.codec_name ?? "unknown"),
    ...(sampleRate !== undefined ? { sampleRate: Math.round(sampleRate) } : {}),
    ...(channels !== undefined ? { channels: Math.round(channels) } : {}),
    ...(bitRate !== undefined ? { bitRate: Math.round(bitRate) } : {}),
    ...(duration !== undefined ? { duration } : {}),
  };
}

/** "video (h264), audio (aac)" */
function describeStreams(data: FfprobeData): string {
  return (data.streams ?? [])
    .map((s) => {
      const type = s.disposition?.attached_pic === 1 ? "cover art" : String(s.codec_type ?? "unknown");
      return s.codec_name ? `${type} (${s.codec_name})` : type;
    })
    .join(", ");
}

/**
 * ffprobe's message without the noise: "ffprobe exited with code 1", the file's path and the
 * `[demuxer @ 0x…]` prefixes go; distinct lines are joined with "; ".
 */
export function probeReason(err: unknown, path: string): string {
  const message = err instanceof Error ? err.message : String(err);
  const lines = message
    .split(/\r?\n/)
    .map((line) => cleanLine(line, path))
    .filter((line) => line && !/^ffprobe (exited with code|was killed)/.test(line));
  const unique = [...new Set(lines)];
  const reason = unique.join("; ") || message.split("\n")[0]!.trim() || "unknown error";
  return reason.length > 300 ? `${reason.slice(0, 297)}...` : reason;
}

/** A log line of ffmpeg/ffprobe without `[name @ 0x…]` prefixes and the file's path. */
export function cleanLine(line: string, path?: string): string {
  let text = line.replace(/\[[^\]]*@ 0x[0-9a-f]+\]\s*/gi, "").trim();
  if (path) text = text.split(`${path}: `).join("").split(path).join("the file");
  return text.trim();
}

function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error("aborted");
}
