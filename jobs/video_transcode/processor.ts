// video_transcode: the first video stream of the source (and its first audio stream), encoded
// again, or copied, into one file: mp4, webm, mkv or mov (see ../../runner/av/video-encode.ts for
// the encoders, their presets and rate control).
//
// Pipeline: probe (the source must hold a video stream within limits.max_input_pixels, and not be a
// still image; a trim must start before its end) → when a stream is copied, a check that the
// container takes the source's codec (a second of it, copied) → ffmpeg: input seek to `start`,
// `-t duration`, autorotate (ffmpeg's default: the output is upright, its size the displayed one),
// a scale to the size fitted inside width×height (even sides, square pixels), a frame rate cap, the
// pixel format (10-bit sources brought to 8 bits unless 10 bits are asked for), the encoders with
// `-threads` (and x265's pools, SVT-AV1's lp) of the CPUs the runner has → the written file probed
// for the result: every figure read back from it, none echoed from the request.
//
// The output is written to the scratch directory and uploaded by the runner only when this
// returns: a cancelled or failed job leaves no object.
import { join } from "node:path";
import { withDefaults } from "../../core/jobs/parameters.js";
import { PermanentError } from "../../runner/errors.js";
import type { Processor } from "../../runner/processor.js";
import { availableCpus } from "../../runner/cpus.js";
import { probeFile, probeSource, type MediaInfo } from "../../runner/av/probe.js";
import { EncoderSetupError, runFfmpeg } from "../../runner/av/run.js";
import { checkEncodedVideo, checkNotStill } from "../../runner/av/moving.js";
import { formatDuration } from "../../runner/av/timestamp.js";
import {
  audioOptions,
  AV1_MIN_SIDE,
  CONTAINER_FORMATS,
  fitSize,
  videoEncodeOptions,
} from "../../runner/av/video-encode.js";

/** Progress shares: probing the source, encoding, probing the output. */
const ENCODE_FROM = 5;
const ENCODE_TO = 95;

export const videoTranscode: Processor = async (ctx) => {
  const p = withDefaults("video_transcode", ctx.job.parameters);
  const container = CONTAINER_FORMATS[p.container];
  if (!container) throw new PermanentError(`unsupported container ${String(p.container)}`);
  if (p.video_bitrate !== undefined && p.crf !== undefined) {
    throw new PermanentError("crf and video_bitrate are mutually exclusive: give one of them");
  }
  if (p.video_bitrate && p.max_bitrate && kbps(p.max_bitrate) < kbps(p.video_bitrate)) {
    throw new PermanentError(
      `max_bitrate ${p.max_bitrate} is below video_bitrate ${p.video_bitrate}: a ceiling must be at least the average`,
    );
  }
  const { maxInputPixels, maxOutputDimension } = ctx.limits;
  const { signal } = ctx;

  ctx.progress(0, "reading the video");
  const info = await probeSource(ctx.sourcePath, "video", { signal, maxInputPixels });
  const video = info.video!;
  checkNotStill(info, "a transcode");
  const sourceDuration = video.duration ?? info.duration;
  const start = p.start ?? 0;
  if (sourceDuration !== undefined && start >= sourceDuration) {
    throw new PermanentError(
      `start ${start} s is past the end of the video (duration ${formatDuration(sourceDuration)})`,
    );
  }
  const length =
    sourceDuration === undefined
      ? p.duration
      : Math.min(sourceDuration - start, p.duration ?? Number.POSITIVE_INFINITY);

  const copyVideo = p.video_codec === "copy";
  const filters: string[] = [];
  if (!copyVideo) {
    const size = fitSize(video, p, maxOutputDimension);
    if (p.video_codec === "av1" && (size.width < AV1_MIN_SIDE || size.height < AV1_MIN_SIDE)) {
      throw new PermanentError(
        `av1 (SVT-AV1) encodes frames of at least ${AV1_MIN_SIDE}x${AV1_MIN_SIDE}; the output would be ${size.width}x${size.height}`,
      );
    }
    const turned = video.rotation === 90 || video.rotation === 270;
    const decoded = turned ? { width: video.height, height: video.width } : video;
    if (size.width !== decoded.width || size.height !== decoded.height || video.sampleAspectRatio !== 1) {
      filters.push(`scale=${size.width}:${size.height}`, "setsar=1");
    }
    // A cap, never a raise.
    if (p.fps !== undefined && video.frameRate !== undefined && video.frameRate > p.fps + 1e-3) {
      filters.push(`fps=${p.fps}`);
    }
  }

  const output = join(ctx.scratchDir, `video.${container.extension}`);
  const cpus = availableCpus();
  if (p.video_codec === "av1") process.env.SVT_LOG ??= "1"; // SVT-AV1's log: errors only
  const audio = p.audio_codec === "none" ? undefined : info.audio;
  const outputOptions = [
    "-map",
    `0:${video.index}`,
    ...(audio ? ["-map", `0:${audio.index}`] : []),
    "-sn",
    "-dn",
    "-map_metadata",
    "0",
    ...(p.duration !== undefined ? ["-t", String(p.duration)] : []),
    ...(filters.length > 0 ? ["-vf", filters.join(",")] : []),
    ...videoEncodeOptions(p, p.container, cpus),
    ...audioOptions(p, audio),
    ...container.options,
    "-f",
    container.muxer,
  ];
  const inputOptions = start > 0 ? ["-ss", String(start)] : [];
  const copied = [
    copyVideo ? `${video.codec} video` : "",
    p.audio_codec === "copy" && audio ? `${audio.codec} audio` : "",
  ]
    .filter(Boolean)
    .join(" and ");
  if (copied)
    await checkCopy(ctx.sourcePath, inputOptions, outputOptions, output, copied, p.container, signal);

  ctx.progress(ENCODE_FROM, `encoding ${describe(p)}`);
  const run = await runFfmpeg(
    { input: ctx.sourcePath, inputOptions, output, outputOptions, reads: "video" },
    {
      signal,
      maxPixels: maxInputPixels,
      logger: ctx.logger,
      ...(length !== undefined ? { duration: length } : {}),
      onProgress: (fraction) =>
        ctx.progress(ENCODE_FROM + fraction * (ENCODE_TO - ENCODE_FROM), `encoding ${describe(p)}`),
    },
  ).catch((err: unknown) => {
    if (err instanceof EncoderSetupError) {
      throw new PermanentError(`ffmpeg could not encode ${describe(p)} into ${p.container}: ${err.reason}`);
    }
    throw err;
  });

  ctx.progress(ENCODE_TO, "reading the written video");
  const out = await probeOutput(output, p.container, signal);
  // The whole stream, or a trim of it: as many seconds as that part of the source declares.
  const whole = start === 0 && p.duration === undefined;
  checkEncodedVideo(
    video.codec,
    "a transcode",
    whole ? run.frames : undefined,
    video.duration !== undefined ? length : undefined,
    out.video?.duration ?? out.duration,
  );
  return { output: { path: output, contentType: container.contentType }, result: resultOf(out) };
};

/**
 * A copied stream must be one the container holds (webm holds VP8, VP9, AV1, Vorbis and Opus; mov
 * no VP9, AV1 or Opus): a tenth of a second copied alone says so before anything is encoded (an
 * encoder whose muxer then refused its output would have run for nothing, and SVT-AV1 would not end).
 */
async function checkCopy(
  input: string,
  inputOptions: string[],
  outputOptions: string[],
  output: string,
  copied: string,
  container: string,
  signal: AbortSignal,
): Promise<void> {
  const check = outputOptions.flatMap((o, i, all) =>
    o === "-map" ? [o, all[i + 1]!] : o === "-f" ? [o, all[i + 1]!] : [],
  );
  try {
    await runFfmpeg(
      {
        input,
        inputOptions,
        output,
        outputOptions: [...check.slice(0, -2), "-c", "copy", "-t", "0.1", ...check.slice(-2)],
        reads: "video",
      },
      { signal, checkInput: false },
    );
  } catch (err) {
    if (err instanceof EncoderSetupError) {
      // The muxer's own words come first ("Only VP8 or VP9 or AV1 video … are supported for WebM."),
      // ffmpeg's "Could not write header" after them.
      const why = err.errors.find((l) => !/Could not write header|Error initializing output stream/i.test(l));
      throw new PermanentError(
        `the source's ${copied} cannot be copied into ${container} (${why ?? err.reason}): choose another container (mkv holds nearly every codec) or encode it`,
      );
    }
    throw err;
  }
}

/**
 * The written file as ffprobe sees it. Matroska keeps no duration per stream but a tag its muxer
 * writes with the longest stream's (audio's priming included): the video's is its frames (packets,
 * counted without decoding, which reads the whole file) over its frame rate. MP4 and MOV index every
 * frame, so their header says it.
 */
async function probeOutput(path: string, container: string, signal: AbortSignal): Promise<MediaInfo> {
  const matroska = container === "mkv" || container === "webm";
  const info = await probeFile(path, { signal, ...(matroska ? { args: ["-count_packets"] } : {}) });
  const v = info.video;
  if (!v?.frameRate || !matroska) return info;
  const packets = Number(info.raw.streams.find((s) => s.index === v.index)?.nb_read_packets);
  if (!Number.isFinite(packets) || packets <= 0) return info;
  return { ...info, video: { ...v, duration: packets / v.frameRate } };
}

function resultOf(out: MediaInfo): Record<string, unknown> {
  const v = out.video;
  if (!v) throw new Error(`the written file holds no video stream (${out.formatName})`);
  const duration = v.duration ?? out.duration;
  if (duration === undefined || v.frameRate === undefined) {
    throw new Error("the written file does not report its duration and frame rate");
  }
  return {
    duration: round(duration, 3),
    width: v.displayWidth,
    height: v.displayHeight,
    video_codec: v.codec,
    ...(out.audio ? { audio_codec: out.audio.codec } : {}),
    ...(out.bitRate !== undefined ? { bitrate: out.bitRate } : {}),
    frame_rate: round(v.frameRate, 3),
  };
}

function describe(p: { video_codec: string; audio_codec: string; container: string }): string {
  return `${p.video_codec} video${p.audio_codec === "none" ? "" : ` and ${p.audio_codec} audio`}`;
}

const kbps = (bitrate: string) => Number(bitrate.slice(0, -1));
const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;

export default videoTranscode;
