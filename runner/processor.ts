import type { Config } from "../core/config/load.js";
import type { Job } from "../core/jobs/records.js";
import type { Logger } from "../core/logger.js";

/** Limits a processor enforces while it works (all from configuration). */
export interface ProcessLimits {
  maxInputPixels: number;
  maxOutputDimension: number;
}

/** What a processor gets: the job, its source on local disk, and ways to report and fetch. */
export interface ProcessContext {
  job: Job;
  /** The source object, downloaded to local disk. */
  sourcePath: string;
  /** Content-Type the object store gave the source, when it gave one. */
  sourceContentType?: string;
  /** A directory of this job's own for intermediate files and the output. */
  scratchDir: string;
  limits: ProcessLimits;
  /** Aborted when the job's time is up or the runner is told to stop. */
  signal: AbortSignal;
  /** Reports progress (0–100); cheap to call often, reports are throttled. */
  progress(percent: number, message?: string): void;
  /** Downloads another object of the store (e.g. a watermark image) into the scratch directory. */
  fetchObject(bucket: string, key: string): Promise<string>;
  logger: Logger;
  config: Config;
}

/** What a processor gives back. */
export interface ProcessOutput {
  /** The file to upload to dest_bucket/dest_key, for types that write one. */
  output?: { path: string; contentType: string };
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
