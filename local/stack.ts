import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { startEmbeddedS3 } from "@media-service/s3-server";
import { isLoopback, isUnspecified } from "../core/config/exposure.js";
import type { Config } from "../core/config/load.js";
import type { Logger } from "../core/logger.js";
import { embeddedCredentials, LOCAL_BUCKET } from "./credentials.js";
import { startLocalRedis } from "./redis.js";

export interface LocalStack {
  /** The configuration with the local services filled in. */
  config: Config;
  /** What was started, for the banner: Redis's address (no password), the object store's endpoint. */
  started: { redis?: string; s3?: string };
  stop(): Promise<void>;
}

/**
 * Why the embedded store must not listen as configured, or undefined: off loopback, the well-known
 * default credentials would open it to anyone who can reach it.
 */
export function embeddedStoreExposureProblem(config: Config): string | undefined {
  const { endpoint, embeddedHost, embeddedPort } = config.storage;
  if (endpoint || isLoopback(embeddedHost) || !embeddedCredentials(config.storage).wellKnown)
    return undefined;
  return (
    `refusing to serve the embedded object store on ${embeddedHost}:${embeddedPort} with its default ` +
    `credentials: set S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY to credentials of your own, or keep it ` +
    `on loopback (EMBEDDED_S3_HOST=127.0.0.1)`
  );
}

/**
 * What `media-service start` provides by itself (`media-service start` checks
 * embeddedStoreExposureProblem before it starts anything): a redis-server (loopback, a generated password) when
 * REDIS_URL is unset and the embedded S3-protocol store (storage.embedded_host, loopback by default)
 * when S3_ENDPOINT is unset, both under the data dir.
 */
export async function startLocalStack(config: Config, logger: Logger): Promise<LocalStack> {
  const dataDir = resolve(config.dataDir);
  mkdirSync(dataDir, { recursive: true });
  const stops: Array<() => Promise<void>> = [];
  const started: LocalStack["started"] = {};
  const next: Config = structuredClone(config);
  // Webhook receivers of a local stack are usually local too; an explicit setting wins.
  next.webhooks.allowPrivate ??= true;
  try {
    if (!config.redis.url) {
      const redis = await startLocalRedis({ dataDir, logger: logger.child({ component: "redis" }) });
      stops.push(() => redis.stop());
      next.redis.url = redis.url;
      started.redis = `127.0.0.1:${redis.port}`;
    }
    if (!config.storage.endpoint) {
      const s3 = await startObjectStore(config, logger);
      stops.push(() => s3.close());
      next.storage = {
        ...next.storage,
        endpoint: s3.endpoint,
        accessKeyId: s3.accessKeyId,
        secretAccessKey: s3.secretAccessKey,
        forcePathStyle: true,
      };
      started.s3 = s3.endpoint;
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

/**
 * The embedded S3-protocol store as configured (storage.embedded_host / embedded_port, data under
 * the data dir, the local bucket ready): for `start`, and alone for `object-store`. Callers check
 * embeddedStoreExposureProblem first. `endpoint` is where clients on this machine reach it.
 */
export async function startObjectStore(
  config: Config,
  logger: Logger,
): Promise<{ endpoint: string; accessKeyId: string; secretAccessKey: string; close(): Promise<void> }> {
  const dataDir = resolve(config.dataDir);
  const { accessKeyId, secretAccessKey } = embeddedCredentials(config.storage);
  const s3 = await startEmbeddedS3({
    host: config.storage.embeddedHost,
    port: config.storage.embeddedPort,
    dataDir: resolve(dataDir, "s3"),
    accessKeyId,
    secretAccessKey,
    region: config.storage.region,
    buckets: [LOCAL_BUCKET],
    logger,
  });
  // Listening on every interface (a container's published port): clients here use loopback.
  const endpoint = isUnspecified(config.storage.embeddedHost) ? `http://127.0.0.1:${s3.port}` : s3.url;
  return { endpoint, accessKeyId, secretAccessKey, close: () => s3.close() };
}
