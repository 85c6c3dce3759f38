// What the webhook notifier does with an event and with each attempt's answer, decided by pure
// functions of the event, the record it names, the receiver's response and the time: whether there is
// a webhook to deliver and what its body is, which deliveries start now (within the concurrency
// limits), and after an attempt whether it is delivered, retried at a time, given up or refused, and
// what is recorded and logged. The notifier (notifier.ts) reads and writes; nothing here does.
import type { Batch, Job } from "../../core/jobs/records.js";
import type { StoreEvent } from "../../core/store/events.js";
import { ownBatchId } from "../../core/store/keys.js";
import type { WebhookResult } from "../../core/store/store.js";
import { nextAttemptDelay } from "../../core/retry.js";
import { signWebhook } from "../../core/webhooks/signing.js";
import type { WebhookResponse } from "./http-client.js";
import { batchPayload, chatPayload, jobPayload } from "./payloads.js";

/** One webhook to deliver: the event's, for its job or batch. */
export interface Delivery {
  /** The stream entry of the event: acknowledged when the delivery ends. */
  entryId: string;
  kind: "job" | "batch";
  recordId: string;
  /** The `webhook-id` header: the same on every attempt, so a receiver can drop repeats. */
  webhookId: string;
  url: string;
  /** The URL's origin, the one part of it logged (paths and queries often carry secrets). */
  origin: string;
  body: string;
  /** Attempts made so far (kept on the record, so a notifier that takes over continues the count). */
  attempts: number;
  /** When the next attempt is due, ms since the epoch. */
  dueAt: number;
  /** Who the delivery is about, for its log lines. */
  context: Record<string, string>;
}

/** The record an event's webhook is built from; undefined: the event has no webhook. */
export function webhookRecord(event: StoreEvent): { kind: "job" | "batch"; id: string } | undefined {
  switch (event.event) {
    case "job.completed":
    case "job.failed":
    case "job.cancelled":
      return event.webhook ? { kind: "job", id: event.job_id } : undefined;
    case "batch.completed":
      return event.webhook_url ? { kind: "batch", id: event.batch_id } : undefined;
    default:
      return undefined;
  }
}

/** What a decision about an event says when it delivers nothing; `warn`: a webhook lost, for the operator. */
export interface NoDelivery {
  ack: string;
  warn?: true;
  /** Who the event is about, for the log line. */
  context: Record<string, string>;
}

/**
 * The delivery an event calls for, from the record webhookRecord named (undefined: none found), or
 * why there is none, its entry then acknowledged at once: no webhook, its job expired, or its
 * webhook delivered, given up or refused already.
 */
export function decideEvent(
  event: StoreEvent,
  record: Job | Batch | undefined,
  now: number,
): { deliver: Delivery } | NoDelivery {
  const at = event.at ?? new Date(now).toISOString();
  const target = webhookRecord(event);
  const previous = record?.webhook_delivery;
  const settled =
    previous && previous.status !== "pending" ? `its webhook is ${previous.status} already` : "";
  if (target?.kind === "job" && "job_id" in event) {
    const context = {
      job_id: event.job_id,
      ...(event.batch_id ? { batch_id: event.batch_id } : {}),
      ...("request_id" in event && event.request_id ? { request_id: event.request_id } : {}),
    };
    const job = record as Job | undefined;
    if (!job?.webhook_url)
      return { ack: "job expired before its webhook was delivered; dropped", warn: true, context };
    if (settled) return { ack: settled, context };
    const body = job.webhook_style === "chat" ? chatPayload(job) : jobPayload(job, at);
    return { deliver: delivery(event.entryId, "job", job.id, job.webhook_url, body, previous, now, context) };
  }
  if (event.event !== "batch.completed" || !event.webhook_url)
    return { ack: "the event has no webhook", context: {} };
  const context = { batch_id: event.batch_id };
  if (settled) return { ack: settled, context };
  const { status, total_jobs, completed, failed } = event;
  // The receiver is the batch's client: its own id (keys.ts storedBatchId).
  const body = batchPayload({ id: ownBatchId(event.batch_id), status, total_jobs, completed, failed }, at);
  return {
    deliver: delivery(
      event.entryId,
      "batch",
      event.batch_id,
      event.webhook_url,
      body,
      previous,
      now,
      context,
    ),
  };
}

function delivery(
  entryId: string,
  kind: "job" | "batch",
  recordId: string,
  url: string,
  body: unknown,
  previous: { attempts: number; next_attempt_at?: string } | undefined,
  now: number,
  context: Record<string, string>,
): Delivery {
  const webhookId = `msg_${entryId}`;
  return {
    entryId,
    kind,
    recordId,
    webhookId,
    url,
    origin: originOf(url),
    body: JSON.stringify(body),
    attempts: previous?.attempts ?? 0,
    dueAt: previous?.next_attempt_at ? Date.parse(previous.next_attempt_at) : now,
    context: { ...context, webhook_id: webhookId },
  };
}

// Webhook URLs often carry secrets in their path or query (Slack's do): logs name the origin only.
export function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "(invalid URL)";
  }
}

/** The headers of an attempt (Standard Webhooks), signed when there is a signing key. */
export function webhookHeaders(
  delivery: Pick<Delivery, "webhookId" | "body">,
  signingKey: Buffer | undefined,
  nowSeconds: number,
): Record<string, string> {
  return {
    "webhook-id": delivery.webhookId,
    "webhook-timestamp": String(nowSeconds),
    ...(signingKey
      ? { "webhook-signature": signWebhook(signingKey, delivery.webhookId, nowSeconds, delivery.body) }
      : {}),
  };
}

export interface Limits {
  /** webhooks.concurrency: attempts in flight at once. */
  concurrency: number;
  /** webhooks.per_host_concurrency: attempts in flight at once to one origin. */
  perHostConcurrency: number;
}

/**
 * The ready deliveries to start now, in their order, while there is room overall and for their
 * receiving origin; the others wait for an attempt to end.
 */
export function pickReady<T extends Pick<Delivery, "origin">>(
  ready: readonly T[],
  inFlight: number,
  inFlightByOrigin: ReadonlyMap<string, number>,
  limits: Limits,
): T[] {
  const picked: T[] = [];
  const byOrigin = new Map(inFlightByOrigin);
  for (const delivery of ready) {
    if (inFlight + picked.length >= limits.concurrency) break;
    const n = byOrigin.get(delivery.origin) ?? 0;
    if (n >= limits.perHostConcurrency) continue;
    byOrigin.set(delivery.origin, n + 1);
    picked.push(delivery);
  }
  return picked;
}

/** What the retry rule takes of webhooks' settings. */
export interface RetryPolicy {
  /** webhooks.max_attempts */
  maxAttempts: number;
  retryInitialDelayMs: number;
  retryMaxDelayMs: number;
}

/** An attempt's outcome: what webhook.lua records (and, unless `retry`, acknowledges), and the log line. */
export interface Settled {
  /** The attempt's number (1 for the first). */
  attempt: number;
  result: WebhookResult;
  summary: string;
  statusCode?: number;
  /** With result retry: when the next attempt is due (ms since the epoch). */
  nextAttemptAt?: number;
  log: { level: "info" | "warn"; message: string };
}

/**
 * An attempt's answer, judged: a 2xx is delivered; a refusal of the address policy is refused; a
 * 4xx that retrying cannot help is given up at once; anything retryable is retried (at the
 * receiver's Retry-After, within the longest wait, else on the retry schedule) until
 * webhooks.max_attempts, then given up.
 */
export function decideAttempt(
  delivery: Pick<Delivery, "attempts" | "origin">,
  response: WebhookResponse,
  policy: RetryPolicy,
  now: number,
  random: () => number = Math.random,
): Settled {
  const attempt = delivery.attempts + 1;
  const statusCode = "statusCode" in response ? response.statusCode : undefined;
  const code = statusCode !== undefined ? { statusCode } : {};
  switch (response.kind) {
    case "delivered":
      return {
        attempt,
        result: "delivered",
        summary: `${delivery.origin} answered ${response.statusCode}`,
        ...code,
        log: { level: "info", message: "webhook delivered" },
      };
    case "rejected":
      return { attempt, result: "failed", summary: response.message, ...code, log: given };
    case "refused":
      return {
        attempt,
        result: "refused",
        summary: response.message,
        log: { level: "warn", message: "webhook refused by the target policy" },
      };
    case "retryable": {
      if (attempt >= policy.maxAttempts) {
        const summary = `${response.message}; gave up after ${attempt} attempts`;
        return { attempt, result: "failed", summary, ...code, log: given };
      }
      const { retryInitialDelayMs: initial, retryMaxDelayMs: max } = policy;
      const nextAttemptAt = now + nextAttemptDelay(attempt, response.retryAfterMs, initial, max, random);
      return {
        attempt,
        result: "retry",
        summary: response.message,
        ...code,
        nextAttemptAt,
        log: { level: "warn", message: "webhook attempt failed; will retry" },
      };
    }
  }
}

const given = { level: "warn", message: "webhook given up" } as const;
