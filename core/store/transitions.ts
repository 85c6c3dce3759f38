import { randomUUID } from "node:crypto";
import { checkSubmission, ClientLimitError, type ClientLimits } from "../jobs/client-limits.js";
import { JOB_DURATION_BUCKETS } from "../jobs/duration-buckets.js";
import type { Job } from "../jobs/records.js";
import type { JobSpec } from "../jobs/spec.js";
import type { JobType } from "../jobs/types.js";
import { StoreBase } from "./base.js";
import { decodeJob, type Hash } from "./codec.js";
import { IllegalTransitionError, NotFoundError, translateScriptError } from "./errors.js";
import type { IdempotentSubmit } from "./idempotency.js";
import { idempotencyClient, idempotencyKeyId, storedBatchId } from "./keys.js";
import { batchScope, type Submitter } from "./visibility.js";

/** What a cancellation did: changed the job or batch, nothing (cancelled before), or its end state. */
export type CancelOutcome = "cancelled" | "unchanged" | "completed" | "failed" | "partial";

export interface NewBatch {
  id?: string;
  failFast: boolean;
  webhookUrl?: string;
}

export interface Submitted {
  jobIds: string[];
  /** The type of each job, in order. */
  types: JobType[];
  /** 1-based place of each job in its queue when it was accepted. */
  queuePositions: number[];
  batchId?: string;
}

/**
 * A job's life from its submission to its end and its deletion (submit, start, progress, complete,
 * fail, cancel, prune: one script each). Claims and leases are the queues' (queues.ts).
 */
export abstract class Transitions extends StoreBase {
  /**
   * Records jobs (optionally as one batch) atomically: all of them or, on a conflict, none.
   * `by`: who submits (a client that is not an admin sees its own records only); see Submitter.
   * `idempotency`: the Idempotency-Key this request took (takeIdempotencyKey); the same call records
   * the submission as the key's result, or refuses (ConflictError) when the key is no longer its own.
   */
  async submit(
    specs: JobSpec[],
    batch?: NewBatch,
    by?: Submitter,
    idempotency?: IdempotentSubmit,
  ): Promise<Submitted> {
    const submitted = await this.submitJobs(specs, batch, by, idempotency);
    if ("retriedAs" in submitted) throw new Error("submit.lua answered a retry to a submission");
    return submitted;
  }

  /**
   * Submits `spec` (retrySpec of a failed job: its `retry_of` names the job) as that job's retry and
   * records it on the job as `retried_as`, in one script (lua/submit.lua). A job retried before is
   * not retried again unless `force`: the answer is then its retry's id (`retriedAs`) and nothing is
   * written, so concurrent retries of one job make one. NotFoundError when the job is gone,
   * IllegalTransitionError when it has not failed.
   */
  async retry(
    spec: JobSpec,
    options: { force?: boolean; by?: Submitter; idempotency?: IdempotentSubmit } = {},
  ): Promise<Submitted | { retriedAs: string }> {
    if (!spec.retry_of) throw new Error("a retry's spec names the job it retries (retry_of)");
    return this.submitJobs([spec], undefined, options.by, options.idempotency, {
      of: spec.retry_of,
      force: options.force === true,
    });
  }

  /** A client's job_types and max_priority (client-limits.ts): a refusal is counted, then thrown. */
  private async checkLimits(
    client: string,
    limits: ClientLimits | undefined,
    specs: JobSpec[],
  ): Promise<void> {
    try {
      checkSubmission(client, limits, specs);
    } catch (err) {
      if (err instanceof ClientLimitError)
        await this.redis.hincrby(this.keys.clientRefused(), `${client}|${err.limit}`, 1);
      throw err;
    }
  }

  private async submitJobs(
    specs: JobSpec[],
    batch: NewBatch | undefined,
    by: Submitter | undefined,
    idempotency: IdempotentSubmit | undefined,
    retry?: { of: string; force: boolean },
  ): Promise<Submitted | { retriedAs: string }> {
    const limits = by ? this.options.clients?.get(by.name) : undefined;
    if (by) await this.checkLimits(by.name, limits, specs);
    // The client's largest source goes with each job: the runner holds the download to it.
    const sourceLimit =
      limits?.maxSourceBytes !== undefined ? { max_source_bytes: String(limits.maxSourceBytes) } : {};
    const jobs = specs.map((spec) => ({
      id: spec.id ?? randomUUID(),
      type: spec.type,
      fields: { ...encodeSpec(spec), ...sourceLimit },
    }));
    const batchId = batch ? (batch.id ?? randomUUID()) : undefined;
    // An id the client chose is one of its own (keys.ts storedBatchId); a generated one is unique.
    const storedId = batch?.id !== undefined ? storedBatchId(batch.id, batchScope(by)) : batchId;
    const payload = {
      ...(by ? { client: by.name, ...(by.admin ? { admin: true } : {}) } : {}),
      ...(limits?.maxPending !== undefined ? { max_pending: limits.maxPending } : {}),
      jobs,
      ...(batch
        ? {
            batch: {
              id: storedId,
              shown_id: batchId,
              fail_fast: batch.failFast,
              ...(batch.webhookUrl ? { webhook_url: batch.webhookUrl } : {}),
            },
          }
        : {}),
      ...(idempotency
        ? {
            idempotency: {
              client: idempotencyClient(idempotency.key.client),
              key: idempotencyKeyId(idempotency.key.key),
              fingerprint: idempotency.key.fingerprint,
              token: idempotency.token,
              ttl_ms: idempotency.ttlMs,
            },
          }
        : {}),
      ...(retry ? { retry } : {}),
    };
    const positions = (await this.script("submit", JSON.stringify(payload))) as
      number[] | ["retried", string];
    if (positions[0] === "retried") return { retriedAs: String(positions[1]) };
    return {
      jobIds: jobs.map((j) => j.id),
      types: jobs.map((j) => j.type),
      queuePositions: positions as number[],
      ...(batchId ? { batchId } : {}),
    };
  }

  /** pending (claimed) → processing. False for a duplicate report. */
  async start(id: string, leaseMs: number): Promise<boolean> {
    return (await this.script("start", id, leaseMs)) === 1;
  }

  /**
   * start() and the job's record as it is afterwards, in one round trip (a pipeline: the transition
   * is start.lua's, as for start()). The runner's first call. A refused start (the job ended
   * already, or is not claimed) comes back as `refused`, beside the record when the job exists.
   */
  async startAndGet(
    id: string,
    leaseMs: number,
  ): Promise<{ started: boolean; job?: Job; refused?: IllegalTransitionError | NotFoundError }> {
    const pipeline = this.redis.pipeline();
    this.queueScript(pipeline, "start", id, leaseMs);
    pipeline.hgetall(this.keys.job(id));
    const replies = await pipeline.exec();
    if (!replies) throw new Error(`start of job ${id}: the pipeline was discarded`);
    const [[startErr, started], [readErr, hash]] = replies as [[Error | null, unknown], [Error | null, Hash]];
    if (readErr) throw readErr;
    const job = decodeJob(hash);
    if (startErr) {
      const err = translateScriptError(startErr);
      if (err instanceof IllegalTransitionError || err instanceof NotFoundError) {
        return { started: false, ...(job ? { job } : {}), refused: err };
      }
      throw err;
    }
    return { started: started === 1, ...(job ? { job } : {}) };
  }

  /**
   * Ignored (false) unless the job is processing; a percent that is not a number is dropped. The
   * estimated seconds left are recorded with the percent; without them, the last estimate goes.
   */
  async progress(
    id: string,
    percent: number,
    message = "",
    etaSeconds?: number,
    steps?: Record<string, number>,
  ): Promise<boolean> {
    if (Number.isNaN(percent)) return false;
    const eta = etaSeconds !== undefined && Number.isFinite(etaSeconds) && etaSeconds >= 0 ? etaSeconds : "";
    const perStep = steps && Object.keys(steps).length > 0 ? JSON.stringify(steps) : "";
    return (await this.script("progress", id, percent, message, eta, perStep)) === 1;
  }

  /**
   * What a processing job's attempt did before it failed transiently (a keep_partial pipeline's
   * steps): kept for the attempts after it, and the job's result if it ends failed without one of
   * its own (its retries spent). False unless the job is processing.
   */
  async partial(id: string, result: Record<string, unknown>): Promise<boolean> {
    return (await this.script("partial", id, JSON.stringify(result))) === 1;
  }

  /** processing → completed. False for a duplicate or for a job failed meanwhile. */
  async complete(id: string, result: Record<string, unknown>): Promise<boolean> {
    return (
      (await this.script("complete", id, JSON.stringify(result), JSON.stringify(JOB_DURATION_BUCKETS))) === 1
    );
  }

  /**
   * A client's cancellation of a job or of a batch's unfinished jobs (lua/cancel.lua): "cancelled",
   * "unchanged" when it was cancelled before, or the status it had already ended with.
   */
  async cancel(kind: "job" | "batch", id: string, message: string): Promise<CancelOutcome> {
    return (await this.script("cancel", kind, id, message)) as CancelOutcome;
  }

  /**
   * Pending or processing → failed (false for a duplicate). `attempts`: the executor retried the job itself (a Kubernetes
   * Job's pods) and this is the last of that many failures; the error then says it gave up.
   * `result`: what the job did before it failed, recorded with the failure (a pipeline's completed
   * steps, with keep_partial).
   */
  async fail(
    id: string,
    error: string,
    options: { cancelled?: boolean; attempts?: number; result?: Record<string, unknown> } = {},
  ): Promise<boolean> {
    const result = options.result ? JSON.stringify(options.result) : "";
    return (
      (await this.script("fail", id, error, options.cancelled ? "1" : "0", options.attempts ?? 0, result)) ===
      1
    );
  }

  /** Deletes finished jobs and batches past their retention. Returns how many were removed. */
  async prune(limit = 500): Promise<number> {
    return (await this.script("prune", limit)) as number;
  }
}

function encodeSpec(spec: JobSpec): Record<string, string> {
  const fields: Record<string, string> = {
    source_bucket: spec.source_bucket,
    source_key: spec.source_key,
    parameters: JSON.stringify(spec.parameters),
  };
  if (spec.dest_bucket) fields.dest_bucket = spec.dest_bucket;
  if (spec.dest_key) fields.dest_key = spec.dest_key;
  if (spec.webhook_url) fields.webhook_url = spec.webhook_url;
  if (spec.webhook_style) fields.webhook_style = spec.webhook_style;
  if (spec.request_id) fields.request_id = spec.request_id;
  if (spec.resources) fields.resources = JSON.stringify(spec.resources);
  if (spec.timeout_seconds !== undefined) fields.timeout_seconds = String(spec.timeout_seconds);
  if (spec.execution_class) fields.execution_class = spec.execution_class;
  if (spec.priority) fields.priority = String(spec.priority);
  if (spec.retry_of) fields.retry_of = spec.retry_of;
  if (spec.template) fields.template = JSON.stringify(spec.template);
  return fields;
}
