// The stack the contract test runs against: what `media-service start` runs (its own redis-server,
// the embedded S3-protocol store, the API, configured from the environment as usual) without the
// controller, so that the thousands of jobs the test submits are recorded but never processed.
// Prints `listening <base URL>` once the API answers; stops on SIGTERM or SIGINT.
import { buildApi } from "../../api/server.js";
import { loadConfig } from "../../core/config/load.js";
import { createLogger } from "../../core/logger.js";
import { createMetricsRegistry } from "../../core/metrics.js";
import { openCoreServices } from "../../core/services.js";
import { startLocalStack } from "../../local/stack.js";

const loaded = loadConfig();
const logger = createLogger({ level: loaded.logLevel, name: "contract", format: loaded.logFormat });
const local = await startLocalStack(loaded, logger);
const config = local.config;
const services = openCoreServices(config, logger, "api");
await services.ready(config.redis.connectTimeoutMs);
const metrics = createMetricsRegistry(services.store);
const api = await buildApi({ ...services, config, metrics }, logger);
await api.app.listen({ host: "127.0.0.1", port: config.server.port });
const address = api.app.server.address();
const port = typeof address === "object" && address ? address.port : config.server.port;
process.stdout.write(`listening http://127.0.0.1:${port}\n`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await api.close().catch(() => undefined);
  await services.close().catch(() => undefined);
  await local.stop();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
