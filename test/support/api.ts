// A whole API process for tests, on real parts: its own redis-server, the embedded S3-protocol
// store, and the API listening on a free port. Each stack has its own key prefix and data dir.
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import { pino } from "pino";
import { buildApi, type Api } from "../../api/server.js";
import { LocalExecutor } from "../../controller/local-executor.js";
import { loadConfig, type Config } from "../../core/config/load.js";
import type { Logger } from "../../core/logger.js";
import { createMetricsRegistry } from "../../core/metrics.js";
import { openCoreServices, type CoreServices } from "../../core/services.js";
import { createS3Client } from "../../core/storage/s3.js";
import { startEmbeddedS3, type EmbeddedS3 } from "../../local/s3/server.js";
import { startNotifier } from "../../controller/webhooks/start.js";
import { startTestRedis, type TestRedis } from "./redis.js";

export interface TestStack {
  baseUrl: string;
  config: Config;
  services: CoreServices;
  api: Api;
  redis: TestRedis;
  s3: EmbeddedS3;
  /** Present when started with `executor: true`. */
  executor?: LocalExecutor;
  /** Present when started with `notifier: true`; restartable. */
  notifier?: { stop(): Promise<void> };
  startNotifier(): Promise<{ stop(): Promise<void> }>;
  /** Every log line the API wrote, parsed. */
  logs: Array<Record<string, unknown>>;
  /** fetch() against the API with the stack's first API key (if any) unless headers say otherwise. */
  request(path: string, init?: RequestInit & { json?: unknown; key?: string | null }): Promise<Response>;
  close(): Promise<void>;
}

export interface TestStackOptions {
  apiKeys?: string[];
  /** Raw configuration overrides, as in the YAML file (snake_case). */
  config?: Record<string, unknown>;
  /** Share an existing redis-server instead of starting one. */
  redis?: TestRedis;
  /** Run the local executor too (runner processes from cli.ts), as `media-service start` does. */
  executor?: boolean;
  /** Run the webhook notifier too, as every controller does. */
  notifier?: boolean;
}

export const TEST_ACCESS_KEY = "test-access-key";
export const TEST_SECRET_KEY = "test-secret-key";
export const TEST_BUCKET = "media-test";

export async function startTestStack(options: TestStackOptions = {}): Promise<TestStack> {
  const ownsRedis = !options.redis;
  const redis = options.redis ?? (await startTestRedis());
  const dataDir = await mkdtemp(join(tmpdir(), "media-service-test-"));
  const s3 = await startEmbeddedS3({
    host: "127.0.0.1",
    port: 0,
    dataDir: join(dataDir, "s3"),
    accessKeyId: TEST_ACCESS_KEY,
    secretAccessKey: TEST_SECRET_KEY,
  });
  const config = loadConfig({
    env: {},
    overrides: mergeDeep(
      {
        server: { port: 0, host: "127.0.0.1", api_keys: options.apiKeys ?? [], mode: "test" },
        redis: { url: redis.url, key_prefix: `t-${randomUUID().slice(0, 8)}` },
        storage: {
          endpoint: s3.url,
          access_key_id: TEST_ACCESS_KEY,
          secret_access_key: TEST_SECRET_KEY,
          force_path_style: true,
        },
        data_dir: dataDir,
        executor: { scratch_dir: join(dataDir, "scratch"), local_concurrency: 2 },
        log_level: "debug",
      },
      options.config ?? {},
    ),
  });
  const logs: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split("\n"))
        if (line) logs.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const logger = pino({ level: "debug" }, sink) as unknown as Logger;
  // The bucket is made on the embedded store itself, whatever endpoint the stack is configured with.
  const admin = createS3Client({ ...config.storage, endpoint: s3.url });
  try {
    await admin.send(new CreateBucketCommand({ Bucket: TEST_BUCKET }));
  } finally {
    admin.destroy();
  }
  const services = openCoreServices(config, logger, "api");
  await services.ready(10_000);
  const metrics = createMetricsRegistry(services.store);
  const api = await buildApi(
    { config, store: services.store, events: services.events, health: services.health, metrics },
    logger,
  );
  await api.app.listen({ host: "127.0.0.1", port: 0 });
  let executor: LocalExecutor | undefined;
  if (options.executor) {
    executor = new LocalExecutor({ config, store: services.store, subscriber: services.subscriber, logger });
    await executor.start();
  }
  const notifiers = new Set<{ stop(): Promise<void> }>();
  const launchNotifier = async () => {
    const started = await startNotifier(config, services, logger.child({ component: "webhooks" }));
    const handle = {
      stop: async () => {
        notifiers.delete(handle);
        await started.stop();
      },
    };
    notifiers.add(handle);
    return handle;
  };
  const notifier = options.notifier ? await launchNotifier() : undefined;
  const address = api.app.server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const baseUrl = `http://127.0.0.1:${port}`;
  const defaultKey = config.server.clients[0]?.keys[0];

  return {
    baseUrl,
    config,
    services,
    api,
    redis,
    s3,
    ...(executor ? { executor } : {}),
    ...(notifier ? { notifier } : {}),
    startNotifier: launchNotifier,
    logs,
    request: (path, init = {}) => {
      const headers = new Headers(init.headers);
      const key = init.key === undefined ? defaultKey : init.key;
      if (key && !headers.has("x-api-key") && !headers.has("authorization")) headers.set("x-api-key", key);
      let body = init.body;
      if (init.json !== undefined) {
        headers.set("content-type", "application/json");
        body = JSON.stringify(init.json);
      }
      return fetch(`${baseUrl}${path}`, { ...init, headers, body });
    },
    close: async () => {
      await executor?.stop(0);
      for (const n of [...notifiers]) await n.stop();
      await api.close();
      await services.close();
      await s3.close();
      if (ownsRedis) await redis.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

function mergeDeep(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    out[k] =
      v &&
      typeof v === "object" &&
      !Array.isArray(v) &&
      prev &&
      typeof prev === "object" &&
      !Array.isArray(prev)
        ? mergeDeep(prev as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return out;
}
