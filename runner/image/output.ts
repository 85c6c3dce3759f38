// Writing a job's output image: a path of its own in the scratch directory, the pipeline run to
// it, nothing half-written left behind when that fails, and the facts the job result reports.
import { rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { OutputInfo, Sharp } from "sharp";
import type { ProcessContext, ProcessOutput } from "../processor.js";
import { CONTENT_TYPES, EXTENSIONS, resultFormatName, type OutputFormat } from "./encode.js";
import type { SourceImage } from "./open.js";

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
export function imageOutput(
  path: string,
  format: OutputFormat,
  facts: ImageResultFacts,
  startedAt: number,
): ProcessOutput {
  return {
    output: { path, contentType: CONTENT_TYPES[format] },
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
