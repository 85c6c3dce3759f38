// How a video is encoded: the ffmpeg options of each video codec (encoder, speed preset, quality or
// bitrate, its own thread settings), of each audio codec, of each container, and the size a video is
// fitted to. Pure: the processors build their ffmpeg commands from these.
import type { VideoTranscodeParameters } from "../../core/jobs/parameters.js";
import { audioCodec } from "./codecs.js";
import type { AudioStreamInfo, VideoStreamInfo } from "./probe.js";

type Parameters = VideoTranscodeParameters;
export type VideoCodec = Parameters["video_codec"];
export type Container = Parameters["container"];
export type Preset = Parameters["preset"];

export const CONTAINER_FORMATS: Readonly<
  Record<Container, { muxer: string; contentType: string; extension: string; options: readonly string[] }>
> = {
  // The index (moov) first, so the file plays while it downloads.
  mp4: { muxer: "mp4", contentType: "video/mp4", extension: "mp4", options: ["-movflags", "+faststart"] },
  mov: {
    muxer: "mov",
    contentType: "video/quicktime",
    extension: "mov",
    options: ["-movflags", "+faststart"],
  },
  webm: { muxer: "webm", contentType: "video/webm", extension: "webm", options: [] },
  mkv: { muxer: "matroska", contentType: "video/x-matroska", extension: "mkv", options: [] },
};

interface VideoEncoder {
  encoder: string;
  /** codec_name ffprobe gives the output. */
  codecName: string;
  /** The crf used when neither crf nor video_bitrate is given. */
  defaultCrf: number;
  /** The encoder's options for a preset. */
  preset: Record<Preset, string[]>;
  /** Its own thread settings, where it does not follow `-threads`. */
  threads: (cpus: number) => string[];
  /** Options that make crf a constant quality (vp9: no bitrate target). */
  crf: (crf: number, maxBitrate?: string) => string[];
}

export const VIDEO_ENCODERS: Readonly<Record<Exclude<VideoCodec, "copy">, VideoEncoder>> = {
  h264: {
    encoder: "libx264",
    codecName: "h264",
    defaultCrf: 23,
    preset: { fast: ["-preset", "veryfast"], medium: ["-preset", "medium"], slow: ["-preset", "slow"] },
    threads: () => [],
    crf: (crf) => ["-crf", String(crf)],
  },
  h265: {
    encoder: "libx265",
    codecName: "hevc",
    defaultCrf: 28,
    preset: { fast: ["-preset", "veryfast"], medium: ["-preset", "medium"], slow: ["-preset", "slow"] },
    // x265 sizes its thread pool by the machine's cores, not by -threads; its log at errors only.
    threads: (cpus) => ["-x265-params", `pools=${cpus}:log-level=error`],
    crf: (crf) => ["-crf", String(crf)],
  },
  vp9: {
    encoder: "libvpx-vp9",
    codecName: "vp9",
    defaultCrf: 33,
    preset: {
      fast: ["-deadline", "good", "-cpu-used", "4"],
      medium: ["-deadline", "good", "-cpu-used", "2"],
      slow: ["-deadline", "good", "-cpu-used", "1"],
    },
    threads: () => ["-row-mt", "1"],
    // Constant quality is crf with no bitrate target; with a ceiling, constrained quality.
    crf: (crf, maxBitrate) => ["-crf", String(crf), "-b:v", maxBitrate ?? "0"],
  },
  av1: {
    encoder: "libsvtav1",
    codecName: "av1",
    defaultCrf: 35,
    preset: { fast: ["-preset", "10"], medium: ["-preset", "8"], slow: ["-preset", "6"] },
    // SVT-AV1 uses every core unless told its logical processors (lp).
    threads: (cpus) => ["-svtav1-params", `lp=${cpus}`],
    crf: (crf) => ["-crf", String(crf)],
  },
};

/** SVT-AV1 refuses frames smaller than this on either side. */
export const AV1_MIN_SIDE = 64;

/** The ffmpeg output options that encode the video stream (the codec, its rate control, its threads). */
export function videoEncodeOptions(p: Parameters, container: Container, cpus: number): string[] {
  if (p.video_codec === "copy") return ["-c:v", "copy"];
  const codec = VIDEO_ENCODERS[p.video_codec];
  const options = ["-c:v", codec.encoder, ...codec.preset[p.preset], ...codec.threads(cpus)];
  if (p.video_bitrate !== undefined) {
    options.push("-b:v", p.video_bitrate);
    if (p.max_bitrate !== undefined)
      options.push("-maxrate", p.max_bitrate, "-bufsize", double(p.max_bitrate));
  } else {
    options.push(...codec.crf(p.crf ?? codec.defaultCrf, p.max_bitrate));
    if (p.max_bitrate !== undefined && p.video_codec !== "vp9") {
      options.push("-maxrate", p.max_bitrate, "-bufsize", double(p.max_bitrate));
    }
  }
  options.push("-pix_fmt", p.pixel_format);
  // Apple's players take HEVC in MP4 and MOV only under the hvc1 sample entry (ffmpeg writes hev1).
  if (p.video_codec === "h265" && (container === "mp4" || container === "mov"))
    options.push("-tag:v", "hvc1");
  return options;
}

const double = (bitrate: string) => `${2 * Number(bitrate.slice(0, -1))}k`;

/** The ffmpeg output options of the audio stream: none, copied, or encoded within its encoder's rates. */
export function audioOptions(p: Parameters, source: AudioStreamInfo | undefined): string[] {
  if (p.audio_codec === "none" || !source) return ["-an"];
  if (p.audio_codec === "copy") return ["-c:a", "copy"];
  const codec = audioCodec(p.audio_codec);
  const options = ["-c:a", codec.encoder, "-b:a", p.audio_bitrate ?? codec.defaultBitrate!];
  const rates = codec.sampleRates ?? [];
  const rate =
    p.audio_sample_rate ??
    (source.sampleRate && rates.includes(source.sampleRate) ? undefined : codec.preferredSampleRate);
  if (rate !== undefined) options.push("-ar", String(rate));
  const max = codec.maxChannels ?? 8;
  const channels = p.audio_channels ?? (source.channels && source.channels > max ? max : undefined);
  if (channels !== undefined) options.push("-ac", String(channels));
  return options;
}

/**
 * The output's size: the video as displayed (rotation and pixel shape applied) fitted inside the box
 * (width, height, and the largest output dimension), never enlarged, aspect kept, both sides even.
 */
export function fitSize(
  video: Pick<VideoStreamInfo, "displayWidth" | "displayHeight">,
  box: { width?: number | undefined; height?: number | undefined },
  maxDimension: number,
): { width: number; height: number } {
  const { displayWidth: w, displayHeight: h } = video;
  const scale = Math.min(
    1,
    (box.width ?? maxDimension) / w,
    (box.height ?? maxDimension) / h,
    maxDimension / w,
    maxDimension / h,
  );
  const even = (n: number) => Math.max(2, 2 * Math.floor(n / 2 + 1e-6));
  return { width: even(w * scale), height: even(h * scale) };
}
