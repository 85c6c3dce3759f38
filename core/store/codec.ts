import type { Batch, Job, JobSummary, WebhookDelivery } from "../jobs/records.js";
import { clip } from "../text.js";
import type { BatchStatus, JobState, JobStatus, JobType } from "../jobs/types.js";

// How records are laid out in Redis hashes: every field a string, objects as JSON.
export type Hash = Record<string, string>;

const JSON_FIELDS = new Set(["parameters", "result", "resources", "steps_progress", "template"]);
const NUMBER_FIELDS = new Set([
  "duration_seconds",
  "progress",
  "eta_seconds",
  "timeout_seconds",
  "priority",
  "attempts",
  "max_source_bytes",
]);
const PUBLIC_FIELDS = [
  "id",
  "type",
  "status",
  "source_bucket",
  "source_key",
  "dest_bucket",
  "dest_key",
  "parameters",
  "result",
  "error",
  "progress",
  "eta_seconds",
  "steps_progress",
  "batch_id",
  "request_id",
  "webhook_url",
  "webhook_style",
  "resources",
  "timeout_seconds",
  "max_source_bytes",
  "execution_class",
  "priority",
  "attempts",
  "created_at",
  "updated_at",
  "started_at",
  "completed_at",
  "cancelled_at",
  "duration_seconds",
  "retry_of",
  "retried_as",
  "template",
] as const;

export function decodeJob(hash: Hash): Job | undefined {
  if (!hash.id) return undefined;
  const job: Record<string, unknown> = {};
  for (const field of PUBLIC_FIELDS) {
    const value = hash[field];
    if (value === undefined || value === "") continue;
    if (JSON_FIELDS.has(field)) job[field] = JSON.parse(value);
    else if (NUMBER_FIELDS.has(field)) job[field] = Number(value);
    else job[field] = value;
  }
  job.parameters ??= {};
  job.state = stateOf(hash.status as JobStatus, hash.cancelled);
  const delivery = decodeWebhookDelivery(hash);
  if (delivery) job.webhook_delivery = delivery;
  // Progress and the time left are only meaningful while a job runs.
  if (job.status !== "processing") {
    delete job.progress;
    delete job.eta_seconds;
    delete job.steps_progress;
  }
  return job as Job;
}

/** What a person reads of a job: its status, or `cancelled` for a failed job that was cancelled. */
export function stateOf(status: JobStatus, cancelled: string | null | undefined): JobState {
  return status === "failed" && cancelled === "1" ? "cancelled" : status;
}

/** The longest error a job summary carries (a list's row); the job's record has the whole message. */
export const SUMMARY_ERROR_CHARS = 200;

export function decodeSummary(fields: Array<string | null>): JobSummary | undefined {
  const [id, type, status, created_at, cancelled, sb, sk, db, dk, duration, error] = fields;
  if (!id || !type || !status || !created_at) return undefined;
  return {
    id,
    type: type as JobType,
    status: status as JobStatus,
    state: stateOf(status as JobStatus, cancelled),
    created_at,
    ...(sb && sk ? { source: `${sb}/${sk}` } : {}),
    ...(db && dk ? { output: `${db}/${dk}` } : {}),
    ...(duration ? { duration_seconds: Number(duration) } : {}),
    ...(error ? { error: clip(error, SUMMARY_ERROR_CHARS) } : {}),
  };
}
export const SUMMARY_FIELDS = [
  "id",
  "type",
  "status",
  "created_at",
  "cancelled",
  "source_bucket",
  "source_key",
  "dest_bucket",
  "dest_key",
  "duration_seconds",
  "error",
];

export function decodeBatch(hash: Hash): Batch | undefined {
  if (!hash.id) return undefined;
  const delivery = decodeWebhookDelivery(hash);
  const int = (name: string) => Number(hash[name] ?? 0);
  return {
    id: hash.id,
    status: hash.status as BatchStatus,
    total_jobs: int("total_jobs"),
    pending: int("pending"),
    processing: int("processing"),
    completed: int("completed"),
    failed: int("failed"),
    cancelled: int("cancelled"),
    fail_fast: hash.fail_fast === "1",
    ...(hash.webhook_url ? { webhook_url: hash.webhook_url } : {}),
    ...(hash.stopped_by ? { stopped_by: hash.stopped_by } : {}),
    created_at: hash.created_at!,
    updated_at: hash.updated_at!,
    ...(hash.completed_at ? { completed_at: hash.completed_at } : {}),
    ...(hash.cancelled_at ? { cancelled_at: hash.cancelled_at } : {}),
    ...(delivery ? { webhook_delivery: delivery } : {}),
  };
}

/** What the notifier last did with the record's webhook (fields written by lua/webhook.lua). */
export function decodeWebhookDelivery(hash: Hash): WebhookDelivery | undefined {
  if (!hash.webhook_id) return undefined;
  return {
    id: hash.webhook_id,
    status: hash.webhook_status as WebhookDelivery["status"],
    attempts: Number(hash.webhook_attempts ?? 0),
    last_attempt_at: hash.webhook_last_attempt_at!,
    last_result: hash.webhook_last_result ?? "",
    ...(hash.webhook_last_status_code ? { last_status_code: Number(hash.webhook_last_status_code) } : {}),
    ...(hash.webhook_next_attempt_at ? { next_attempt_at: hash.webhook_next_attempt_at } : {}),
    ...(hash.webhook_delivered_at ? { delivered_at: hash.webhook_delivered_at } : {}),
  };
}
