// A whole API process for tests, on real parts: its own redis-server, an S3-protocol store, and the
// API listening on a free port. Each stack has its own key prefix and data dir.
//
// The store is the embedded one (@media-service/s3-server), one per stack, unless S3_ENDPOINT names
// an outside server (with S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY and optionally S3_REGION, as
// `media-service` reads them): then every stack uses that server, with a bucket of its own (test files run in parallel
// processes), created at start and emptied and deleted at close. Tests write to `stack.bucket`.
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import {
  AbortMultipartUploadCommand,
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectsCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
} from "@aws-sdk/client-s3";
import { pino } from "pino";
import { startEmbeddedS3 } from "@media-service/s3-server";
import { buildApi, type Api } from "../../api/server.js";
import { LocalExecutor } from "../../controller/local-executor.js";
import { poolRoute } from "../../controller/pool.js";
import { loadConfig, type Config } from "../../core/config/load.js";
import type { Logger } from "../../core/logger.js";
import { createMetricsRegistry } from "../../core/metrics.js";
import { openCoreServices, type CoreServices } from "../../core/services.js";
import { startNotifier } from "../../controller/webhooks/start.js";
import { startTestRedis, type TestRedis } from "./redis.js";

export interface TestStack {
  baseUrl: string;
  config: Config;
  services: CoreServices;
  api: Api;
  redis: TestRedis;
  s3: TestS3;
  /** The stack's bucket on its store, made at start. */
  bucket: string;
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
  /** The built dashboard the API serves at /ui (default: dist/ui, as the API finds it). */
  uiDir?: string;
}

/** The object store a stack uses (path-style addressing). */
export interface TestS3 {
  url: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  /**
   * Releases what the stack holds on the store: stops its embedded store, or empties and deletes its
   * bucket on the outside server. Idempotent; the stack's close() calls it.
   */
  close(): Promise<void>;
}

/** The credentials of a stack's embedded store. */
export const TEST_ACCESS_KEY = "test-access-key";
export const TEST_SECRET_KEY = "test-secret-key";
/** The bucket of a stack on its embedded store; on an outside server each stack has its own. */
export const TEST_BUCKET = "media-test";

/** The outside S3-protocol server the environment names (S3_ENDPOINT and its credentials), if any. */
export function outsideS3FromEnv(
  env: NodeJS.ProcessEnv = process.env,
): { url: string; accessKeyId: string; secretAccessKey: string; region: string } | undefined {
  const url = env.S3_ENDPOINT;
  if (!url) return undefined;
  const accessKeyId = env.S3_ACCESS_KEY_ID;
  const secretAccessKey = env.S3_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) {
    throw new Error(
      `S3_ENDPOINT is set (${url}): the tests need S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY too`,
    );
  }
  return { url, accessKeyId, secretAccessKey, region: env.S3_REGION || "us-east-1" };
}

export async function startTestStack(options: TestStackOptions = {}): Promise<TestStack> {
  const ownsRedis = !options.redis;
  const redis = options.redis ?? (await startTestRedis());
  const dataDir = await mkdtemp(join(tmpdir(), "media-service-test-"));
  const outside = outsideS3FromEnv();
  const bucket = outside ? `${TEST_BUCKET}-${randomUUID()}` : TEST_BUCKET;
  const s3 = outside ? outsideS3(outside, bucket) : await embeddedS3(join(dataDir, "s3"));
  const config = loadConfig({
    env: {},
    overrides: mergeDeep(
      {
        server: { port: 0, host: "127.0.0.1", api_keys: options.apiKeys ?? [], mode: "test" },
        redis: { url: redis.url, key_prefix: `t-${randomUUID().slice(0, 8)}` },
        storage: {
          endpoint: s3.url,
          region: s3.region,
          access_key_id: s3.accessKeyId,
          secret_access_key: s3.secretAccessKey,
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
  // The bucket is made on the store itself, whatever endpoint the stack is configured with.
  await withAdmin(s3, (admin) => admin.send(new CreateBucketCommand({ Bucket: bucket })));
  const services = openCoreServices(config, logger, "api");
  await services.ready(10_000);
  const metrics = createMetricsRegistry(services.store);
  const api = await buildApi(
    { ...services, config, metrics },
    logger,
    options.uiDir ? { uiDir: options.uiDir } : {},
  );
  await api.app.listen({ host: "127.0.0.1", port: 0 });
  let executor: LocalExecutor | undefined;
  if (options.executor) {
    const pool = poolRoute(config, services.store, logger);
    executor = new LocalExecutor({
      config,
      store: services.store,
      subscriber: services.subscriber,
      redis: services.redis,
      logger,
      ...(pool ? { pool } : {}),
    });
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
    bucket,
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

async function embeddedS3(dataDir: string): Promise<TestS3> {
  const embedded = await startEmbeddedS3({
    host: "127.0.0.1",
    port: 0,
    dataDir,
    accessKeyId: TEST_ACCESS_KEY,
    secretAccessKey: TEST_SECRET_KEY,
  });
  return {
    url: embedded.url,
    accessKeyId: TEST_ACCESS_KEY,
    secretAccessKey: TEST_SECRET_KEY,
    region: "us-east-1",
    close: () => embedded.close(),
  };
}

function outsideS3(server: Omit<TestS3, "close">, bucket: string): TestS3 {
  let closing: Promise<void> | undefined;
  const s3: TestS3 = {
    ...server,
    close: () => (closing ??= withAdmin(s3, (admin) => deleteBucket(admin, bucket))),
  };
  return s3;
}

async function withAdmin<T>(s3: TestS3, use: (admin: S3Client) => Promise<T>): Promise<T> {
  const admin = new S3Client({
    endpoint: s3.url,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  });
  try {
    return await use(admin);
  } finally {
    admin.destroy();
  }
}

/** Empties a bucket (objects and unfinished multipart uploads) and deletes it. */
async function deleteBucket(admin: S3Client, bucket: string): Promise<void> {
  for (;;) {
    const { Uploads = [] } = await admin.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    for (const { Key, UploadId } of Uploads) {
      await admin.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key, UploadId }));
    }
    const { Contents = [] } = await admin.send(new ListObjectsV2Command({ Bucket: bucket }));
    if (Contents.length > 0) {
      const Objects = Contents.map(({ Key }) => ({ Key }));
      const { Errors = [] } = await admin.send(
        new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects, Quiet: true } }),
      );
      if (Errors.length > 0) throw new Error(`emptying ${bucket}: ${JSON.stringify(Errors)}`);
    }
    if (Uploads.length === 0 && Contents.length === 0) break;
  }
  await admin.send(new DeleteBucketCommand({ Bucket: bucket }));
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
