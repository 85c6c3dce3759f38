import type { Job } from "../../core/jobs/records.js";
import { ownBatchId } from "../../core/store/keys.js";

// The bodies the notifier sends (docs/webhooks.md): a job's completion in the default style or as a
// Slack-compatible chat message, and a batch's completion with exactly the documented fields.

export interface JobWebhookPayload {
  event: "job.completed" | "job.failed";
  timestamp: string;
  job: {
    id: string;
    type: string;
    status: "completed" | "failed";
    /** What a person reads: `cancelled` for a failed job that was cancelled (the event stays job.failed). */
    state: "completed" | "failed" | "cancelled";
    result?: Record<string, unknown>;
    error?: string;
    request_id?: string;
    batch_id?: string;
    created_at: string;
    completed_at?: string;
    duration_seconds?: number;
  };
}

export interface BatchWebhookPayload {
  event: "batch.completed";
  timestamp: string;
  batch: { id: string; status: string; total_jobs: number; completed: number; failed: number };
}

/** How a finished job ended, as a person reads it (its record's `state`). */
function endedState(job: Job): "completed" | "failed" | "cancelled" {
  if (job.status === "completed") return "completed";
  return job.state === "cancelled" || job.cancelled_at !== undefined ? "cancelled" : "failed";
}

/** `timestamp` is when the job finished (its event), the same on every attempt. */
export function jobPayload(job: Job, timestamp: string): JobWebhookPayload {
  const completed = job.status === "completed";
  return {
    event: completed ? "job.completed" : "job.failed",
    timestamp,
    job: {
      id: job.id,
      type: job.type,
      status: completed ? "completed" : "failed",
      state: endedState(job),
      ...(completed
        ? { result: job.result ?? {} }
        : { error: job.error ?? "failed", ...(job.result ? { result: job.result } : {}) }),
      ...(job.request_id !== undefined ? { request_id: job.request_id } : {}),
      ...(job.batch_id !== undefined ? { batch_id: ownBatchId(job.batch_id) } : {}),
      created_at: job.created_at,
      ...(job.completed_at !== undefined ? { completed_at: job.completed_at } : {}),
      ...(job.duration_seconds !== undefined ? { duration_seconds: job.duration_seconds } : {}),
    },
  };
}

export function batchPayload(batch: BatchWebhookPayload["batch"], timestamp: string): BatchWebhookPayload {
  return {
    event: "batch.completed",
    timestamp,
    batch: {
      id: batch.id,
      status: batch.status,
      total_jobs: batch.total_jobs,
      completed: batch.completed,
      failed: batch.failed,
    },
  };
}

// Slack limits: section text 3000 characters, a field's text 2000, at most 10 fields.
const SECTION_MAX = 3000;
const FIELD_MAX = 2000;

interface TextObject {
  type: "mrkdwn" | "plain_text";
  text: string;
}
export interface ChatPayload {
  text: string;
  blocks: Array<
    { type: "section"; text: TextObject; fields?: TextObject[] } | { type: "context"; elements: TextObject[] }
  >;
}

/** A Slack-compatible message (`{text, blocks}`); `text` is the notification fallback. */
export function chatPayload(job: Job): ChatPayload {
  const completed = job.status === "completed";
  const state = endedState(job);
  const took = job.duration_seconds !== undefined ? ` in ${formatSeconds(job.duration_seconds)}` : "";
  const headline = completed
    ? `:white_check_mark: ${job.type} job ${job.id} completed${took}`
    : state === "cancelled"
      ? `:no_entry_sign: ${job.type} job ${job.id} cancelled${took}`
      : `:x: ${job.type} job ${job.id} failed${took}`;
  const fields: TextObject[] = [
    mrkdwn(`*Job*\n\`${escape(job.id)}\``, FIELD_MAX),
    mrkdwn(`*Type*\n${escape(job.type)}`, FIELD_MAX),
    mrkdwn(`*Status*\n${state}`, FIELD_MAX),
  ];
  if (job.duration_seconds !== undefined) {
    fields.push(mrkdwn(`*Duration*\n${formatSeconds(job.duration_seconds)}`, FIELD_MAX));
  }
  const detail = completed
    ? describeResult(job.result ?? {})
    : `*Error*\n\`\`\`${truncate(escape(job.error ?? "failed"), SECTION_MAX - 20)}\`\`\``;
  const context = [
    job.request_id !== undefined ? `request_id \`${escape(job.request_id)}\`` : undefined,
    job.batch_id !== undefined ? `batch \`${escape(ownBatchId(job.batch_id))}\`` : undefined,
    job.completed_at !== undefined ? `finished ${job.completed_at}` : undefined,
  ].filter((part): part is string => part !== undefined);
  return {
    text: completed
      ? headline
      : `${headline}: ${truncate(job.error ?? "failed", SECTION_MAX - headline.length - 2)}`,
    blocks: [
      { type: "section", text: mrkdwn(`*${escape(headline)}*`, SECTION_MAX), fields },
      ...(detail ? [{ type: "section" as const, text: mrkdwn(detail, SECTION_MAX) }] : []),
      ...(context.length > 0
        ? [{ type: "context" as const, elements: [mrkdwn(context.join(" · "), SECTION_MAX)] }]
        : []),
    ],
  };
}

// What a reader of the channel wants from the result: the output (a link when it is a web URL) and
// the figures of the type.
function describeResult(result: Record<string, unknown>): string | undefined {
  const lines: string[] = [];
  const url = result.output_url;
  if (typeof url === "string") {
    lines.push(/^https?:\/\//.test(url) ? `*Output*\n<${url}>` : `*Output*\n\`${escape(url)}\``);
  }
  const metadata = result.metadata as Record<string, unknown> | undefined;
  if (metadata && typeof metadata.width === "number" && typeof metadata.height === "number") {
    const format = typeof metadata.format === "string" ? ` ${metadata.format}` : "";
    lines.push(`${metadata.width}×${metadata.height}${escape(format)}`);
  }
  if (typeof result.file_size === "number") lines.push(`${result.file_size} bytes`);
  if (Array.isArray(result.colors))
    lines.push(`*Colors*\n${result.colors.map((c) => escape(String(c))).join(", ")}`);
  if (Array.isArray(result.keywords)) {
    lines.push(`*Keywords*\n${result.keywords.map((k) => escape(String(k))).join(", ")}`);
  }
  if (typeof result.text === "string") lines.push(escape(result.text));
  return lines.length > 0 ? lines.join("\n") : undefined;
}

function mrkdwn(text: string, max: number): TextObject {
  return { type: "mrkdwn", text: truncate(text, max) };
}

// Slack's mrkdwn treats &, < and > as control characters.
function escape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`;
}

function formatSeconds(seconds: number): string {
  return seconds < 10 ? `${seconds.toFixed(2)} s` : `${seconds.toFixed(1)} s`;
}
