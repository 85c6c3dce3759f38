// The server under test for the webhooks benchmark, in a child process so the load generator does
// not share its event loop: the API and the webhook notifier in one process, as `media-service
// start` runs them (the case where a slow receiver could hurt the API most). A control route primes
// N completed jobs whose webhooks go to a given URL. Prints one JSON line, then serves until killed.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Fastify from "fastify";
import { pino } from "pino";
import { buildApi } from "../api/server.js";
import { startNotifier } from "../controller/webhooks/start.js";
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
    // The receiver is local; webhook settings are otherwise the defaults.
    webhooks: { allow_private: true, timeout: "60s" },
    data_dir: dataDir,
  },
});
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
await startNotifier(config, services, logger);

// Completes `n` jobs with a webhook to `url`, through the store's transitions as an executor would.
const control = Fastify();
control.post("/prime", async (request) => {
  const { n, url } = request.body as { n: number; url: string };
  const store = services.store;
  // A queue of its own (the load submits image_colors), so jobs come out in the order they went in.
  const specs = Array.from({ length: n }, (_, i) => ({
    type: "video_thumbnail" as const,
    source_bucket: "media",
    source_key: `in/${i}.mp4`,
    parameters: {},
    webhook_url: url,
  }));
  const { jobIds } = await store.submit(specs);
  for (const id of jobIds) {
    const claimed = await store.claim("video_thumbnail", 60_000, "bench");
    if (claimed !== id) throw new Error(`expected job ${id} from the queue, got ${claimed}`);
    await store.start(id, 60_000);
    await store.complete(id, { output_url: "s3://media/out.jpg", file_size: 1 });
  }
  return { primed: jobIds.length };
});
control.get("/delivered", async () => services.store.webhookDeliveries());
await control.listen({ host: "127.0.0.1", port: 0 });

const port = (server: { address(): unknown }) => (server.address() as { port: number }).port;
process.stdout.write(
  `${JSON.stringify({
    api: `http://127.0.0.1:${port(api.app.server)}/api/v1/jobs/image/colors`,
    control: `http://127.0.0.1:${port(control.server)}`,
    apiKey: API_KEY,
  })}\n`,
);
