import { randomBytes } from "node:crypto";
import { mkdir, rm } from "node:fs/promises";
import { basename, extname, join } from "node:path";
import type { S3Client } from "@aws-sdk/client-s3";
import type { Config } from "../core/config/load.js";
import { RUNNER_ENV } from "../core/config/runner-env.js";
import type { Job } from "../core/jobs/records.js";
import type { Logger } from "../core/logger.js";
import type { JobStore } from "../core/store/store.js";
import {
  EXIT,
  jobDeadline,
  sourceLimit as sourceLimitOf,
  timeoutMessage,
  type Deadline,
} from "../core/policy.js";
import {
  describeError,
  FailedWithResultError,
  isPermanent,
  PermanentError,
  TimeoutError,
  TransientWithResultError,
} from "./errors.js";
import { downloadObject, fetchSource, objectWriter, uploadOutput } from "./object-io.js";
import type { ProcessContext } from "./processor.js";
import { ProgressReporter } from "./progress.js";
import { IN_MEMORY_TYPES, loadProcessor } from "./registry.js";

/**
 * Progress writes wait this long into a job: one that ends sooner (most image jobs) writes none, its
 * completion records 100 %.
 */
export const PROGRESS_QUIET_MS = 1000;

export interface RunnerDeps {
  config: Config;
  store: JobStore;
  s3: S3Client;
  logger: Logger;
  /** Aborted when the runner is told to stop (SIGTERM). */
  shutdown?: AbortSignal;
  /**
   * The deadline, in seconds, the executor gave this run (JOB_TIMEOUT_SECONDS: the job's time, as
   * its Kubernetes Job has it), counted from the runner's start. When set it is the job's time,
   * whatever its timeout_seconds or type.
   */
  deadlineSeconds?: number;
}

export interface RunOutcome {
  /** The exit code contract: 0 done, 2 permanent failure (job failed), other transient. */
  code: number;
  /** Why, when the job did not complete. */
  error?: string;
}

/**
 * The time a run may take, from the runner's start: the deadline the executor gave it
 * (JOB_TIMEOUT_SECONDS, from a Kubernetes Job), else the job's own timeout_seconds, else its type's
 * timeout.
 */
export function runDeadline(
  config: Config,
  job: Pick<Job, "type" | "timeout_seconds"> & { parameters?: Record<string, unknown> },
  deadlineSeconds?: number,
): Deadline {
  return jobDeadline(
    job,
    config.executor.timeoutsMs,
    deadlineSeconds !== undefined
      ? { seconds: deadlineSeconds, setting: RUNNER_ENV.jobTimeoutSeconds }
      : undefined,
  );
}

/**
 * A runner started without its job's record (`runner --job`) starts the job itself. Idempotent: the
 * executor normally marks the job processing when it starts the runner; the record comes back with
 * the start, in the same round trip. An outcome instead of a record: there is nothing to run.
 */
async function startItself(jobId: string, deps: RunnerDeps, log: Logger): Promise<Job | RunOutcome> {
  try {
    const start = await deps.store.startAndGet(jobId, deps.config.executor.leaseMs);
    const job = start.job;
    if (!job) {
      log.warn("job does not exist (pruned or never created); nothing to do");
      return { code: EXIT.permanent, error: `job ${jobId} does not exist` };
    }
    if (job.status === "completed" || job.status === "failed") {
      log.info({ status: job.status }, "job already finished; nothing to do");
      return { code: EXIT.done };
    }
    if (start.refused) {
      log.warn({ err: start.refused.message }, "job cannot start");
      return { code: EXIT.permanent, error: start.refused.message };
    }
    return job;
  } catch (err) {
    return { code: EXIT.transient, error: `queue store unavailable: ${describeError(err)}` };
  }
}

/**
 * Executes one job end to end: source from S3 to a scratch directory (or, for a small image, into
 * memory: limits.in_memory_source_bytes), the type's processor, the output back to S3, and the
 * outcome through the store's transitions. A permanent failure is
 * recorded on the job (it will not be retried); a transient one is left to the executor, which
 * retries or fails the job by its policy.
 *
 * `startedJob`: the job's record as its executor's start returned it (a `runner --serve` process is
 * handed it): the job is already processing under the executor's lease, and is not started again.
 * Without it (`runner --job`) the runner starts the job itself.
 */
export async function runJob(jobId: string, deps: RunnerDeps, startedJob?: Job): Promise<RunOutcome> {
  const { config, store, s3 } = deps;
  const log = deps.logger.child({ job_id: jobId });
  const job = startedJob ?? (await startItself(jobId, deps, log));
  if ("code" in job) return job;

  const time = runDeadline(config, job, deps.deadlineSeconds);
  const deadline = AbortSignal.timeout(time.ms);
  const signal = deps.shutdown ? AbortSignal.any([deadline, deps.shutdown]) : deadline;
  const scratchDir = join(config.executor.scratchDir, `${jobId}-${randomBytes(4).toString("hex")}`);
  const progress = new ProgressReporter(
    (percent, message, etaSeconds, steps) => store.progress(jobId, percent, message, etaSeconds, steps),
    1,
    500,
    PROGRESS_QUIET_MS,
  );
  const started = performance.now();
  log.info({ type: job.type, timeout_ms: time.ms }, "job started");
  let scratchMade: Promise<unknown> | undefined;
  const scratch = async () => {
    await (scratchMade ??= mkdir(scratchDir, { recursive: true }));
    return scratchDir;
  };

  try {
    const sourcePath = join(scratchDir, `source${safeExtension(job.source_key)}`);
    const sourceLimit = sourceLimitOf(job.max_source_bytes, config.limits.maxSourceBytes);
    const source = await fetchSource(s3, job.source_bucket, job.source_key, {
      ...sourceLimit,
      inMemoryBytes: IN_MEMORY_TYPES.has(job.type) ? config.limits.inMemorySourceBytes : 0,
      toFile: async () => join(await scratch(), basename(sourcePath)),
      signal,
    });
    // Processors that write into the scratch directory themselves (ffmpeg's) expect it to exist.
    if (!("buffer" in source)) await scratch();
    progress.report(5, "source downloaded");
    log.debug({ bytes: source.bytes, in_memory: "buffer" in source }, "source downloaded");

    const processor = await loadProcessor(job.type);
    let fetched = 0;
    const ctx: ProcessContext = {
      job,
      sourcePath,
      ...("buffer" in source ? { sourceBuffer: source.buffer } : {}),
      ...(source.contentType ? { sourceContentType: source.contentType } : {}),
      scratchDir,
      limits: {
        maxInputPixels: config.limits.maxInputPixels,
        maxOutputDimension: config.limits.maxOutputDimension,
      },
      signal,
      progress: (percent, message, steps) => progress.report(5 + percent * 0.9, message ?? "", steps),
      fetchObject: async (bucket, key) => {
        const path = join(await scratch(), `object-${++fetched}${safeExtension(key)}`);
        await downloadObject(s3, bucket, key, path, {
          ...sourceLimit,
          signal,
          role: "object",
        });
        return path;
      },
      objects: objectWriter(s3),
      uploadOutput: (bucket, key, out, outSignal) =>
        uploadOutput(s3, config.storage, bucket, key, out, outSignal),
      logger: log,
      config,
    };
    const output = await processor(ctx);
    if (signal.aborted) throw abortReason(signal, deadline, time);

    const result = { ...output.result };
    if (output.output) {
      if (!job.dest_bucket || !job.dest_key)
        throw new PermanentError(`${job.type} needs dest_bucket and dest_key`);
      progress.report(95, "uploading output");
      Object.assign(
        result,
        await uploadOutput(s3, config.storage, job.dest_bucket, job.dest_key, output.output, signal),
      );
    }
    await progress.close();
    const recorded = await store.complete(jobId, orderResult(result));
    log.info(
      { duration_ms: Math.round(performance.now() - started), recorded },
      recorded ? "job completed" : "job finished, but it had already ended (cancelled); result dropped",
    );
    return { code: EXIT.done };
  } catch (caught) {
    const err = signal.aborted && !isPermanent(caught) ? abortReason(signal, deadline, time) : caught;
    const message = describeError(err);
    await progress.close();
    if (isPermanent(err)) {
      log.info({ error: message }, "job failed");
      try {
        await store.fail(jobId, message, err instanceof FailedWithResultError ? { result: err.result } : {});
      } catch (storeErr) {
        return {
          code: EXIT.transient,
          error: `${message} (and the failure could not be recorded: ${describeError(storeErr)})`,
        };
      }
      return { code: EXIT.permanent, error: message };
    }
    log.warn({ error: message }, "job hit a transient error");
    if (err instanceof TransientWithResultError) {
      // What this attempt did, for the job's result should its retries run out.
      await store
        .partial(jobId, err.result)
        .catch((storeErr: unknown) =>
          log.warn({ error: describeError(storeErr) }, "what the attempt did could not be recorded"),
        );
    }
    return { code: EXIT.transient, error: message };
  } finally {
    await progress.close();
    if (scratchMade) await rm(scratchDir, { recursive: true, force: true }).catch(() => undefined);
  }
}

function abortReason(signal: AbortSignal, deadline: AbortSignal, time: Deadline): Error {
  if (deadline.aborted) return new TimeoutError(timeoutMessage(time));
  return new Error(
    signal.reason instanceof Error ? signal.reason.message : "runner stopped before the job ended",
  );
}

// Result fields in the interface's order: the output's location first.
function orderResult(result: Record<string, unknown>): Record<string, unknown> {
  const { output_url, file_size, ...rest } = result;
  return { ...(output_url !== undefined ? { output_url, file_size } : {}), ...rest };
}

function safeExtension(key: string): string {
  const ext = extname(key).toLowerCase();
  return /^\.[a-z0-9]{1,8}$/.test(ext) ? ext : "";
}
