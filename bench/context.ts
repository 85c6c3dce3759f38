// A ProcessContext for calling a processor directly on a local file, as the runner would after
// downloading the source: a scratch directory of its own, the default limits, progress and logs
// dropped. It loads no configuration machinery (YAML, schema validation), so a process measuring
// its memory holds little more than the processor itself.
import { randomUUID } from "node:crypto";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Config } from "../core/config/load.js";
import type { Job } from "../core/jobs/records.js";
import type { JobType } from "../core/jobs/types.js";
import type { Logger } from "../core/logger.js";
import type { ProcessContext } from "../runner/processor.js";

/** The configuration defaults (core/config/schema.ts) the processors read. */
export const DEFAULT_LIMITS = { maxInputPixels: 100_000_000, maxOutputDimension: 16_384 };

const noop = () => undefined;
const silentLogger = {
  level: "silent",
  trace: noop,
  debug: noop,
  info: noop,
  warn: noop,
  error: noop,
  fatal: noop,
  silent: noop,
  child: () => silentLogger,
} as unknown as Logger;

export interface BenchContext {
  ctx: ProcessContext;
  /** Removes the scratch directory. */
  cleanup(): Promise<void>;
}

export async function processContext(
  type: JobType,
  sourcePath: string,
  parameters: Record<string, unknown>,
): Promise<BenchContext> {
  const scratchDir = await mkdtemp(join(tmpdir(), "media-service-bench-job-"));
  await mkdir(scratchDir, { recursive: true });
  const now = new Date().toISOString();
  const job: Job = {
    id: randomUUID(),
    type,
    status: "processing",
    source_bucket: "bench",
    source_key: `in/${sourcePath.split("/").pop()}`,
    dest_bucket: "bench",
    dest_key: `out/${randomUUID()}`,
    parameters,
    created_at: now,
    updated_at: now,
  };
  const ctx: ProcessContext = {
    job,
    sourcePath,
    scratchDir,
    limits: { ...DEFAULT_LIMITS },
    signal: new AbortController().signal,
    progress: noop,
    fetchObject: () => Promise.reject(new Error("fetchObject is not used by this benchmark")),
    logger: silentLogger,
    config: {} as Config,
  };
  return { ctx, cleanup: () => rm(scratchDir, { recursive: true, force: true }) };
}
