// video_thumbnail: one frame of a video at a timestamp, as a JPEG, PNG or WebP image.
//
// Pipeline: probe (the source must hold a video stream) → resolve the timestamp (past the end is a
// permanent failure naming the duration) → ffmpeg with input seeking (`-ss` before `-i`: jumps to
// the keyframe before the timestamp and decodes from there, so it is fast and still exact) →
// autorotate (ffmpeg's default) → scale to `width` keeping the shown aspect (square pixels, even
// height) → encode one frame → read the real size back from the image (sharp, header only).
//
// Width: absent → the video's size as shown; given → honoured, larger than the source too (a
// caller asking for a size gets it), but capped so neither side exceeds limits.maxOutputDimension.
//
// Near the end, the frame shown at a timestamp can start before it (timestamp 4.99 s in a 25 fps
// video of 5 s: the last frame starts at 4.96 s). A plain seek then decodes nothing, and so does an
// output seek (`-ss` after `-i`, which drops the same frames). The retry decodes a short window
// before the timestamp (two frame intervals, at least a quarter second) and keeps its last frame:
// the one on screen at that moment. A frame further back is not that moment, so a source whose
// data stops earlier (truncated) fails rather than giving a picture from somewhere else.
import { stat } from "node:fs/promises";
import { join } from "node:path";
import ffmpeg from "fluent-ffmpeg";
import sharp from "sharp";
import type { VideoThumbnailParameters } from "../../core/jobs/parameters.js";
import { PermanentError } from "../errors.js";
import type { Processor } from "../processor.js";
import { probeSource, type VideoStreamInfo } from "../av/probe.js";
import { runFfmpeg, tellingLine } from "../av/run.js";
import { formatDuration, formatTimestamp, parseTimestamp } from "../av/timestamp.js";

type ThumbnailFormat = "jpeg" | "png" | "webp";

const FORMATS: Record<ThumbnailFormat, { extension: string; contentType: string; encode: string[] }> = {
  jpeg: { extension: "jpg", contentType: "image/jpeg", encode: ["-c:v", "mjpeg", "-q:v", "2"] },
  png: { extension: "png", contentType: "image/png", encode: ["-c:v", "png"] },
  webp: {
    extension: "webp",
    contentType: "image/webp",
    encode: ["-c:v", "libwebp", "-quality", "85", "-lossless", "0"],
  },
};

/** How far before the timestamp the near-the-end retry looks: two frame intervals, at least 0.25 s. */
const retryWindow = (frameRate: number | undefined) =>
  Math.min(5, Math.max(0.25, frameRate ? 2 / frameRate : 1));

export const videoThumbnail: Processor = async (ctx) => {
  const parameters = ctx.job.parameters as Partial<VideoThumbnailParameters>;
  const format = (parameters.format ?? "jpeg") as ThumbnailFormat;
  if (!(format in FORMATS)) throw new PermanentError(`unsupported thumbnail format ${String(format)}`);
  const seconds = parseTimestamp(parameters.timestamp ?? "00:00:01");
  const timestamp = formatTimestamp(seconds);

  ctx.progress(5, "reading the video");
  const info = await probeSource(ctx.sourcePath, "video", ctx.signal);
  const video = info.video!;
  if (video.width * video.height > ctx.limits.maxInputPixels) {
    throw new PermanentError(
      `video frames of ${video.width}x${video.height} exceed the limit of ${ctx.limits.maxInputPixels} pixels`,
    );
  }
  const duration = video.duration ?? info.duration;
  if (duration !== undefined && seconds >= duration) {
    throw new PermanentError(
      `timestamp ${timestamp} is past the end of the video (duration ${formatDuration(duration)})`,
    );
  }

  const size = targetSize(video, parameters.width, ctx.limits.maxOutputDimension);
  const encoder = await ffmpegFormatFor(format);
  const spec = FORMATS[encoder];
  const output = join(ctx.scratchDir, `thumbnail.${spec.extension}`);
  const outputOptions = [
    "-map",
    `0:${video.index}`,
    "-an",
    "-sn",
    "-dn",
    "-map_metadata",
    "-1",
    ...(size ? ["-vf", `scale=${size.width}:${size.height},setsar=1`] : []),
    ...spec.encode,
    "-update",
    "1",
    "-f",
    "image2",
  ];

  ctx.progress(20, `extracting the frame at ${timestamp}`);
  const first = await runFfmpeg(
    {
      input: ctx.sourcePath,
      inputOptions: seconds > 0 ? ["-ss", seconds.toFixed(3)] : [],
      output,
      outputOptions: ["-frames:v", "1", ...outputOptions],
    },
    { signal: ctx.signal },
  );
  let errors = first.errors;
  if (!(await nonEmpty(output))) {
    ctx.logger.info({ timestamp, errors }, "no frame after the seek; decoding the window before it");
    ctx.progress(50, `no frame after ${timestamp}; decoding the seconds before it`);
    const start = Math.max(0, seconds - retryWindow(video.frameRate));
    const retry = await runFfmpeg(
      {
        input: ctx.sourcePath,
        inputOptions: [
          ...(start > 0 ? ["-ss", start.toFixed(3)] : []),
          "-t",
          (seconds - start + 0.001).toFixed(3),
        ],
        output,
        outputOptions,
      },
      { signal: ctx.signal },
    );
    errors = [...errors, ...retry.errors];
    if (!(await nonEmpty(output))) {
      const why = tellingLine(errors);
      throw new PermanentError(
        `no video frame could be decoded at ${timestamp}` +
          (why
            ? `: ${why}; the file may be truncated or corrupt`
            : " (the video may end before it, or be truncated or corrupt)"),
      );
    }
  }

  let finalPath = output;
  if (encoder !== format) {
    ctx.progress(85, "converting to webp");
    finalPath = join(ctx.scratchDir, "thumbnail.webp");
    await sharp(output).webp({ quality: 85 }).toFile(finalPath);
  }

  // The size as written, read from the image itself (sharp reads the header only).
  ctx.progress(90, "reading the thumbnail");
  const image = await sharp(finalPath).metadata();
  if (image.format !== format || !image.width || !image.height) {
    throw new Error(`the thumbnail written is not a ${format} image (${String(image.format)})`);
  }
  ctx.progress(100, "thumbnail ready");
  return {
    output: { path: finalPath, contentType: FORMATS[format].contentType },
    result: { timestamp, metadata: { width: image.width, height: image.height } },
  };
};

/**
 * Output size, or undefined to keep the frame as decoded (square pixels, within the limit, no
 * width asked). Heights are even, like `scale=W:-2`.
 */
export function targetSize(
  video: Pick<VideoStreamInfo, "displayWidth" | "displayHeight" | "sampleAspectRatio">,
  width: number | undefined,
  maxDimension: number,
): { width: number; height: number } | undefined {
  const { displayWidth, displayHeight } = video;
  const squarePixels = Math.abs(video.sampleAspectRatio - 1) < 1e-3;
  if (width === undefined && squarePixels && displayWidth <= maxDimension && displayHeight <= maxDimension) {
    return undefined;
  }
  let w = Math.min(width ?? displayWidth, maxDimension);
  let h = evenHeight(w, displayWidth, displayHeight);
  if (h > maxDimension) {
    h = maxDimension - (maxDimension % 2);
    w = Math.max(1, Math.min(maxDimension, Math.round((h * displayWidth) / displayHeight)));
  }
  return { width: w, height: h };
}

const evenHeight = (w: number, dw: number, dh: number) => Math.max(2, 2 * Math.round((w * dh) / dw / 2));

async function nonEmpty(path: string): Promise<boolean> {
  try {
    return (await stat(path)).size > 0;
  } catch {
    return false;
  }
}

let libwebp: Promise<boolean> | undefined;

/** The format ffmpeg writes: webp needs ffmpeg's libwebp; without it, PNG converted by sharp. */
async function ffmpegFormatFor(format: ThumbnailFormat): Promise<ThumbnailFormat> {
  if (format !== "webp") return format;
  libwebp ??= new Promise<boolean>((resolve) =>
    ffmpeg.getAvailableEncoders((err, encoders) => resolve(!err && Boolean(encoders?.libwebp))),
  );
  return (await libwebp) ? "webp" : "png";
}
