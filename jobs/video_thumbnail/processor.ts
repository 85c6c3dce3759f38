// video_thumbnail: one frame of a video at a timestamp, as a JPEG, PNG or WebP image.
//
// Fast path, one process: ffmpeg with input seeking (`-ss` before `-i`: jumps to the keyframe
// before the timestamp and decodes from there, so it is fast and still exact) on the first video
// stream that is not cover art (`-map 0:V:0`), the pixel limit enforced by the decoder
// (`-max_pixels`), demuxers that are not media or refer to other files refused (`-format_whitelist`),
// autorotate (ffmpeg's default), then a scale filter whose expressions compute targetSize() from
// the decoded frame → encode one frame → read the real size back from the image (sharp, header only).
// Starting ffmpeg or ffprobe costs ~100–150 ms by itself, so a success runs no ffprobe at all.
//
// Only when no frame comes out (or ffmpeg fails) does the slow path run: probe (the source must
// hold a video stream within the pixel limit) → resolve the timestamp (past the end is a permanent
// failure naming the duration) → the near-the-end retry below → else a precise error.
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
import { rm, stat } from "node:fs/promises";
import { join } from "node:path";
import ffmpeg from "fluent-ffmpeg";
import sharp from "sharp";
import { withDefaults, type VideoThumbnailParameters } from "../../core/jobs/parameters.js";
import { describeError, PermanentError } from "../../runner/errors.js";
import type { Processor } from "../../runner/processor.js";
import {
  NOT_MEDIA_FORMATS,
  probeSource,
  REFERENCE_FORMATS,
  type VideoStreamInfo,
} from "../../runner/av/probe.js";
import { runFfmpeg, tellingLine, TruncatedError, type RunResult } from "../../runner/av/run.js";
import { formatDuration, formatTimestamp, parseTimestamp } from "../../runner/av/timestamp.js";

type ThumbnailFormat = VideoThumbnailParameters["format"];

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
  const parameters = withDefaults("video_thumbnail", ctx.job.parameters);
  const { format } = parameters;
  if (!(format in FORMATS)) throw new PermanentError(`unsupported thumbnail format ${String(format)}`);
  const seconds = parseTimestamp(parameters.timestamp);
  const timestamp = formatTimestamp(seconds);
  const { maxInputPixels, maxOutputDimension } = ctx.limits;

  const [encoder, demuxers] = await Promise.all([ffmpegFormatFor(format), mediaDemuxers()]);
  const spec = FORMATS[encoder];
  const output = join(ctx.scratchDir, `thumbnail.${spec.extension}`);
  const common = ["-an", "-sn", "-dn", "-map_metadata", "-1"];
  const encode = [...spec.encode, "-update", "1", "-f", "image2"];
  const seek = seconds > 0 ? ["-ss", seconds.toFixed(3)] : [];

  // The fast path: one ffmpeg, no probe.
  ctx.progress(20, `extracting the frame at ${timestamp}`);
  let fast: RunResult | undefined;
  // Without the list of demuxers, no fast path: nothing would keep a text file or a playlist out.
  if (demuxers) {
    try {
      fast = await runFfmpeg(
        {
          input: ctx.sourcePath,
          inputOptions: ["-format_whitelist", demuxers, ...seek],
          output,
          outputOptions: [
            "-map",
            "0:V:0",
            ...common,
            "-vf",
            scaleFilter(parameters.width, maxOutputDimension),
            "-frames:v",
            "1",
            ...encode,
          ],
          reads: "video",
        },
        { signal: ctx.signal, maxPixels: maxInputPixels, logger: ctx.logger },
      );
    } catch (err) {
      // A source cut short is what is wrong with it: no probe says more.
      if (ctx.signal.aborted || err instanceof TruncatedError) throw err;
      ctx.logger.info(
        { timestamp, error: describeError(err) },
        "ffmpeg gave no frame; probing the source to say why",
      );
    }
  }

  if (!fast || !(await nonEmpty(output))) {
    // The slow path: probe for the precise error, or retry near the end.
    await rm(output, { force: true });
    ctx.progress(30, "reading the video");
    const info = await probeSource(ctx.sourcePath, "video", { signal: ctx.signal, maxInputPixels });
    const video = info.video!;
    const duration = video.duration ?? info.duration;
    if (duration !== undefined && seconds >= duration) {
      throw new PermanentError(
        `timestamp ${timestamp} is past the end of the video (duration ${formatDuration(duration)})`,
      );
    }

    const size = targetSize(video, parameters.width, maxOutputDimension);
    const outputOptions = [
      "-map",
      `0:${video.index}`,
      ...common,
      ...(size ? ["-vf", `scale=${size.width}:${size.height},setsar=1`] : []),
      ...encode,
    ];
    // A fast path that ran to its end without a frame is the plain seek done already; one that
    // failed is run again the way it always was, to fail (or not) on its own terms.
    let errors = fast?.errors;
    if (!errors) {
      ctx.progress(40, `extracting the frame at ${timestamp}`);
      errors = (
        await runFfmpeg(
          {
            input: ctx.sourcePath,
            inputOptions: seek,
            output,
            outputOptions: ["-frames:v", "1", ...outputOptions],
            reads: "video",
          },
          { signal: ctx.signal, maxPixels: maxInputPixels, logger: ctx.logger },
        )
      ).errors;
    }
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
          reads: "video",
        },
        { signal: ctx.signal, maxPixels: maxInputPixels, logger: ctx.logger },
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
 * The `-vf` of the fast path: targetSize() computed by ffmpeg's scale filter on the decoded (and
 * autorotated) frame. The shown width is `round(iw*sar)` and the shown height `ih`, as the probe
 * computes them; with no width asked, square pixels within the limit pass through unscaled.
 */
export function scaleFilter(width: number | undefined, maxDimension: number): string {
  const max = maxDimension;
  const maxEven = max - (max % 2);
  const shownWidth = "max(1,round(iw*sar))";
  const w0 = width !== undefined ? String(Math.max(1, Math.min(width, max))) : `min(${shownWidth},${max})`;
  const h0 = `max(2,2*round(${w0}*ih/${shownWidth}/2))`;
  let w = `if(gt(${h0},${max}),max(1,min(${max},round(${maxEven}*${shownWidth}/ih))),${w0})`;
  let h = `min(${h0},${maxEven})`;
  if (width === undefined) {
    const asDecoded = `lt(abs(sar-1),0.001)*lte(iw,${max})*lte(ih,${max})`;
    w = `if(${asDecoded},iw,${w})`;
    h = `if(${asDecoded},ih,${h})`;
  }
  return `scale=w='${w}':h='${h}',setsar=1`;
}

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
    ffmpeg.getAvailableEncoders((err, encoders) => {
      // A failed `ffmpeg -encoders` (killed, say) is asked again by the next job.
      if (err) libwebp = undefined;
      resolve(!err && Boolean(encoders?.libwebp));
    }),
  );
  return (await libwebp) ? "webp" : "png";
}

let demuxerList: Promise<string | undefined> | undefined;

/**
 * ffmpeg's demuxers less those probeSource() refuses (text, playlists, lists of files), for
 * `-format_whitelist`: such a source makes the fast path fail, and the probe then says why. From
 * fluent-ffmpeg's `ffmpeg -formats`, which it runs (once) for every command anyway.
 */
function mediaDemuxers(): Promise<string | undefined> {
  demuxerList ??= new Promise<string | undefined>((resolve) =>
    ffmpeg.getAvailableFormats((err, formats) => {
      if (err || !formats) {
        // Asked again by the next job: a failed `ffmpeg -formats` (killed, say) is not ffmpeg's answer.
        demuxerList = undefined;
        return resolve(undefined);
      }
      const refused = (name: string) =>
        name.split(",").some((n) => NOT_MEDIA_FORMATS.has(n) || REFERENCE_FORMATS.has(n));
      const names = Object.entries(formats)
        .filter(([name, f]) => f.canDemux && !refused(name))
        .map(([name]) => name);
      resolve(names.length > 0 ? names.join(",") : undefined);
    }),
  );
  return demuxerList;
}

export default videoThumbnail;
