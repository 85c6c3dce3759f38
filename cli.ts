#!/usr/bin/env node
import module from "node:module";
import { parseArgs } from "node:util";
import type { Api } from "./api/server.js";
import { apiExposureProblem, isLoopback, listenHost } from "./core/config/exposure.js";
import { ConfigError, loadConfig, type Config } from "./core/config/load.js";
import { createLogger, type Logger } from "./core/logger.js";
import type { CoreServices } from "./core/services.js";
import type { LocalStack } from "./local/stack.js";
import { redact } from "./core/store/redis-target.js";

// Node ≥ 22.1 caches compiled code across starts: runner processes start faster. Everything a
// command does not need is imported lazily below, so a runner loads neither the API nor prom-client.
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();

const USAGE = `usage: media-service <command>

commands:
  start        the whole local stack in one process: API + controller, with Redis and the
               embedded S3-protocol store started for you when REDIS_URL / S3_ENDPOINT are unset;
               listens on 127.0.0.1 unless HOST says otherwise
  api          the HTTP API only
  controller   the controller only: claims jobs and runs them (executor.kind local or kubernetes),
               retention; serves /healthz, /readyz and /metrics on PORT
  runner       --job <id>: execute one job and exit (0 done, 2 permanent failure, other transient)
  object-store the embedded S3-protocol store alone, on EMBEDDED_S3_HOST:EMBEDDED_S3_PORT (default
               127.0.0.1:9000), objects under DATA_DIR; off loopback it needs S3_ACCESS_KEY_ID and
               S3_SECRET_ACCESS_KEY of your own (for a test cluster or a second machine)

configuration: CONFIG_FILE (default ./config.yaml) and environment variables; see docs/configuration.md`;

type Stop = () => Promise<void>;

async function main(argv: string[]): Promise<number> {
  const command = argv[0];
  if (!command || command === "--help" || command === "-h" || command === "help") {
    console.log(USAGE);
    return command ? 0 : 2;
  }
  if (!["start", "api", "controller", "runner", "object-store"].includes(command)) {
    console.error(`unknown command "${command}"\n\n${USAGE}`);
    return 2;
  }
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      return 2;
    }
    throw err;
  }
  if (command === "object-store" && config.storage.endpoint) {
    console.error(
      `media-service ${command}: S3_ENDPOINT is set; the embedded store serves only when it is not`,
    );
    return 2;
  }
  if (command === "start" || command === "api" || command === "object-store") {
    const refused =
      (command === "object-store" ? undefined : apiExposureProblem(config, command)) ??
      (command === "api"
        ? undefined
        : (await import("./local/stack.js")).embeddedStoreExposureProblem(config));
    if (refused) {
      console.error(`media-service ${command}: ${refused}`);
      return 2;
    }
  }
  if (command === "controller" && config.executor.kind === "kubernetes" && nodeTooOldForKubernetes()) {
    console.error(
      `media-service ${command}: the Kubernetes executor needs Node ${KUBERNETES_NODE.join(".")} or later (this is Node ${process.versions.node}); the image and the project target Node 24`,
    );
    return 2;
  }
  const logger = createLogger({ level: config.logLevel, name: command, format: config.logFormat });
  if (command === "runner") return runner(argv.slice(1), config, logger);
  const stops: Stop[] = [];
  const shutdown = onSignal(logger, config.server.shutdownTimeoutMs, stops);

  try {
    if (command === "object-store") {
      const { startObjectStore } = await import("./local/stack.js");
      const store = await startObjectStore(config, logger);
      stops.unshift(() => store.close());
      logger.info({ s3: store.endpoint, data_dir: config.dataDir }, "embedded object store is running");
      return -1; // keep running until a signal
    }
    let started: LocalStack["started"] = {};
    if (command === "start") {
      const { startLocalStack } = await import("./local/stack.js");
      const local = await startLocalStack(config, logger);
      stops.unshift(() => local.stop());
      config = local.config;
      started = local.started;
    }
    requireSetting(config.redis.url, "REDIS_URL (redis.url)", command);

    const { openCoreServices } = await import("./core/services.js");
    const services = openCoreServices(config, logger, command);
    stops.unshift(() => services.close());
    // Requests fail fast while Redis is down, so wait for it before serving; a Redis that stays away
    // is reported by /health/ready rather than stopping the process (it may come up later).
    await services.ready(config.redis.connectTimeoutMs).catch((err: Error) => {
      logger.warn({ err: err.message }, "starting without Redis; not ready until it answers");
    });

    if (command === "start" || command === "controller") {
      if (command === "start" && config.executor.kind === "kubernetes") {
        throw new Error(
          "executor.kind kubernetes runs with `media-service controller` in a cluster; `start` runs jobs locally (EXECUTOR=local)",
        );
      }
      const { startController } = await import("./controller/main.js");
      stops.unshift(...(await startController(config, services, logger, command === "controller")));
    }
    if (command === "start" || command === "api") {
      const api = await listen(command, config, services, logger);
      stops.unshift(() => api.close());
      if (command === "start") await printBanner(config, started, logger);
    }
  } catch (err) {
    logger.fatal({ err: err instanceof Error ? err.message : String(err) }, "start failed");
    await shutdown("startup failure");
    return 1;
  }
  return -1; // keep running until a signal
}

async function listen(
  command: "start" | "api",
  config: Config,
  services: CoreServices,
  logger: Logger,
): Promise<Api> {
  const [{ buildApi }, { createMetricsRegistry }] = await Promise.all([
    import("./api/server.js"),
    import("./core/metrics.js"),
  ]);
  const metrics = createMetricsRegistry(services.store);
  const api = await buildApi({ ...services, config, metrics }, logger);
  const host = listenHost(config, command);
  await api.app.listen({ host, port: config.server.port });
  if (config.server.clients.length === 0) {
    if (isLoopback(host)) {
      logger.info(
        { host },
        "no API keys (API_KEYS): authentication is off, the API is reachable from this machine only",
      );
    } else {
      logger.warn(
        { host, port: config.server.port },
        "no API keys (API_KEYS) and server.allow_unauthenticated: anyone who reaches this address can read every job and submit work",
      );
    }
  }
  return api;
}

async function runner(args: string[], config: Config, logger: Logger): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { job: { type: "string" }, serve: { type: "boolean" }, "max-jobs": { type: "string" } },
    strict: true,
  });
  if (!config.redis.url) {
    logger.fatal("REDIS_URL (redis.url) is not set; the runner reads its job from Redis");
    return 1;
  }
  const main = await import("./runner/main.js");
  if (values.serve) {
    return main.serve(config, logger, Number(values["max-jobs"] ?? config.executor.localRunnerMaxJobs));
  }
  if (!values.job) {
    console.error(`runner needs --job <id>\n\n${USAGE}`);
    return 2;
  }
  return main.runOne(values.job, config, logger);
}

function requireSetting(value: string | undefined, name: string, command: string): void {
  if (!value) throw new Error(`${name} is not set; it is required by "media-service ${command}"`);
}

async function printBanner(config: Config, started: LocalStack["started"], logger: Logger): Promise<void> {
  const { apiBaseUrl, banner } = await import("./local/banner.js");
  const base = apiBaseUrl(config);
  const ai = aiSummary(config);
  logger.info(
    {
      api: base,
      docs: `${base}${config.server.docsPath}`,
      redis: started.redis ?? redact(config.redis.url!),
      s3: config.storage.endpoint,
      ai,
    },
    "media-service is running",
  );
  if (process.stdout.isTTY || process.env.MEDIA_SERVICE_BANNER === "1") {
    process.stdout.write(banner(config, { started, ai }));
  }
}

/** The default AI provider (no key), or how to configure one. */
function aiSummary(config: Config): string {
  const { providers, defaultProvider } = config.ai;
  const provider = defaultProvider !== undefined ? providers[defaultProvider] : undefined;
  if (!provider) return "none (AI jobs fail until AI_BASE_URL and AI_MODEL are set)";
  const others = Object.keys(providers).length - 1;
  return `${provider.name}: ${provider.model} at ${provider.baseUrl}${others > 0 ? ` (+${others} more)` : ""}`;
}

// The Kubernetes client's HTTP library (undici 8) needs Node 22.19; the project targets Node 24.
const KUBERNETES_NODE = [22, 19];
function nodeTooOldForKubernetes(): boolean {
  const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
  return major < KUBERNETES_NODE[0]! || (major === KUBERNETES_NODE[0] && minor < KUBERNETES_NODE[1]!);
}

function onSignal(logger: Logger, timeoutMs: number, stops: Stop[]): (reason: string) => Promise<void> {
  let stopping: Promise<void> | undefined;
  const shutdown = (reason: string) =>
    (stopping ??= (async () => {
      logger.info({ reason }, "shutting down");
      const timer = setTimeout(() => {
        logger.error({ timeout_ms: timeoutMs }, "shutdown took too long; exiting");
        process.exit(1);
      }, timeoutMs);
      timer.unref();
      for (const stop of stops) {
        await stop().catch((err) => logger.warn({ err: (err as Error).message }, "error during shutdown"));
      }
      clearTimeout(timer);
    })());
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.once(signal, () => void shutdown(signal).then(() => process.exit(0)));
  }
  return shutdown;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
