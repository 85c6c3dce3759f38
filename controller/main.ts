// The controller, assembled: one executor (local or Kubernetes) behind the Executor interface, the
// webhook notifier, retention, and (for a controller on its own) the probe server with /metrics; and
// a pool worker (`media-service pool`), a local executor taking jobs from the warm pool's queue.
import type { Registry } from "prom-client";
import { listenHost } from "../core/config/exposure.js";
import type { Config } from "../core/config/load.js";
import type { Logger } from "../core/logger.js";
import type { CoreServices } from "../core/services.js";
import type { Executor } from "./executor.js";

export type Stop = () => Promise<void>;

/** Time the local executor leaves running jobs within the shutdown timeout before handing them back. */
const SHUTDOWN_RESERVE_MS = 5000;

/** The configured executor, not started. */
export async function createExecutor(
  config: Config,
  services: CoreServices,
  logger: Logger,
  registry?: Registry,
): Promise<Executor> {
  const log = logger.child({ component: "executor" });
  const { poolRoute } = await import("./pool.js");
  const pool = poolRoute(config, services.store, log, registry);
  const options = {
    config,
    store: services.store,
    subscriber: services.subscriber,
    redis: services.redis,
    logger: log,
    ...(pool ? { pool } : {}),
  };
  if (config.executor.kind === "kubernetes") {
    const { KubernetesExecutor } = await import("./kubernetes/executor.js");
    const { kubernetesClients } = await import("./kubernetes/clients.js");
    return new KubernetesExecutor({
      ...options,
      kube: kubernetesClients(),
      ...(registry ? { registry } : {}),
    });
  }
  const { LocalExecutor } = await import("./local-executor.js");
  return new LocalExecutor(options);
}

/**
 * Starts the controller's parts and returns their stops, in the order they are to run: probes, the
 * executor (a leader releases its Lease), the notifier, retention. `standalone`: the controller runs
 * on its own and serves its probes and /metrics on server.port (with the API, the API serves them).
 */
export async function startController(
  config: Config,
  services: CoreServices,
  logger: Logger,
  standalone: boolean,
): Promise<Stop[]> {
  const stops: Stop[] = [];
  const { createMetricsRegistry } = await import("../core/metrics.js");
  const registry = standalone ? createMetricsRegistry(services.store) : undefined;
  const executor = await createExecutor(config, services, logger, registry);
  await executor.start();
  stops.push(() => executor.stop(Math.max(0, config.server.shutdownTimeoutMs - SHUTDOWN_RESERVE_MS)));
  const { startNotifier } = await import("./webhooks/start.js");
  const notifier = await startNotifier(config, services, logger.child({ component: "webhooks" }));
  stops.push(() => notifier.stop());
  const { startRetention } = await import("./retention.js");
  const retention = startRetention(
    services.store,
    config.limits.pruneIntervalMs,
    logger.child({ component: "retention" }),
  );
  stops.push(async () => retention.stop());
  if (registry) {
    const probes = await serveProbes(config, services, logger, registry, executor);
    stops.unshift(() => probes.close());
  }
  return stops;
}

/** /healthz, /readyz (Redis answers and `executor` is ready) and /metrics on server.port. */
async function serveProbes(
  config: Config,
  services: CoreServices,
  logger: Logger,
  registry: Registry,
  executor: Pick<Executor, "ready">,
): Promise<{ close(): Promise<void> }> {
  const { startProbeServer } = await import("./probe-server.js");
  return startProbeServer({
    host: listenHost(config, "controller"),
    port: config.server.port,
    registry,
    logger,
    notReady: async () => {
      try {
        await withTimeout(services.redis.ping(), config.limits.healthCheckTimeoutMs);
      } catch (err) {
        return `queue store unreachable: ${(err as Error).message}`;
      }
      return executor.ready();
    },
  });
}

/**
 * `media-service pool`: a pool worker. It keeps executor.pool.concurrency runner processes started,
 * takes jobs from the pool's queue as they have room, and serves /healthz, /readyz and /metrics on
 * server.port. Its stops, in order: the probes, then the worker (running jobs get the shutdown
 * timeout less a reserve, then are handed back to their queue).
 */
export async function startPoolWorker(
  config: Config,
  services: CoreServices,
  logger: Logger,
): Promise<Stop[]> {
  const [{ createMetricsRegistry }, { LocalExecutor }, { Gauge }] = await Promise.all([
    import("../core/metrics.js"),
    import("./local-executor.js"),
    import("prom-client"),
  ]);
  const registry = createMetricsRegistry(undefined);
  const worker = new LocalExecutor({
    config,
    store: services.store,
    subscriber: services.subscriber,
    redis: services.redis,
    logger: logger.child({ component: "pool" }),
    mode: "pool",
  });
  new Gauge({
    name: "media_pool_jobs_running",
    help: "Jobs this pool worker is running now",
    registers: [registry],
    collect() {
      this.set(worker.active);
    },
  });
  new Gauge({
    name: "media_pool_concurrency",
    help: "Jobs this pool worker runs at once at most (executor.pool.concurrency)",
    registers: [registry],
    collect() {
      this.set(worker.concurrency);
    },
  });
  await worker.start();
  const probes = await serveProbes(config, services, logger, registry, worker);
  return [
    () => probes.close(),
    () => worker.stop(Math.max(0, config.server.shutdownTimeoutMs - SHUTDOWN_RESERVE_MS)),
  ];
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
