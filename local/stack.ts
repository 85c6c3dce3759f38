import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import type { Config } from "../core/config/load.js";
import type { Logger } from "../core/logger.js";
import { DEFAULT_EMBEDDED_ACCESS_KEY, DEFAULT_EMBEDDED_SECRET_KEY } from "./credentials.js";
import { startLocalRedis } from "./redis.js";
import { startEmbeddedS3 } from "./s3/server.js";

export interface LocalStack {
  /** The configuration with the local services filled in. */
  config: Config;
  /** What was started, for the banner. */
  started: { redis?: string; s3?: string };
  stop(): Promise<void>;
}

/**
 * What `media-service start` provides by itself: a redis-server when REDIS_URL is unset and the
 * embedded S3-protocol store when S3_ENDPOINT is unset, both on 127.0.0.1 under the data dir.
 */
export async function startLocalStack(config: Config, logger: Logger): Promise<LocalStack> {
  const dataDir = resolve(config.dataDir);
  mkdirSync(dataDir, { recursive: true });
  const stops: Array<() => Promise<void>> = [];
  const started: LocalStack["started"] = {};
  const next: Config = structuredClone(config);
  // Webhook receivers of a local stack are usually local too (DESIGN.md); an explicit setting wins.
  next.webhooks.allowPrivate ??= true;
  try {
    if (!config.redis.url) {
      const redis = await startLocalRedis({ dataDir, logger: logger.child({ component: "redis" }) });
      stops.push(() => redis.stop());
      next.redis.url = redis.url;
      started.redis = redis.url;
    }
    if (!config.storage.endpoint) {
      const accessKeyId = config.storage.accessKeyId ?? DEFAULT_EMBEDDED_ACCESS_KEY;
      const secretAccessKey = config.storage.secretAccessKey ?? DEFAULT_EMBEDDED_SECRET_KEY;
      const s3 = await startEmbeddedS3({
        host: "127.0.0.1",
        port: config.storage.embeddedPort,
        dataDir: resolve(dataDir, "s3"),
        accessKeyId,
        secretAccessKey,
        region: config.storage.region,
        logger,
      });
      stops.push(() => s3.close());
      next.storage = {
        ...next.storage,
        endpoint: s3.url,
        accessKeyId,
        secretAccessKey,
        forcePathStyle: true,
      };
      started.s3 = s3.url;
    }
  } catch (err) {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    throw err;
  }
  return {
    config: next,
    started,
    stop: async () => {
      for (const stop of stops.reverse()) await stop().catch(() => undefined);
    },
  };
}
