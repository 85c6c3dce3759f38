// What the bench servers share: their own redis-server and embedded S3-protocol store, the
// configuration pointing at them, core services with a production-level logger writing to
// /dev/null, and the real API listening on a free port.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmbeddedS3 } from "@media-service/s3-server";
import { buildApi, type Api } from "../api/server.js";
import { loadConfig, type Config } from "../core/config/load.js";
import { createLogger, type Logger } from "../core/logger.js";
import { createMetricsRegistry } from "../core/metrics.js";
import { openCoreServices, type CoreServices } from "../core/services.js";
import { spawnRedisServer } from "../local/redis.js";

export const BENCH_API_KEY = "bench-key-0123456789abcdef0123456789abcdef0123456789abcdef01234567";
const ACCESS_KEY = "bench";
const SECRET_KEY = "bench-secret";

export interface BenchStack {
  config: Config;
  services: CoreServices;
  logger: Logger;
  dataDir: string;
  redisUrl: string;
  /** Stops everything started here (the API of listenApi() is closed by its caller). */
  stop(): Promise<void>;
}

/** `overrides` are configuration values (snake_case, as in the YAML file) over the bench defaults. */
export async function startBenchStack(
  label: string,
  overrides: (dataDir: string) => Record<string, unknown> = () => ({}),
): Promise<BenchStack> {
  const redis = await spawnRedisServer({ args: ["--save", "", "--appendonly", "no"] });
  const dataDir = await mkdtemp(join(tmpdir(), `media-service-bench-${label}-`));
  const s3 = await startEmbeddedS3({
    port: 0,
    dataDir: join(dataDir, "s3"),
    accessKeyId: ACCESS_KEY,
    secretAccessKey: SECRET_KEY,
  });
  const extra = overrides(dataDir);
  const config = loadConfig({
    env: {},
    overrides: {
      ...extra,
      server: { host: "127.0.0.1", port: 0, api_keys: [BENCH_API_KEY], ...(extra.server as object) },
      redis: { url: redis.url, ...(extra.redis as object) },
      storage: {
        endpoint: s3.url,
        access_key_id: ACCESS_KEY,
        secret_access_key: SECRET_KEY,
        force_path_style: true,
        ...(extra.storage as object),
      },
      data_dir: dataDir,
    },
  });
  // The production log level (info): every request logs as it would in a deployment, to /dev/null.
  const logger = createLogger({ level: "info", format: "json", destination: "/dev/null" });
  const services = openCoreServices(config, logger, "bench");
  await services.ready(10_000);
  return {
    config,
    services,
    logger,
    dataDir,
    redisUrl: redis.url,
    stop: async () => {
      await services.close();
      await s3.close();
      await redis.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The real API of the stack (or of another configuration over its services) on a free port of 127.0.0.1. */
export async function listenApi(
  stack: BenchStack,
  config: Config = stack.config,
): Promise<{ api: Api; port: number }> {
  const { services, logger } = stack;
  const api = await buildApi({ ...services, config, metrics: createMetricsRegistry(services.store) }, logger);
  await api.app.listen({ host: "127.0.0.1", port: 0 });
  return { api, port: (api.app.server.address() as { port: number }).port };
}
