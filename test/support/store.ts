// Shared helpers for tests of the store and of what is built on it: job specs, a JobStore on a
// fresh key prefix (so tests sharing one redis-server never see each other's keys), a pub/sub
// collector for a job's channel, and readers for the keys the store maintains.
import { randomUUID } from "node:crypto";
import { after, before, beforeEach } from "node:test";
import { Redis } from "ioredis";
import type { JobSpec } from "../../core/jobs/spec.js";
import type { JobType } from "../../core/jobs/types.js";
import { fieldsOf } from "../../core/store/events.js";
import { JobStore, type StoreOptions } from "../../core/store/store.js";
import { startTestRedis, type TestRedis } from "./redis.js";

/** A minimal valid spec of a type; destination fields are always set so every type accepts it. */
export function makeSpec(type: JobType = "image_colors", overrides: Partial<JobSpec> = {}): JobSpec {
  return {
    type,
    source_bucket: "test-bucket",
    source_key: `in/${randomUUID()}.jpg`,
    dest_bucket: "test-bucket",
    dest_key: `out/${randomUUID()}.jpg`,
    parameters: {},
    ...overrides,
  };
}

/** A key prefix no other test uses. */
export function uniquePrefix(label = "test"): string {
  return `${label}-${randomUUID().slice(0, 8)}`;
}

const opened = new Set<Redis>();

/** Opens a connection that closeStores() will close. */
export function connect(redisUrl: string): Redis {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 2, lazyConnect: false });
  opened.add(redis);
  return redis;
}

/** A JobStore on its own connection and a fresh key prefix (unless options.keyPrefix is given). */
export function createStore(redisUrl: string, options: Partial<StoreOptions> = {}): JobStore {
  return new JobStore(connect(redisUrl), {
    keyPrefix: options.keyPrefix ?? uniquePrefix(),
    retentionMs: options.retentionMs ?? 7 * 24 * 3600 * 1000,
    eventsMaxLen: options.eventsMaxLen ?? 10_000,
    // The configuration's default budget; a test that needs a store without one says maxAttempts: undefined.
    maxAttempts: "maxAttempts" in options ? options.maxAttempts : 3,
    ...(options.clients ? { clients: options.clients } : {}),
  });
}

/**
 * The setup of a store test file: one redis-server for the file, a store on a fresh key prefix before
 * each test (handed to `use`, e.g. to set the file's `store`; it may prepare more), and everything
 * closed after the last test.
 */
export function storeSuite(
  use: (store: JobStore) => unknown,
  options: Partial<StoreOptions> = {},
): { readonly url: string } {
  let server: TestRedis | undefined;
  before(async () => {
    server = await startTestRedis();
  });
  after(async () => {
    await closeStores();
    await server?.stop();
  });
  beforeEach(async () => {
    await use(createStore(server!.url, options));
  });
  return {
    get url() {
      return server!.url;
    },
  };
}

/** Another JobStore on the same key prefix as `store` but its own connection (concurrency tests). */
export function sameStore(redisUrl: string, store: JobStore, options: Partial<StoreOptions> = {}): JobStore {
  return createStore(redisUrl, { ...options, keyPrefix: keyPrefixOf(store) });
}

/** The configured prefix ("x") from the store's key prefix ("{x}:"). */
export function keyPrefixOf(store: JobStore): string {
  return store.keys.prefix.slice(1, -2);
}

/** Closes every connection opened by connect(), createStore() and collectChannel(). */
export async function closeStores(): Promise<void> {
  const all = [...opened];
  opened.clear();
  await Promise.all(all.map((r) => r.quit().catch(() => r.disconnect())));
}

/** Claims the next job of a type and starts it; fails the test if the queue is empty. */
export async function claimAndStart(store: JobStore, type: JobType, leaseMs = 60_000): Promise<string> {
  const id = await store.claim(type, leaseMs, "test-owner");
  if (!id) throw new Error(`queue ${type} is empty`);
  if (!(await store.start(id, leaseMs))) throw new Error(`job ${id} did not start`);
  return id;
}

/** Claims a given job: claims from its queue until it comes out (others claimed meanwhile are requeued). */
export async function claimJob(store: JobStore, type: JobType, id: string, leaseMs = 60_000): Promise<void> {
  const others: string[] = [];
  try {
    for (;;) {
      const got = await store.claim(type, leaseMs, "test-owner");
      if (got === null) throw new Error(`job ${id} is not in queue ${type}`);
      if (got === id) return;
      others.push(got);
    }
  } finally {
    for (const other of others.reverse()) await store.requeueJob(other, "test");
  }
}

/** A message published on a job's channel. */
export interface ChannelMessage {
  seq: number;
  event: string;
  data: Record<string, unknown>;
}

export interface ChannelCollector {
  messages: ChannelMessage[];
  /** Resolves once at least `count` messages arrived; rejects after timeoutMs. */
  waitFor(count: number, timeoutMs?: number): Promise<ChannelMessage[]>;
  close(): Promise<void>;
}

/** Subscribes to a channel on a second connection and gathers its (JSON) messages. */
export async function collectChannel(redis: Redis, channel: string): Promise<ChannelCollector> {
  const sub = redis.duplicate();
  opened.add(sub);
  const messages: ChannelMessage[] = [];
  const waiters: Array<() => void> = [];
  sub.on("message", (ch: string, text: string) => {
    if (ch !== channel) return;
    messages.push(JSON.parse(text) as ChannelMessage);
    for (const wake of waiters.splice(0)) wake();
  });
  await sub.subscribe(channel);
  return {
    messages,
    async waitFor(count, timeoutMs = 2000) {
      const deadline = Date.now() + timeoutMs;
      while (messages.length < count) {
        const left = deadline - Date.now();
        if (left <= 0) {
          throw new Error(`expected ${count} messages on ${channel}, got ${messages.length}`);
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return messages;
    },
    async close() {
      opened.delete(sub);
      await sub.quit().catch(() => sub.disconnect());
    },
  };
}

/** An entry of the events stream, its fields as an object. */
export interface StreamEvent {
  id: string;
  event: string;
  fields: Record<string, string>;
}

/** Every entry of the store's events stream, oldest first (optionally only one kind of event). */
export async function streamEvents(store: JobStore, event?: string): Promise<StreamEvent[]> {
  const entries = await store.redis.xrange(store.keys.events(), "-", "+");
  const out = entries.map(([id, flat]) => {
    const fields = fieldsOf(flat);
    return { id, event: fields.event ?? "", fields };
  });
  return event ? out.filter((e) => e.event === event) : out;
}

/** The raw hash of a job (every field, including the internal ones), {} when absent. */
export async function rawJob(store: JobStore, id: string): Promise<Record<string, string>> {
  return store.redis.hgetall(store.keys.job(id));
}

/** The raw counters hash of a type, as numbers (not clamped at zero like JobStore.counters()). */
export async function rawStats(store: JobStore, type: JobType): Promise<Record<string, number>> {
  const hash = await store.redis.hgetall(store.keys.stats(type));
  return Object.fromEntries(Object.entries(hash).map(([k, v]) => [k, Number(v)]));
}

/** Every key of the store's prefix. */
export async function storeKeys(store: JobStore): Promise<string[]> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await store.redis.scan(
      cursor,
      "MATCH",
      `${escapeGlob(store.keys.prefix)}*`,
      "COUNT",
      1000,
    );
    keys.push(...batch);
    cursor = next;
  } while (cursor !== "0");
  return keys.sort();
}

function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, "\\$&");
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const ISO_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
