import type { Redis } from "ioredis";
import type { Logger } from "../core/logger.js";

/** What @fastify/rate-limit asks of a store. */
type Callback = (err: Error | null, result: { current: number; ttl: number }) => void;

interface Window {
  /** Which window (epoch milliseconds / window length). */
  index: number;
  lengthMs: number;
  /** The shared count as Redis last reported it (every replica's requests, ours included). */
  known: number;
  /** Counted here, being added to Redis by the flush under way. */
  sending: number;
  /** Counted here since the last flush started. */
  pending: number;
}

/**
 * Fixed-window request counts shared by every API replica through Redis, without a Redis round trip
 * per request: a request is counted and decided here, against the shared count as of the last sync
 * plus what this replica counted since; every `syncIntervalMs` (while there is traffic) one
 * pipeline adds each key's new count to Redis (INCRBY on `<prefix>ratelimit:<key>:<window>`, which
 * expires after its window) and reads back the total. A replica learns the others' counts of a key
 * each time it sends its own, so it decides at most one interval's requests of that key on an old
 * total: a key is over-admitted by at most what the replicas admitted in one interval.
 *
 * When Redis cannot be reached the counts stay local (every replica limits on its own) and a warning
 * is logged once a minute: the limiter never fails a request because the store is down.
 *
 * It is a store for @fastify/rate-limit (its `store` option), which constructs it with its own
 * parameters; rateLimitStore() binds the Redis connection and settings.
 */
export class SharedWindowStore {
  private readonly windows = new Map<string, Window>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private lastWarning = 0;
  private closed = false;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly syncIntervalMs: number,
    private readonly logger: Logger,
  ) {}

  incr(key: string, callback: Callback, timeWindow: number, _max?: number): void {
    const window = this.windowOf(key, timeWindow);
    window.pending += 1;
    this.schedule();
    callback(null, state(window));
  }

  read(key: string, callback: Callback, timeWindow: number): void {
    callback(null, state(this.windowOf(key, timeWindow)));
  }

  /** Routes with their own settings share the counts (there are none today). */
  child(): this {
    return this;
  }

  /** Adds what was counted here to the shared counts and learns theirs; one pipeline. */
  flush(): Promise<void> {
    this.flushing ??= this.send().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  /** Sends what is left and stops syncing. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush().catch(() => undefined);
  }

  private windowOf(key: string, lengthMs: number): Window {
    const index = Math.floor(Date.now() / lengthMs);
    let window = this.windows.get(key);
    if (!window || window.index !== index || window.lengthMs !== lengthMs) {
      window = { index, lengthMs, known: 0, sending: 0, pending: 0 };
      this.windows.set(key, window);
    }
    return window;
  }

  // Each count schedules a flush unless one is due; a count made while a flush is under way
  // schedules the next (the timer is cleared when it fires).
  private schedule(): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.syncIntervalMs);
    this.timer.unref();
  }

  private async send(): Promise<void> {
    const now = Date.now();
    const batch: Array<{ key: string; window: Window; count: number }> = [];
    for (const [key, window] of this.windows) {
      if (window.pending > 0) {
        batch.push({ key, window, count: window.pending });
        window.sending += window.pending;
        window.pending = 0;
      } else if ((window.index + 1) * window.lengthMs <= now) {
        this.windows.delete(key);
      }
    }
    if (batch.length === 0) return;
    const pipeline = this.redis.pipeline();
    for (const { key, window, count } of batch) {
      const redisKey = `${this.prefix}${key}:${window.index}`;
      pipeline.incrby(redisKey, count);
      // Kept a little past its window so that a late flush of a replica still finds it.
      pipeline.pexpire(redisKey, window.lengthMs * 2);
    }
    let results: Array<[Error | null, unknown]> | null = null;
    try {
      results = await pipeline.exec();
    } catch (err) {
      this.warn(err as Error);
    }
    batch.forEach(({ window, count }, i) => {
      window.sending -= count;
      const [err, total] = results?.[i * 2] ?? [new Error("no answer"), null];
      if (err || typeof total !== "number") {
        // Not shared this time: the count stays with this replica.
        window.known += count;
        if (results && err) this.warn(err);
      } else {
        // The shared total, which includes this replica's count; what is still being counted here
        // (pending) is added on top when requests are decided.
        window.known = Math.max(window.known + count, total);
      }
    });
  }

  private warn(err: Error): void {
    const now = Date.now();
    if (now - this.lastWarning < 60_000) return;
    this.lastWarning = now;
    this.logger.warn(
      { event: "rate_limit_unshared", err: { message: err.message } },
      "rate limit counts cannot reach Redis: each API replica limits on its own until it can",
    );
  }
}

/** A window's count (every replica's as last learned, and this one's since) and what is left of it. */
function state(window: Window): { current: number; ttl: number } {
  return {
    current: window.known + window.sending + window.pending,
    ttl: (window.index + 1) * window.lengthMs - Date.now(),
  };
}

/** The class @fastify/rate-limit constructs (its `store` option), bound to one SharedWindowStore. */
export function rateLimitStore(store: SharedWindowStore): new () => SharedWindowStore {
  return function BoundStore() {
    return store;
  } as unknown as new () => SharedWindowStore;
}
