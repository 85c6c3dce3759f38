import type { Redis } from "ioredis";
import type { S3Client } from "@aws-sdk/client-s3";
import { aiDependency } from "./ai/health.js";
import type { Config } from "./config/load.js";
import { DependencyChecker } from "./health/dependencies.js";
import type { Logger } from "./logger.js";
import { createS3Client, probeStorage } from "./storage/s3.js";
import { StoreEventHub } from "./store/event-follower.js";
import { JobEventHub } from "./store/job-events.js";
import { connectRedis, JobStore } from "./store/store.js";

/** The connections every process shares: the store, its pub/sub, the object store, health probes. */
export interface CoreServices {
  redis: Redis;
  /** The connection in subscriber mode (job events, queue notifications). */
  subscriber: Redis;
  store: JobStore;
  events: JobEventHub;
  /** Every job's changes from the events stream (GET /events), followed while someone listens. */
  storeEvents: StoreEventHub;
  s3: S3Client;
  health: DependencyChecker;
  /** Resolves once both Redis connections are ready, or rejects after `timeoutMs`. */
  ready(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

function whenReady(client: Redis, timeoutMs: number): Promise<void> {
  if (client.status === "ready") return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      client.off("ready", onReady);
      reject(new Error(`redis not reachable within ${timeoutMs} ms`));
    }, timeoutMs);
    const onReady = () => {
      clearTimeout(timer);
      resolve();
    };
    client.once("ready", onReady);
  });
}

export function openCoreServices(config: Config, logger: Logger, name: string): CoreServices {
  if (!config.redis.url) throw new Error("redis.url (REDIS_URL) is not set");
  const connect = (suffix: string, failFast: boolean) => {
    const client = connectRedis(config.redis.url!, {
      connectTimeoutMs: config.redis.connectTimeoutMs,
      socketTimeoutMs: config.redis.socketTimeoutMs,
      failFast,
      name: `media-service-${name}${suffix}`,
    });
    let down = false;
    client.on("error", (err: Error) => {
      if (!down) logger.error({ err: err.message, connection: `${name}${suffix}` }, "redis connection error");
      down = true;
    });
    client.on("ready", () => {
      if (down) logger.info({ connection: `${name}${suffix}` }, "redis connection restored");
      down = false;
    });
    return client;
  };
  // Requests fail at once while Redis is down (a 503 the client can retry) rather than queueing.
  const redis = connect("", true);
  const subscriber = connect("-sub", false);
  const store = new JobStore(redis, {
    keyPrefix: config.redis.keyPrefix,
    retentionMs: config.limits.retentionMs,
    eventsMaxLen: config.limits.eventsMaxLen,
    maxAttempts: config.executor.maxAttempts,
    clients: new Map(config.server.clients.map((client) => [client.name, client])),
  });
  const events = new JobEventHub(subscriber, store.keys);
  const storeEvents = new StoreEventHub(store, redis, logger);
  const s3 = createS3Client(config.storage);
  const health = new DependencyChecker(
    [
      { name: "queue_store", critical: true, probe: async () => void (await redis.ping()) },
      { name: "object_store", critical: true, probe: (signal) => probeStorage(s3, config.storage, signal) },
      aiDependency(config.ai, config.limits.healthCheckTimeoutMs),
    ],
    config.limits.healthCheckTimeoutMs,
  );
  return {
    redis,
    subscriber,
    store,
    events,
    storeEvents,
    s3,
    health,
    ready: async (timeoutMs) => {
      await Promise.all([whenReady(redis, timeoutMs), whenReady(subscriber, timeoutMs)]);
    },
    close: async () => {
      await storeEvents.close();
      s3.destroy();
      await Promise.allSettled([redis.quit(), subscriber.quit()]);
      redis.disconnect();
      subscriber.disconnect();
    },
  };
}
