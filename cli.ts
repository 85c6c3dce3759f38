#!/usr/bin/env node
import module from "node:module";
import { Command, CommanderError } from "commander";
import type { Api } from "./api/server.js";
import { apiExposureProblem, isLoopback, listenHost } from "./core/config/exposure.js";
import { ConfigError, loadConfig, type Config } from "./core/config/load.js";
import { createLogger, type Logger } from "./core/logger.js";
import type { CoreServices } from "./core/services.js";
import type { LocalStack } from "./local/stack.js";
import { redact } from "./core/store/redis-target.js";
import { addClientCommands, addGlobalOptions } from "./client/program.js";

// Node ≥ 22.1 caches compiled code across starts: runner processes start faster. Everything a
// command does not need is imported lazily below, so a runner loads neither the API nor prom-client.
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();

const SERVER_HELP = `
examples:
  $ media-service start
  $ media-service put photo.jpg s3://media/in/photo.jpg
  $ media-service submit image/resize --source s3://media/in/photo.jpg --dest s3://media/out/photo.webp width=800 --wait

configuration: CONFIG_FILE (default ./config.yaml) and environment variables; see docs/configuration.md
the client commands: docs/cli.md`;

const example = (line: string) => `\nexample:\n  $ ${line}\n`;

type Stop = () => Promise<void>;

/** The code of a runner's command-line error (see the runner's exitOverride). */
const RUNNER_USAGE = "media-service.runnerUsage";

type ServerCommand = "start" | "api" | "controller" | "pool" | "runner" | "object-store";
interface RunnerOptions {
  job?: string;
  serve?: boolean;
  maxJobs?: string;
}

/**
 * The program: the server commands, run here, and the client commands of client/program.ts. Each
 * command's code is imported when it runs, so a runner loads neither the API nor the client.
 * `done` receives the exit code (-1: a server keeps running until a signal).
 */
function program(done: (code: number) => void): Command {
  const program = new Command("media-service")
    .description(
      "Asynchronous media processing: the service's processes, and a client of a running service's API.",
    )
    .usage("<command> [options]")
    // Headings in lower case, as this binary has always printed them ("usage: media-service …").
    .configureHelp({
      styleTitle: (title) =>
        title.replace(/^(Usage|Options|Commands|Arguments|Global Options):$/, (t) => t.toLowerCase()),
      // The overview names each command with its required arguments; its own --help has the rest.
      subcommandTerm: (cmd) =>
        [cmd.name(), ...cmd.registeredArguments.filter((a) => a.required).map((a) => `<${a.name()}>`)].join(
          " ",
        ),
      showGlobalOptions: true,
    })
    .showHelpAfterError("(media-service --help lists the commands)")
    .exitOverride();
  addGlobalOptions(program);
  program.addHelpText("after", SERVER_HELP);
  program.commandsGroup("server commands:");
  const server = (command: ServerCommand, summary: string, description: string, line: string) =>
    program
      .command(command)
      .summary(summary)
      .description(description)
      // The global options are the client's: a server command's help leaves them out.
      .configureHelp({ ...program.configureHelp(), showGlobalOptions: false })
      .addHelpText("after", example(line))
      .action(async (options: RunnerOptions) => done(await serve(command, options)));
  server(
    "start",
    "the whole local stack in one process (API, controller, Redis, object store)",
    "the whole local stack in one process: API + controller, with Redis and the embedded S3-protocol store started for you when REDIS_URL / S3_ENDPOINT are unset; listens on 127.0.0.1 unless HOST says otherwise",
    "media-service start",
  );
  server(
    "api",
    "the HTTP API only",
    "the HTTP API only",
    "REDIS_URL=redis://localhost:6379 API_KEYS=$KEY media-service api",
  );
  server(
    "controller",
    "the controller only: claims jobs and runs them",
    "the controller only: claims jobs and runs them (executor.kind local or kubernetes), retention; serves /healthz, /readyz and /metrics on PORT",
    "REDIS_URL=redis://localhost:6379 EXECUTOR=kubernetes media-service controller",
  );
  server(
    "pool",
    "a warm pool worker: runs the jobs the controller hands to the pool",
    "a warm runner pool worker: keeps executor.pool.concurrency runner processes started and runs the jobs the controller hands to the pool (executor.pool.enabled), each under a lease; on SIGTERM it stops taking jobs and hands back what it cannot finish; serves /healthz, /readyz and /metrics on PORT",
    "REDIS_URL=redis://localhost:6379 media-service pool",
  );
  server(
    "runner",
    "execute one job and exit (--job <id>)",
    "execute one job (--job <id>) and exit: 0 done, 2 permanent failure, any other code transient; with --serve, run the jobs a local controller sends",
    "media-service runner --job 3f0c2a8e-5d1b-4c3a-9e7f-1a2b3c4d5e6f",
  )
    .option("--job <id>", "the job to run")
    .option("--serve", "run the jobs a local controller sends over IPC (the local executor starts it so)")
    .option("--max-jobs <n>", "with --serve: leave after this many jobs")
    // A runner's exit code 2 says its job failed for good: a command line it does not understand
    // stays 1, as before.
    .exitOverride((err) => {
      throw err.exitCode === 0 ? err : new CommanderError(1, RUNNER_USAGE, err.message);
    });
  server(
    "object-store",
    "the embedded S3-protocol store alone",
    "the embedded S3-protocol store alone, on EMBEDDED_S3_HOST:EMBEDDED_S3_PORT (default 127.0.0.1:9000), objects under DATA_DIR; off loopback it needs S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY of your own (for a test cluster or a second machine)",
    "DATA_DIR=/srv/media EMBEDDED_S3_PORT=9000 media-service object-store",
  );
  addClientCommands(program, done);
  const hint = (command: Command, path: string) => {
    for (const sub of command.commands) {
      const name = `${path} ${sub.name()}`;
      sub.showHelpAfterError(`(${name} --help shows its options)`);
      hint(sub, name);
    }
  };
  hint(program, "media-service");
  return program;
}

async function main(argv: string[]): Promise<number> {
  let code: number | undefined;
  const cli = program((c) => (code = c));
  if (argv.length === 0) {
    cli.outputHelp();
    return 2;
  }
  try {
    await cli.parseAsync(argv, { from: "user" });
  } catch (err) {
    if (!(err instanceof CommanderError)) throw err;
    // Help: 0. A command line commander refuses (it has said why): a usage error, 2; a runner's, 1.
    if (err.exitCode === 0) return 0;
    return err.code === RUNNER_USAGE ? 1 : 2;
  }
  return code ?? 0;
}

async function serve(command: ServerCommand, options: RunnerOptions): Promise<number> {
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
  if (command === "runner") return runner(options, config, logger);
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
    if (command === "pool") {
      const { startPoolWorker } = await import("./controller/main.js");
      stops.unshift(...(await startPoolWorker(config, services, logger)));
    }
    if (command === "start" || command === "api") {
      const api = await listen(command, config, services, logger);
      stops.unshift(() => api.close());
      if (command === "start") {
        const { writeStartState } = await import("./core/start-state.js");
        const { apiBaseUrl } = await import("./local/banner.js");
        const state = {
          pid: process.pid,
          api: apiBaseUrl(config),
          ...(started.s3 ? { s3: started.s3 } : {}),
        };
        stops.unshift(await writeStartState(config.dataDir, state));
        await printBanner(config, started, logger);
      }
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

async function runner(options: RunnerOptions, config: Config, logger: Logger): Promise<number> {
  if (!config.redis.url) {
    logger.fatal("REDIS_URL (redis.url) is not set; the runner reads its job from Redis");
    return 1;
  }
  const main = await import("./runner/main.js");
  if (options.serve) {
    return main.serve(config, logger, Number(options.maxJobs ?? config.executor.localRunnerMaxJobs));
  }
  if (!options.job) {
    console.error("media-service runner needs --job <id> (media-service runner --help)");
    return 2;
  }
  return main.runOne(options.job, config, logger);
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
    // In a container of the image the example is run on its host, which has curl, not this command.
    const client = process.env.MEDIA_SERVICE_IMAGE === "1" ? "curl" : "cli";
    process.stdout.write(banner(config, { started, ai, client }));
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
  // SIGHUP is the terminal closing: the same as Ctrl-C. A second signal while the shutdown runs
  // cuts it short with process.exit, whose exit hook still stops the redis-server `start` runs (in a
  // process group of its own, a signal to the terminal's group does not reach it); left to the
  // signal's default action, this process would die without it and leave that redis-server running.
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    process.on(signal, () => {
      if (!stopping) {
        void shutdown(signal).then(() => process.exit(0));
        return;
      }
      logger.warn({ signal }, "a second signal during the shutdown: exiting now");
      process.exit(1);
    });
  }
  return shutdown;
}

/**
 * Resolves once what was written to the stream has left this process, or its reader has gone. Writes
 * to a pipe are asynchronous: exiting before they complete cuts the output short (`get … - | …`, a
 * long `--json` read by a slow reader).
 */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  if (stream.writableLength === 0) return Promise.resolve();
  return new Promise((resolve) => stream.write("", () => resolve()));
}

/** Exits with the code once stdout and stderr are written out. */
async function exit(code: number): Promise<never> {
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit(code);
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) void exit(code);
  },
  (err) => {
    console.error(err);
    void exit(1);
  },
);
