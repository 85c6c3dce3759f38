// The servers under test for the submit benchmark, in one child process so the load generator
// (bench/run.ts) does not share their event loop: the real API, and a bare Fastify route that does
// one EVALSHA of the same submit script with no validation, auth or logging. Prints one JSON line
// with their URLs, then serves until killed.
import { randomUUID } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Fastify from "fastify";
import { pino } from "pino";
import { buildApi } from "../api/server.js";
import { loadConfig } from "../core/config/load.js";
import type { Logger } from "../core/logger.js";
import { createMetricsRegistry } from "../core/metrics.js";
import { openCoreServices } from "../core/services.js";
import { spawnRedisServer } from "../local/redis.js";
import { startEmbeddedS3 } from "../local/s3/server.js";

const API_KEY = "bench-key-0123456789abcdef0123456789abcdef0123456789abcdef01234567";

const redis = await spawnRedisServer({ args: ["--save", "", "--appendonly", "no"] });
const dataDir = await mkdtemp(join(tmpdir(), "media-service-bench-"));
const s3 = await startEmbeddedS3({ port: 0, dataDir, accessKeyId: "bench", secretAccessKey: "bench-secret" });
const config = loadConfig({
  env: {},
  overrides: {
    server: { host: "127.0.0.1", port: 0, api_keys: [API_KEY] },
    redis: { url: redis.url },
    storage: { endpoint: s3.url, access_key_id: "bench", secret_access_key: "bench-secret" },
    data_dir: dataDir,
  },
});
// The production log level (info): every request logs as it would in a deployment, to /dev/null.
const logger = pino(
  { level: "info" },
  pino.destination({ dest: "/dev/null", sync: false }),
) as unknown as Logger;
const services = openCoreServices(config, logger, "bench");
const api = await buildApi(
  {
    config,
    store: services.store,
    events: services.events,
    health: services.health,
    metrics: createMetricsRegistry(services.store),
  },
  logger,
);
await api.app.listen({ host: "127.0.0.1", port: 0 });

// The bare route: the same submit script, one EVALSHA, the body passed through as the job's fields.
const bare = Fastify();
const store = services.store;
bare.post("/bare", async (request, reply) => {
  const body = request.body as Record<string, unknown>;
  const submitted = await store.submit([
    {
      type: "image_resize",
      source_bucket: body.source_bucket as string,
      source_key: body.source_key as string,
      dest_bucket: body.dest_bucket as string,
      dest_key: body.dest_key as string,
      parameters: { width: body.width, height: body.height },
    },
  ]);
  return reply.code(202).send({ job_id: submitted.jobIds[0], status: "pending" });
});
await bare.listen({ host: "127.0.0.1", port: 0 });

const port = (server: { address(): unknown }) => (server.address() as { port: number }).port;
process.stdout.write(
  `${JSON.stringify({
    api: `http://127.0.0.1:${port(api.app.server)}/api/v1/jobs/image/resize`,
    bare: `http://127.0.0.1:${port(bare.server)}/bare`,
    apiKey: API_KEY,
    redis: redis.url,
    run: randomUUID(),
  })}\n`,
);

const stop = async () => {
  await api.close();
  await bare.close();
  await services.close();
  await s3.close();
  await redis.stop();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
