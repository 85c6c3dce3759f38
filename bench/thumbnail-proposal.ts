// A prototype of the video_thumbnail change proposed from the thumbnail benchmark, measured beside
// the real processor; not used by the service. Starting a process of Debian's ffmpeg or ffprobe
// costs ~100–150 ms by itself (the dynamic loader resolving ~215 shared libraries), so a thumbnail
// costs about one such start per process the processor runs. The processor today runs two: ffprobe
// of the source, then ffmpeg. The proposal runs ffmpeg alone on the way that succeeds:
//
// - the video stream is `-map 0:V:0` (the first video stream that is not cover art, as the probe picks);
// - the size comes from scale expressions on the decoded frame (display aspect `dar`, so non-square
//   pixels and rotation are handled as targetSize() does, heights even, both sides capped);
// - limits.max_input_pixels is enforced by the decoder itself (`-max_pixels`);
// - the written size is read from the image header;
// - only when no frame came out (past the end, no video stream, undecodable) does it probe, to
//   say why (the duration in the message) — failures pay for the probe, successes do not.
//
// `probeInParallel` is the smaller change: the probe and ffmpeg started together.
import { spawn } from "node:child_process";
import { stat } from "node:fs/promises";

const run = (command: string, args: string[]) =>
  new Promise<void>((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr.on("data", (d: Buffer) => (err += d));
    child.once("error", reject);
    child.once("close", (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} exited ${code}: ${err}`)),
    );
  });

/** scale= width and height expressions equal to targetSize() in video-thumbnail.ts. */
export function scaleExpressions(width: number | undefined, maxDimension: number): string {
  const maxEven = maxDimension - (maxDimension % 2);
  const w0 =
    width !== undefined ? String(Math.min(width, maxDimension)) : `min(round(iw*sar),${maxDimension})`;
  const h0 = `max(2,2*round(${w0}/dar/2))`;
  const w = `if(gt(${h0},${maxDimension}),max(1,min(${maxDimension},round(${maxEven}*dar))),${w0})`;
  const h = `min(${h0},${maxEven})`;
  return `scale=w='${w}':h='${h}',setsar=1`;
}

export interface ThumbnailOptions {
  seconds: number;
  width?: number;
  maxDimension: number;
  maxInputPixels: number;
}

function ffmpegArgs(input: string, output: string, o: ThumbnailOptions): string[] {
  return [
    ...["-hide_banner", "-nostdin", "-v", "error"],
    ...["-max_pixels", String(o.maxInputPixels)],
    ...(o.seconds > 0 ? ["-ss", o.seconds.toFixed(3)] : []),
    ...["-i", input],
    ...["-map", "0:V:0", "-an", "-sn", "-dn", "-map_metadata", "-1"],
    ...["-vf", scaleExpressions(o.width, o.maxDimension)],
    ...["-c:v", "mjpeg", "-q:v", "2", "-frames:v", "1", "-update", "1", "-f", "image2", output],
  ];
}

/** The proposal: one ffmpeg process, the size read back from the JPEG header. */
export async function oneSpawnThumbnail(
  input: string,
  output: string,
  o: ThumbnailOptions,
): Promise<{ width: number; height: number }> {
  await run("ffmpeg", ffmpegArgs(input, output, o));
  if (!(await stat(output).catch(() => undefined))?.size)
    throw new Error("no frame (the processor would probe now)");
  const { default: sharp } = await import("sharp");
  const { width, height } = await sharp(output).metadata();
  return { width, height };
}

/** The smaller change: ffprobe and ffmpeg started at once (ffmpeg as above). */
export async function probeInParallel(
  input: string,
  output: string,
  o: ThumbnailOptions,
): Promise<{ width: number; height: number }> {
  await Promise.all([
    run("ffprobe", ["-v", "error", "-show_format", "-show_streams", "-of", "json", input]),
    run("ffmpeg", ffmpegArgs(input, output, o)),
  ]);
  const { default: sharp } = await import("sharp");
  const { width, height } = await sharp(output).metadata();
  return { width, height };
}
