// Writing a job's output image: bytes in memory when the source was kept in memory (and the output
// is not large), else a path of its own in the scratch directory; the pipeline run to it, nothing
// half-written left behind when that fails, and the facts the job result reports.
import { copyFile, mkdir, rm, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { OutputInfo, Sharp } from "sharp";
import type { OutputData, ProcessContext, ProcessOutput } from "../processor.js";
import { CONTENT_TYPES, EXTENSIONS, resultFormatName, type OutputFormat } from "./encode.js";
import type { SourceImage } from "./open.js";

/**
 * Outputs of more pixels than this go to a file even when the source was in memory: a small source
 * can ask for a large output (an enlarged PNG), whose encoded bytes are better not held.
 */
export const IN_MEMORY_OUTPUT_MAX_PIXELS = 16_000_000;

type OutputContext = Pick<ProcessContext, "scratchDir" | "sourcePath" | "sourceBuffer">;

/** Where a job's output goes: `output.<ext>` in its scratch directory, never over the source. */
export function outputPath(
  ctx: Pick<ProcessContext, "scratchDir" | "sourcePath">,
  format: OutputFormat,
): string {
  const path = join(ctx.scratchDir, `output${EXTENSIONS[format]}`);
  return resolve(path) === resolve(ctx.sourcePath)
    ? join(ctx.scratchDir, `output-1${EXTENSIONS[format]}`)
    : path;
}

/**
 * Runs the pipeline into the job's output: in memory when the source is (ctx.sourceBuffer) and the
 * output has at most IN_MEMORY_OUTPUT_MAX_PIXELS (`pixels`, as planned), else into outputPath()
 * (writeOutput).
 */
export async function writeImage(
  ctx: OutputContext,
  source: SourceImage,
  pipeline: Sharp,
  format: OutputFormat,
  pixels: number,
): Promise<{ info: OutputInfo; data: OutputData }> {
  const contentType = CONTENT_TYPES[format];
  if (ctx.sourceBuffer && pixels <= IN_MEMORY_OUTPUT_MAX_PIXELS) {
    const { data, info } = await source.run(() => pipeline.toBuffer({ resolveWithObject: true }));
    return { info, data: { buffer: data, contentType } };
  }
  const path = outputPath(ctx, format);
  // A job whose source is in memory has no scratch directory until it writes one.
  if (ctx.sourceBuffer) await mkdir(ctx.scratchDir, { recursive: true });
  const info = await writeOutput(source, pipeline, path);
  return { info, data: { path, contentType } };
}

/** The source's own bytes as the output, where writeImage() would have put it. */
export async function sourceAsOutput(source: SourceImage, data: OutputData): Promise<OutputData> {
  if (Buffer.isBuffer(source.input)) {
    if ("buffer" in data) return { buffer: source.input, contentType: data.contentType };
    await writeFile(data.path, source.input);
  } else if ("path" in data) {
    await copyFile(source.input, data.path);
  } else {
    throw new Error("an output in memory needs the source in memory");
  }
  return data;
}

/**
 * Runs the pipeline into `path`. Decoding errors of the source become PermanentError (see
 * SourceImage.run); on any failure the partial file is removed.
 */
export async function writeOutput(source: SourceImage, pipeline: Sharp, path: string): Promise<OutputInfo> {
  try {
    return await source.run(() => pipeline.toFile(path));
  } catch (err) {
    await rm(path, { force: true }).catch(() => undefined);
    throw err;
  }
}

export interface ImageResultFacts {
  width: number;
  height: number;
  /** sharp's name of the written format. */
  format: string;
}

/** ProcessOutput of the jobs that write an image: result `{duration, metadata}`. */
export function imageOutput(data: OutputData, facts: ImageResultFacts, startedAt: number): ProcessOutput {
  return {
    output: data,
    result: {
      duration: elapsedSeconds(startedAt),
      metadata: { width: facts.width, height: facts.height, format: resultFormatName(facts.format) },
    },
  };
}

/** Seconds since `startedAt` (a performance.now() reading), to the millisecond. */
export function elapsedSeconds(startedAt: number): number {
  return Math.round(performance.now() - startedAt) / 1000;
}
