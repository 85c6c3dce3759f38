import type { Redis } from "ioredis";
import type { Logger } from "../logger.js";
import { decodeStoreEvent, decodeStreamReply, type StoreEvent, type StreamReply } from "./events.js";
import { blockingConnection, type JobStore } from "./store.js";

const RETRY_MS = 1000;
const BLOCK_MS = 2000;

/**
 * Follows the store's events stream after `from` ("$": from now on) on a connection of its own
 * (blocking XREAD), handing each read's events to `onEvents` in order. A failed read is tried again
 * a second later; the first failure and the first read after it are logged. Returns the function that stops it.
 */
export function followEvents(
  store: JobStore,
  redis: Redis,
  options: { from: string; name: string; logger: Logger },
  onEvents: (events: StoreEvent[]) => void,
): () => Promise<void> {
  const connection = blockingConnection(redis, options.name);
  let stopping = false;
  const loop = (async () => {
    const stream = store.keys.events();
    let last = options.from;
    // A failure is told once, and its end once: not every second while Redis is down.
    let failing = false;
    while (!stopping) {
      let reply: StreamReply;
      try {
        reply = await connection.xread("COUNT", 200, "BLOCK", BLOCK_MS, "STREAMS", stream, last);
      } catch (err) {
        if (stopping) return;
        if (!failing) {
          options.logger.warn({ err: (err as Error).message }, "reading the events stream failed; retrying");
        }
        failing = true;
        await new Promise((r) => setTimeout(r, RETRY_MS));
        continue;
      }
      if (failing) options.logger.info("reading the events stream again");
      failing = false;
      const { events, lastId } = decodeStreamReply(reply);
      if (lastId) last = lastId;
      if (events.length > 0) onEvents(events);
    }
  })();
  return async () => {
    stopping = true;
    connection.disconnect();
    await loop;
  };
}

/** Orders two stream entry ids ("<ms>-<seq>"): negative when a is older. */
export function compareEntryIds(a: string, b: string): number {
  const [am = 0, as = 0] = a.split("-").map(Number);
  const [bm = 0, bs = 0] = b.split("-").map(Number);
  return am !== bm ? am - bm : as - bs;
}

/** The largest part of a stream entry id: Redis reads each of "<ms>-<seq>" as an unsigned 64-bit integer. */
const MAX_ENTRY_ID_PART = 2n ** 64n - 1n;
const LAST_ENTRY_ID = `${MAX_ENTRY_ID_PART}-${MAX_ENTRY_ID_PART}`;

/**
 * Whether a string is a stream entry id a client may resume from: "<ms>-<seq>", each part an
 * unsigned 64-bit integer (Redis refuses a larger one with an error).
 */
export function isEntryId(value: string): boolean {
  const parts = /^(\d{1,20})-(\d{1,20})$/.exec(value);
  return !!parts && BigInt(parts[1]!) <= MAX_ENTRY_ID_PART && BigInt(parts[2]!) <= MAX_ENTRY_ID_PART;
}

export type StoreEventListener = (event: StoreEvent) => void;

/**
 * Fans the events stream out to any number of listeners (the API's GET /events streams) through one
 * follower, which runs while at least one listener is subscribed.
 */
export class StoreEventHub {
  private readonly listeners = new Set<StoreEventListener>();
  /** The running follower: resolves once it reads from a known entry (its start is not "$"). */
  private following: Promise<() => Promise<void>> | undefined;

  constructor(
    private readonly store: JobStore,
    private readonly redis: Redis,
    private readonly logger: Logger,
  ) {}

  /**
   * Calls `listener` with every event recorded once this resolves, until the returned function is
   * called. With `after` (a stream entry id), the events recorded since it are told first (up to
   * `limit`), none twice and in order.
   */
  async subscribe(listener: StoreEventListener, after?: { id: string; limit: number }): Promise<() => void> {
    let caughtUp = !after;
    const held: StoreEvent[] = [];
    let lastTold = after?.id;
    const tell = (event: StoreEvent) => {
      if (lastTold && compareEntryIds(event.entryId, lastTold) <= 0) return;
      lastTold = event.entryId;
      listener(event);
    };
    const wrapped = (event: StoreEvent) => (caughtUp ? tell(event) : held.push(event));
    this.listeners.add(wrapped);
    const unsubscribe = () => {
      this.listeners.delete(wrapped);
      if (this.listeners.size === 0) void this.stop();
    };
    try {
      await (this.following ??= this.start());
      if (after) {
        for (const event of await this.since(after.id, after.limit)) tell(event);
        caughtUp = true;
        for (const event of held.splice(0)) tell(event);
      }
    } catch (err) {
      unsubscribe();
      throw err;
    }
    return unsubscribe;
  }

  get size(): number {
    return this.listeners.size;
  }

  /** Stops following (the API is stopping). */
  async close(): Promise<void> {
    this.listeners.clear();
    await this.stop();
  }

  /** Follows from the stream's last entry as it is now, so that nothing recorded later is missed. */
  private async start(): Promise<() => Promise<void>> {
    try {
      const [top] = (await this.redis.xrevrange(this.store.keys.events(), "+", "-", "COUNT", 1)) as Array<
        [string, string[]]
      >;
      return followEvents(
        this.store,
        this.redis,
        { from: top?.[0] ?? "0-0", name: "media-service-api-events", logger: this.logger },
        (events) => {
          for (const event of events) for (const l of [...this.listeners]) l(event);
        },
      );
    } catch (err) {
      this.following = undefined;
      throw err;
    }
  }

  private async stop(): Promise<void> {
    const following = this.following;
    this.following = undefined;
    if (following) await (await following.catch(() => async () => undefined))();
  }

  private async since(id: string, limit: number): Promise<StoreEvent[]> {
    // Nothing comes after the last id there can be (and Redis refuses an interval that starts past it).
    if (id === LAST_ENTRY_ID) return [];
    const entries = (await this.redis.xrange(
      this.store.keys.events(),
      `(${id}`,
      "+",
      "COUNT",
      limit,
    )) as Array<[string, string[]]>;
    return entries.flatMap((entry) => decodeStoreEvent(entry) ?? []);
  }
}
