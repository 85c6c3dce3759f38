// The notifiers' consumer group on the store's events stream, and every Redis stream command the
// notifier sends: reading new entries (XREADGROUP on a connection of its own, which it blocks),
// acknowledging entries that need no delivery (XACK), keeping its own pending entries fresh and
// handing them over (XCLAIM), taking over those of a notifier that stopped (XAUTOCLAIM), and
// forgetting consumers long gone (XINFO CONSUMERS, XGROUP DELCONSUMER). A delivery's final outcome is
// acknowledged by the store's webhook script, in the same step that records it.
import type { Redis } from "ioredis";
import { fieldsOf, type StreamEntry, type StreamReply } from "../../core/store/events.js";

/** The consumer group of the events stream that webhook notifiers share. */
export const NOTIFIER_GROUP = "notifier";

/** Entries XCLAIM takes per call. */
const CLAIM_CHUNK = 500;

export class NotifierStream {
  constructor(
    /** The store's connection. */
    private readonly redis: Redis,
    /** A connection of its own, for XREADGROUP's blocking reads. */
    private readonly reader: Redis,
    private readonly key: string,
    readonly consumer: string,
  ) {}

  /** Creates the group, reading from the stream's start: events recorded before any notifier ran are kept. */
  async ensureGroup(): Promise<void> {
    try {
      await this.redis.xgroup("CREATE", this.key, NOTIFIER_GROUP, "0", "MKSTREAM");
    } catch (err) {
      if (!/BUSYGROUP/.test((err as Error).message)) throw err;
    }
  }

  /** Up to `count` new entries for this consumer, waiting up to `blockMs` for one. */
  async read(count: number, blockMs: number): Promise<StreamEntry[]> {
    const reply = (await this.reader.xreadgroup(
      "GROUP",
      NOTIFIER_GROUP,
      this.consumer,
      "COUNT",
      count,
      "BLOCK",
      blockMs,
      "STREAMS",
      this.key,
      ">",
    )) as StreamReply;
    return reply?.[0]?.[1] ?? [];
  }

  /** Ends the blocking read (the reader's connection is closed). */
  disconnect(): void {
    this.reader.disconnect();
  }

  async ack(ids: string[]): Promise<void> {
    if (ids.length > 0) await this.redis.xack(this.key, NOTIFIER_GROUP, ...ids);
  }

  /**
   * Takes `ids` for this consumer: resets their idle time (a heartbeat of what it holds), or with
   * `idleMs` makes them look idle that long (a hand-over: due for any notifier's reclaim at once).
   */
  async claim(ids: string[], idleMs?: number): Promise<void> {
    const idle = idleMs !== undefined ? ["IDLE", idleMs] : [];
    for (let i = 0; i < ids.length; i += CLAIM_CHUNK) {
      const chunk = ids.slice(i, i + CLAIM_CHUNK);
      await this.redis.call(
        "XCLAIM",
        this.key,
        NOTIFIER_GROUP,
        this.consumer,
        0,
        ...chunk,
        ...idle,
        "JUSTID",
      );
    }
  }

  /**
   * Entries pending with other consumers for at least `minIdleMs`, from `cursor`: taken over by this
   * one. `trimmed`: how many of them the stream no longer has (trimmed before their delivery).
   */
  async autoclaim(
    minIdleMs: number,
    cursor: string,
    count: number,
  ): Promise<{ cursor: string; entries: StreamEntry[]; trimmed: number }> {
    const reply = (await this.redis.call(
      "XAUTOCLAIM",
      this.key,
      NOTIFIER_GROUP,
      this.consumer,
      minIdleMs,
      cursor,
      "COUNT",
      count,
    )) as [string, StreamEntry[], string[]?];
    return { cursor: reply[0], entries: reply[1], trimmed: reply[2]?.length ?? 0 };
  }

  /** Removes the consumers with nothing pending idle longer than `afterMs` (notifiers that are gone). */
  async forgetGoneConsumers(afterMs: number): Promise<void> {
    const consumers = (await this.redis.call("XINFO", "CONSUMERS", this.key, NOTIFIER_GROUP)) as unknown[][];
    for (const flat of consumers) {
      const info = fieldsOf(flat);
      if (info.name !== this.consumer && Number(info.pending) === 0 && Number(info.idle) > afterMs) {
        await this.redis.xgroup("DELCONSUMER", this.key, NOTIFIER_GROUP, info.name!);
      }
    }
  }
}

/** A read that failed because the group is gone (the stream was deleted): make it again. */
export function isNoGroup(err: unknown): boolean {
  return /NOGROUP/.test((err as Error).message);
}
