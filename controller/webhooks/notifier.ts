import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Redis } from "ioredis";
import type { Config } from "../../core/config/load.js";
import type { Logger } from "../../core/logger.js";
import { decodeStoreEvent, type StreamEntry } from "../../core/store/events.js";
import type { JobStore } from "../../core/store/store.js";
import { decodeSigningSecret } from "../../core/webhooks/signing.js";
import {
  decideAttempt,
  decideEvent,
  pickReady,
  webhookHeaders,
  webhookRecord,
  type Delivery,
} from "./delivery.js";
import type { WebhookClient, WebhookResponse } from "./http-client.js";
import { isNoGroup, NOTIFIER_GROUP, NotifierStream } from "./stream.js";

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

/** A delivery this notifier holds: waiting for its time, ready, or in flight. */
interface Held extends Delivery {
  timer?: NodeJS.Timeout;
  log: Logger;
}

/**
 * Delivers job and batch webhooks from the store's events stream. Notifiers (one per controller
 * process) share a consumer group, so each event is handled by one of them; an event stays pending in
 * the group until its webhook is delivered or given up (lua/webhook.lua acknowledges it in the same
 * step that records the outcome). A notifier refreshes the idle time of what it holds; deliveries of
 * one that stopped heartbeating are taken over after `reclaim_after`, and a notifier that stops
 * cleanly hands its deliveries over at once. Nothing here runs on the API's request path. What to
 * deliver and what an answer means are decided in delivery.ts; the stream's commands are stream.ts's.
 */
export class WebhookNotifier {
  private readonly store: JobStore;
  private readonly stream: NotifierStream;
  private readonly config: Config["webhooks"];
  private readonly client: Pick<WebhookClient, "post">;
  private readonly logger: Logger;
  private readonly signingKey: Buffer | undefined;
  private readonly held = new Map<string, Held>();
  private readonly ready: Held[] = [];
  private readonly inFlightByOrigin = new Map<string, number>();
  private readonly attempts = new Set<Promise<void>>();
  private inFlight = 0;
  private stopping = false;
  private readLoop: Promise<void> | undefined;
  private roomWaiter: (() => void) | undefined;
  private timers: NodeJS.Timeout[] = [];

  constructor(options: NotifierOptions) {
    this.store = options.store;
    this.config = options.config;
    this.client = options.client;
    this.logger = options.logger;
    const consumer = options.consumer ?? `${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`;
    this.stream = new NotifierStream(
      options.store.redis,
      options.reader,
      options.store.keys.events(),
      consumer,
    );
    this.signingKey = options.config.signingSecret
      ? decodeSigningSecret(options.config.signingSecret)
      : undefined;
  }

  /** Without Redis it starts anyway and keeps trying: the group is made once Redis answers. */
  async start(): Promise<void> {
    await this.stream
      .ensureGroup()
      .catch((err) => this.warn("could not create the notifier's consumer group yet", err));
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
      { consumer: this.stream.consumer, signed: this.signingKey !== undefined },
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
    this.stream.disconnect();
    await this.readLoop?.catch(() => undefined);
    await Promise.allSettled([...this.attempts]);
    for (const delivery of this.held.values()) clearTimeout(delivery.timer);
    const ids = [...this.held.keys()];
    this.held.clear();
    if (ids.length > 0) {
      await this.stream
        .claim(ids, this.config.reclaimAfterMs * 10)
        .catch((err) =>
          this.warn(
            "could not hand webhook deliveries over; another notifier takes them after reclaim_after",
            err,
          ),
        );
    }
  }

  private async read(): Promise<void> {
    while (!this.stopping) {
      if (this.held.size >= MAX_HELD || this.ready.length >= this.config.concurrency * 4) {
        await new Promise<void>((resolve) => (this.roomWaiter = resolve));
        this.roomWaiter = undefined;
        continue;
      }
      let entries: StreamEntry[];
      try {
        entries = await this.stream.read(READ_COUNT, READ_BLOCK_MS);
      } catch (err) {
        if (this.stopping) return;
        if (isNoGroup(err)) await this.stream.ensureGroup().catch(() => undefined);
        else this.warn("reading the events stream failed; retrying", err);
        await sleep(1000);
        continue;
      }
      // Entries it could not take stay pending in the group; its own reclaim takes them again later.
      if (entries.length > 0)
        await this.take(entries).catch((err) => this.warn("handling events failed", err));
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
        const target = event && webhookRecord(event);
        if (!event || !target) {
          done.push(entryId);
          return;
        }
        const record =
          target.kind === "job" ? await this.store.getJob(target.id) : await this.store.getBatch(target.id);
        const decision = decideEvent(event, record, Date.now());
        if ("deliver" in decision) {
          const { deliver } = decision;
          this.schedule({ ...deliver, log: this.logger.child(deliver.context) });
          return;
        }
        if (decision.warn) this.logger.child(decision.context).warn(decision.ack);
        done.push(entryId);
      }),
    );
    await this.stream.ack(done);
  }

  private schedule(delivery: Held): void {
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

  /** Starts the ready deliveries there is room for (delivery.ts pickReady). */
  private pump(): void {
    if (this.stopping) return;
    for (const delivery of pickReady(this.ready, this.inFlight, this.inFlightByOrigin, this.config)) {
      this.ready.splice(this.ready.indexOf(delivery), 1);
      const attempt = this.attempt(delivery).finally(() => this.attempts.delete(attempt));
      this.attempts.add(attempt);
    }
  }

  private async attempt(delivery: Held): Promise<void> {
    this.inFlight++;
    this.inFlightByOrigin.set(delivery.origin, (this.inFlightByOrigin.get(delivery.origin) ?? 0) + 1);
    try {
      const response = await this.client.post({
        url: delivery.url,
        body: delivery.body,
        headers: webhookHeaders(delivery, this.signingKey, Math.floor(Date.now() / 1000)),
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

  /** Records the attempt as delivery.ts judges it (acknowledging a final one), then retries or lets go. */
  private async settle(delivery: Held, response: WebhookResponse): Promise<void> {
    const settled = decideAttempt(delivery, response, this.config, Date.now());
    const { attempt, result, summary, statusCode, nextAttemptAt } = settled;
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
    const context = {
      attempt,
      result,
      outcome: summary,
      target: delivery.origin,
      ...(nextAttemptAt !== undefined ? { next_attempt_at: new Date(nextAttemptAt).toISOString() } : {}),
    };
    delivery.log[settled.log.level](context, settled.log.message);
    if (nextAttemptAt !== undefined) {
      delivery.attempts = attempt;
      delivery.dueAt = nextAttemptAt;
      if (!this.stopping) this.schedule(delivery);
      return;
    }
    this.held.delete(delivery.entryId);
  }

  /** Keeps what this notifier holds from looking abandoned (resets the entries' idle time). */
  private async heartbeat(): Promise<void> {
    const ids = [...this.held.keys()];
    if (ids.length > 0) await this.stream.claim(ids);
  }

  /** Takes over deliveries of notifiers that stopped heartbeating, and forgets long-gone consumers. */
  private async reclaim(): Promise<void> {
    if (this.stopping) return;
    let cursor = "0-0";
    do {
      if (this.held.size >= MAX_HELD) return;
      const claimed = await this.stream.autoclaim(this.config.reclaimAfterMs, cursor, READ_COUNT);
      cursor = claimed.cursor;
      const entries = claimed.entries.filter(([id]) => !this.held.has(id));
      if (claimed.trimmed > 0) {
        this.logger.warn(
          { events: claimed.trimmed },
          "events were trimmed from the stream before their webhooks were delivered (raise limits.events_max_len)",
        );
      }
      if (entries.length > 0) {
        this.logger.info({ events: entries.length }, "taking over webhook deliveries of a stopped notifier");
        await this.take(entries);
      }
    } while (cursor !== "0-0" && !this.stopping);
    await this.stream.forgetGoneConsumers(FORGET_CONSUMER_AFTER_MS);
  }

  private warn(message: string, err: unknown, log: Logger = this.logger): void {
    log.warn({ err: err instanceof Error ? err.message : String(err) }, message);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
