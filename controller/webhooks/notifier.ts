import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Redis } from "ioredis";
import type { Config } from "../../core/config/load.js";
import type { Logger } from "../../core/logger.js";
import {
  decodeStoreEvent,
  fieldsOf,
  type StoreEvent,
  type StreamEntry,
  type StreamReply,
} from "../../core/store/events.js";
import { ownBatchId } from "../../core/store/keys.js";
import type { JobStore, WebhookResult } from "../../core/store/store.js";
import { decodeSigningSecret, signWebhook } from "../../core/webhooks/signing.js";
import { nextAttemptDelay } from "../../core/retry.js";
import type { WebhookClient, WebhookResponse } from "./http-client.js";
import { batchPayload, chatPayload, jobPayload } from "./payloads.js";

/** The consumer group of the events stream that webhook notifiers share. */
export const NOTIFIER_GROUP = "notifier";

// Deliveries one notifier holds (waiting for a retry or in flight) before it stops reading the
// stream; the rest wait there, durably.
const MAX_HELD = 10_000;
const READ_COUNT = 100;
const READ_BLOCK_MS = 2000;
// A consumer with nothing pending and idle this long is a notifier that is gone: removed from the group.
const FORGET_CONSUMER_AFTER_MS = 3_600_000;

export interface NotifierOptions {
  store: JobStore;
  /** A connection of its own: XREADGROUP blocks it. */
  reader: Redis;
  config: Config["webhooks"];
  client: Pick<WebhookClient, "post">;
  logger: Logger;
  /** Unique per process unless a test says otherwise. */
  consumer?: string;
}

interface Delivery {
  entryId: string;
  kind: "job" | "batch";
  recordId: string;
  webhookId: string;
  url: string;
  origin: string;
  body: string;
  /** Attempts made so far (kept on the record, so a notifier that takes over continues the count). */
  attempts: number;
  dueAt: number;
  timer?: NodeJS.Timeout;
  log: Logger;
}

/**
 * Delivers job and batch webhooks from the store's events stream. Notifiers (one per controller
 * process) share a consumer group, so each event is handled by one of them; an event stays pending in
 * the group until its webhook is delivered or given up (lua/webhook.lua acknowledges it in the same
 * step that records the outcome). A notifier refreshes the idle time of what it holds; deliveries of
 * one that stopped heartbeating are taken over after `reclaim_after`, and a notifier that stops
 * cleanly hands its deliveries over at once. Nothing here runs on the API's request path.
 */
export class WebhookNotifier {
  private readonly store: JobStore;
  private readonly reader: Redis;
  private readonly config: Config["webhooks"];
  private readonly client: Pick<WebhookClient, "post">;
  private readonly logger: Logger;
  private readonly consumer: string;
  private readonly streamKey: string;
  private readonly signingKey: Buffer | undefined;
  private readonly held = new Map<string, Delivery>();
  private readonly ready: Delivery[] = [];
  private readonly inFlightByOrigin = new Map<string, number>();
  private readonly attempts = new Set<Promise<void>>();
  private inFlight = 0;
  private stopping = false;
  private readLoop: Promise<void> | undefined;
  private roomWaiter: (() => void) | undefined;
  private timers: NodeJS.Timeout[] = [];

  constructor(options: NotifierOptions) {
    this.store = options.store;
    this.reader = options.reader;
    this.config = options.config;
    this.client = options.client;
    this.logger = options.logger;
    this.consumer = options.consumer ?? `${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`;
    this.streamKey = options.store.keys.events();
    this.signingKey = options.config.signingSecret
      ? decodeSigningSecret(options.config.signingSecret)
      : undefined;
  }

  /** Without Redis it starts anyway and keeps trying: the group is made once Redis answers. */
  async start(): Promise<void> {
    await this.ensureGroup().catch((err) =>
      this.warn("could not create the notifier's consumer group yet", err),
    );
    await this.reclaim().catch((err) =>
      this.warn("could not look for abandoned webhook deliveries yet", err),
    );
    const every = (ms: number, task: () => Promise<void>) => {
      const timer = setInterval(
        () => void task().catch((err) => this.warn("webhook notifier housekeeping failed", err)),
        ms,
      );
      timer.unref();
      this.timers.push(timer);
    };
    every(Math.max(250, Math.floor(this.config.reclaimAfterMs / 3)), () => this.heartbeat());
    every(Math.max(500, Math.floor(this.config.reclaimAfterMs / 2)), () => this.reclaim());
    this.readLoop = this.read();
    this.logger.info(
      { consumer: this.consumer, signed: this.signingKey !== undefined },
      "webhook notifier started",
    );
  }

  /**
   * Stops reading, lets attempts in flight finish (each is bounded by webhooks.timeout), and hands
   * every delivery it still holds back to the group, due for any other notifier at once.
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    for (const timer of this.timers) clearInterval(timer);
    this.roomWaiter?.();
    this.reader.disconnect();
    await this.readLoop?.catch(() => undefined);
    await Promise.allSettled([...this.attempts]);
    for (const delivery of this.held.values()) clearTimeout(delivery.timer);
    const ids = [...this.held.keys()];
    this.held.clear();
    if (ids.length > 0) {
      await this.claim(ids, { idleMs: this.config.reclaimAfterMs * 10 }).catch((err) =>
        this.warn(
          "could not hand webhook deliveries over; another notifier takes them after reclaim_after",
          err,
        ),
      );
    }
  }

  private async ensureGroup(): Promise<void> {
    try {
      // From the start of the stream: events recorded before the first notifier ran are not lost.
      await this.store.redis.xgroup("CREATE", this.streamKey, NOTIFIER_GROUP, "0", "MKSTREAM");
    } catch (err) {
      if (!/BUSYGROUP/.test((err as Error).message)) throw err;
    }
  }

  private async read(): Promise<void> {
    while (!this.stopping) {
      if (this.held.size >= MAX_HELD || this.ready.length >= this.config.concurrency * 4) {
        await new Promise<void>((resolve) => (this.roomWaiter = resolve));
        this.roomWaiter = undefined;
        continue;
      }
      let reply: unknown;
      try {
        reply = await this.reader.xreadgroup(
          "GROUP",
          NOTIFIER_GROUP,
          this.consumer,
          "COUNT",
          READ_COUNT,
          "BLOCK",
          READ_BLOCK_MS,
          "STREAMS",
          this.streamKey,
          ">",
        );
      } catch (err) {
        if (this.stopping) return;
        if (/NOGROUP/.test((err as Error).message)) await this.ensureGroup().catch(() => undefined);
        else this.warn("reading the events stream failed; retrying", err);
        await sleep(1000);
        continue;
      }
      const streams = reply as StreamReply;
      // Entries it could not take stay pending in the group; its own reclaim takes them again later.
      if (streams?.[0])
        await this.take(streams[0][1]).catch((err) => this.warn("handling events failed", err));
    }
  }

  /** Turns stream entries into deliveries; entries that need none are acknowledged at once. */
  private async take(entries: StreamEntry[]): Promise<void> {
    const done: string[] = [];
    await Promise.all(
      entries.map(async (entry) => {
        const [entryId] = entry;
        if (this.held.has(entryId)) return;
        const event = decodeStoreEvent(entry);
        const delivery = event ? await this.prepare(event) : undefined;
        if (delivery) this.schedule(delivery);
        else done.push(entryId);
      }),
    );
    if (done.length > 0) await this.store.redis.xack(this.streamKey, NOTIFIER_GROUP, ...done);
  }

  private async prepare(event: StoreEvent): Promise<Delivery | undefined> {
    const { entryId } = event;
    const at = event.at ?? new Date().toISOString();
    if (event.event === "job.completed" || event.event === "job.failed" || event.event === "job.cancelled") {
      if (!event.webhook) return undefined;
      const job = await this.store.getJob(event.job_id);
      const log = this.logger.child({
        job_id: event.job_id,
        ...(event.batch_id ? { batch_id: event.batch_id } : {}),
        ...(event.request_id ? { request_id: event.request_id } : {}),
      });
      if (!job?.webhook_url) {
        log.warn("job expired before its webhook was delivered; dropped");
        return undefined;
      }
      if (job.webhook_delivery && job.webhook_delivery.status !== "pending") return undefined;
      const body = job.webhook_style === "chat" ? chatPayload(job) : jobPayload(job, at);
      return this.delivery(entryId, "job", job.id, job.webhook_url, body, job.webhook_delivery, log);
    }
    if (event.event === "batch.completed") {
      if (!event.webhook_url) return undefined;
      const batch = await this.store.getBatch(event.batch_id);
      if (batch?.webhook_delivery && batch.webhook_delivery.status !== "pending") return undefined;
      const body = batchPayload(
        {
          // The receiver is the batch's client: its own id (keys.ts storedBatchId).
          id: ownBatchId(event.batch_id),
          status: event.status,
          total_jobs: event.total_jobs,
          completed: event.completed,
          failed: event.failed,
        },
        at,
      );
      const log = this.logger.child({ batch_id: event.batch_id });
      return this.delivery(
        entryId,
        "batch",
        event.batch_id,
        event.webhook_url,
        body,
        batch?.webhook_delivery,
        log,
      );
    }
    return undefined;
  }

  private delivery(
    entryId: string,
    kind: "job" | "batch",
    recordId: string,
    url: string,
    body: unknown,
    previous: { attempts: number; next_attempt_at?: string } | undefined,
    log: Logger,
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
      dueAt: previous?.next_attempt_at ? Date.parse(previous.next_attempt_at) : Date.now(),
      log: log.child({ webhook_id: webhookId }),
    };
  }

  private schedule(delivery: Delivery): void {
    this.held.set(delivery.entryId, delivery);
    const wait = delivery.dueAt - Date.now();
    if (wait <= 0) {
      this.ready.push(delivery);
      this.pump();
      return;
    }
    delivery.timer = setTimeout(() => {
      delivery.timer = undefined;
      if (this.stopping) return;
      this.ready.push(delivery);
      this.pump();
    }, wait);
    delivery.timer.unref();
  }

  /** Starts ready deliveries while there is room overall and for their receiving host. */
  private pump(): void {
    for (let i = 0; i < this.ready.length && this.inFlight < this.config.concurrency && !this.stopping;) {
      const delivery = this.ready[i]!;
      if ((this.inFlightByOrigin.get(delivery.origin) ?? 0) >= this.config.perHostConcurrency) {
        i++;
        continue;
      }
      this.ready.splice(i, 1);
      const attempt = this.attempt(delivery).finally(() => this.attempts.delete(attempt));
      this.attempts.add(attempt);
    }
  }

  private async attempt(delivery: Delivery): Promise<void> {
    this.inFlight++;
    this.inFlightByOrigin.set(delivery.origin, (this.inFlightByOrigin.get(delivery.origin) ?? 0) + 1);
    try {
      const response = await this.client.post({
        url: delivery.url,
        body: delivery.body,
        headers: this.headers(delivery),
        timeoutMs: this.config.timeoutMs,
      });
      await this.settle(delivery, response);
    } catch (err) {
      // Only the store can fail here (post never throws): the delivery stays held and pending in the
      // group, and is tried again (a receiver may see it twice, with the same webhook-id).
      this.warn("recording a webhook attempt failed; it will be retried", err, delivery.log);
      if (!this.stopping) {
        delivery.dueAt = Date.now() + 1000;
        this.schedule(delivery);
      }
    } finally {
      this.inFlight--;
      const left = (this.inFlightByOrigin.get(delivery.origin) ?? 1) - 1;
      if (left > 0) this.inFlightByOrigin.set(delivery.origin, left);
      else this.inFlightByOrigin.delete(delivery.origin);
      this.pump();
      if (this.held.size < MAX_HELD) this.roomWaiter?.();
    }
  }

  private headers(delivery: Delivery): Record<string, string> {
    const timestamp = Math.floor(Date.now() / 1000);
    return {
      "webhook-id": delivery.webhookId,
      "webhook-timestamp": String(timestamp),
      ...(this.signingKey
        ? { "webhook-signature": signWebhook(this.signingKey, delivery.webhookId, timestamp, delivery.body) }
        : {}),
    };
  }

  private async settle(delivery: Delivery, response: WebhookResponse): Promise<void> {
    const attempt = delivery.attempts + 1;
    let result: WebhookResult;
    let summary: string;
    let nextAttemptAt: number | undefined;
    switch (response.kind) {
      case "delivered":
        result = "delivered";
        summary = `${delivery.origin} answered ${response.statusCode}`;
        break;
      case "rejected":
        result = "failed";
        summary = response.message;
        break;
      case "refused":
        result = "refused";
        summary = response.message;
        break;
      case "retryable":
        summary = response.message;
        if (attempt < this.config.maxAttempts) {
          result = "retry";
          nextAttemptAt =
            Date.now() +
            nextAttemptDelay(
              attempt,
              response.retryAfterMs,
              this.config.retryInitialDelayMs,
              this.config.retryMaxDelayMs,
            );
        } else {
          result = "failed";
          summary = `${summary}; gave up after ${attempt} attempts`;
        }
        break;
    }
    const statusCode = "statusCode" in response ? response.statusCode : undefined;
    await this.store.recordWebhookAttempt({
      kind: delivery.kind,
      id: delivery.recordId,
      webhookId: delivery.webhookId,
      result,
      summary,
      ...(statusCode !== undefined ? { statusCode } : {}),
      ...(nextAttemptAt !== undefined ? { nextAttemptAt } : {}),
      group: NOTIFIER_GROUP,
      entryId: delivery.entryId,
    });
    const context = { attempt, result, outcome: summary, target: delivery.origin };
    if (result === "retry") {
      delivery.log.warn(
        { ...context, next_attempt_at: new Date(nextAttemptAt!).toISOString() },
        "webhook attempt failed; will retry",
      );
      delivery.attempts = attempt;
      delivery.dueAt = nextAttemptAt!;
      if (!this.stopping) this.schedule(delivery);
      return;
    }
    this.held.delete(delivery.entryId);
    if (result === "delivered") delivery.log.info(context, "webhook delivered");
    else
      delivery.log.warn(
        context,
        result === "refused" ? "webhook refused by the target policy" : "webhook given up",
      );
  }

  /** Keeps what this notifier holds from looking abandoned (resets the entries' idle time). */
  private async heartbeat(): Promise<void> {
    const ids = [...this.held.keys()];
    if (ids.length > 0) await this.claim(ids);
  }

  private async claim(ids: string[], options: { idleMs?: number } = {}): Promise<void> {
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      const idle = options.idleMs !== undefined ? ["IDLE", options.idleMs] : [];
      await this.store.redis.call(
        "XCLAIM",
        this.streamKey,
        NOTIFIER_GROUP,
        this.consumer,
        0,
        ...chunk,
        ...idle,
        "JUSTID",
      );
    }
  }

  /** Takes over deliveries of notifiers that stopped heartbeating, and forgets long-gone consumers. */
  private async reclaim(): Promise<void> {
    if (this.stopping) return;
    let cursor = "0-0";
    do {
      if (this.held.size >= MAX_HELD) return;
      const reply = (await this.store.redis.call(
        "XAUTOCLAIM",
        this.streamKey,
        NOTIFIER_GROUP,
        this.consumer,
        this.config.reclaimAfterMs,
        cursor,
        "COUNT",
        READ_COUNT,
      )) as [string, StreamEntry[], string[]?];
      cursor = reply[0];
      const entries = reply[1].filter(([id]) => !this.held.has(id));
      if (reply[2] && reply[2].length > 0) {
        this.logger.warn(
          { events: reply[2].length },
          "events were trimmed from the stream before their webhooks were delivered (raise limits.events_max_len)",
        );
      }
      if (entries.length > 0) {
        this.logger.info({ events: entries.length }, "taking over webhook deliveries of a stopped notifier");
        await this.take(entries);
      }
    } while (cursor !== "0-0" && !this.stopping);
    await this.forgetGoneConsumers();
  }

  private async forgetGoneConsumers(): Promise<void> {
    const consumers = (await this.store.redis.call(
      "XINFO",
      "CONSUMERS",
      this.streamKey,
      NOTIFIER_GROUP,
    )) as unknown[][];
    for (const flat of consumers) {
      const info = fieldsOf(flat);
      if (
        info.name !== this.consumer &&
        Number(info.pending) === 0 &&
        Number(info.idle) > FORGET_CONSUMER_AFTER_MS
      ) {
        await this.store.redis.xgroup("DELCONSUMER", this.streamKey, NOTIFIER_GROUP, info.name!);
      }
    }
  }

  private warn(message: string, err: unknown, log: Logger = this.logger): void {
    log.warn({ err: err instanceof Error ? err.message : String(err) }, message);
  }
}

// Webhook URLs often carry secrets in their path or query (Slack's do): logs name the origin only.
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "(invalid URL)";
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
