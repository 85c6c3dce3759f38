import type { Config } from "../core/config/load.js";
import type { Job } from "../core/jobs/records.js";
import type { Logger } from "../core/logger.js";

/** Where an uploaded output is, as a job's result says it. */
export interface UploadedOutput {
  output_url: string;
  file_size: number;
}

/** Limits a processor enforces while it works (all from configuration). */
export interface ProcessLimits {
  maxInputPixels: number;
  maxOutputDimension: number;
}

/** What a processor gets: the job, its source on local disk or in memory, and ways to report and fetch. */
export interface ProcessContext {
  job: Job;
  /**
   * The source object, downloaded to local disk; where it would be when `sourceBuffer` is set (then
   * no file is there).
   */
  sourcePath: string;
  /**
   * The source's bytes, when the runner kept a small source in memory (limits.in_memory_source_bytes;
   * only the types of IN_MEMORY_TYPES, whose processors read the source through openImage).
   */
  sourceBuffer?: Buffer;
  /** Content-Type the object store gave the source, when it gave one. */
  sourceContentType?: string;
  /**
   * A directory of this job's own for intermediate files and the output. It exists, except for a
   * source kept in memory: then it is made by fetchObject(), or by whoever writes there first.
   */
  scratchDir: string;
  limits: ProcessLimits;
  /** Aborted when the job's time is up or the runner is told to stop. */
  signal: AbortSignal;
  /**
   * Reports progress (0–100); cheap to call often, reports are throttled. `steps`: a pipeline's
   * percent per step, recorded beside the overall percent (steps_progress).
   */
  progress(percent: number, message?: string, steps?: Record<string, number>): void;
  /** Downloads another object of the store (e.g. a watermark image) into the scratch directory. */
  fetchObject(bucket: string, key: string): Promise<string>;
  /**
   * Writes and removes objects of the store beyond the one output the runner uploads (a type that
   * writes many, video_adaptive's ladder). Uploads as the runner's own (multipart above its
   * threshold, nothing partial left behind); removal ignores objects already gone. The runner always
   * gives it; a context made for one processor alone (a test, a benchmark) may leave it out.
   */
  objects?: ObjectWriter;
  /**
   * Uploads an output as the runner uploads a job's one output, and says where it is (output_url,
   * file_size): how a pipeline ships each step's. The runner always gives it.
   */
  uploadOutput?: (
    bucket: string,
    key: string,
    output: OutputData,
    signal: AbortSignal,
  ) => Promise<UploadedOutput>;
  logger: Logger;
  config: Config;
}

export interface ObjectWriter {
  /** Uploads a file; resolves with its size. */
  upload(
    bucket: string,
    key: string,
    path: string,
    contentType: string,
    signal: AbortSignal,
  ): Promise<number>;
  /** Removes objects (given no signal: it is what runs after a job was stopped). */
  remove(bucket: string, keys: readonly string[]): Promise<void>;
}

/** The output to upload: a file, or bytes in memory. */
export type OutputData = { path: string; contentType: string } | { buffer: Buffer; contentType: string };

/** What a processor gives back. */
export interface ProcessOutput {
  /** The file (or bytes) to upload to dest_bucket/dest_key, for types that write one. */
  output?: OutputData;
  /**
   * The job's result. For types that write a file, output_url and file_size are filled in by the
   * runner after the upload.
   */
  result: Record<string, unknown>;
}

/**
 * Processes one job. Throws PermanentError for input that will never work (undecodable media,
 * a timestamp past the end); any other error is taken as transient.
 */
export type Processor = (ctx: ProcessContext) => Promise<ProcessOutput>;
