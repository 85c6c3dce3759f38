import { writeFileSync } from "node:fs";
import { ConfigError, jobTimeoutFromEnv, type Config } from "../core/config/load.js";
import type { Logger } from "../core/logger.js";
import { createS3Client } from "../core/storage/s3.js";
import { connectRedis, JobStore } from "../core/store/store.js";
import { EXIT } from "../core/policy.js";
import type { ExecutorMessage, RunnerMessage } from "../core/runner-messages.js";
import { runJob, type RunnerDeps } from "./run-job.js";

function openDeps(
  config: Config,
  logger: Logger,
  shutdown: AbortSignal,
): RunnerDeps & { close(): Promise<void> } {
  const redis = connectRedis(config.redis.url!, {
    connectTimeoutMs: config.redis.connectTimeoutMs,
    socketTimeoutMs: config.redis.socketTimeoutMs,
    name: "media-service-runner",
  });
  redis.on("error", (err: Error) => logger.warn({ err: err.message }, "redis connection error"));
  const store = new JobStore(redis, {
    keyPrefix: config.redis.keyPrefix,
    retentionMs: config.limits.retentionMs,
    eventsMaxLen: config.limits.eventsMaxLen,
  });
  const s3 = createS3Client(config.storage);
  return {
    config,
    store,
    s3,
    logger,
    shutdown,
    // Redis may be gone already (the whole stack is stopping): never wait long for a polite QUIT.
    close: async () => {
      s3.destroy();
      await Promise.race([
        redis.quit().catch(() => undefined),
        new Promise((r) => setTimeout(r, 1000).unref()),
      ]);
      redis.disconnect();
    },
  };
}

/**
 * Collects the garbage of the runner's start (its modules loaded, its clients made) before a job
 * adds its own: with the runner's V8 flags V8 would keep it until well after the job, a few MiB of
 * the job's peak RSS. A "last-resort" collection (V8's when memory runs out) also compacts the old
 * generation and hands its emptied pages back to the system, and flushes the bytecode of functions
 * run once at start: ~9 MiB less RSS than a plain full collection, which frees the objects but keeps
 * their pages (docs/performance.md, "Video jobs"). `gc` exists when the process was started with
 * RUNNER_NODE_FLAGS (--expose-gc; core/config/runner-env.ts); without them (run by hand) there is
 * nothing to do.
 */
function collectStartGarbage(): void {
  globalThis.gc?.({ type: "major", flavor: "last-resort" });
}

/**
 * `media-service runner --job <id>`: executes one job and exits with the contract's code. The
 * reason of a failure also goes to the termination log (Kubernetes reads it into the pod status).
 * JOB_TIMEOUT_SECONDS, when set, is the job's deadline, counted from the runner's start (the
 * Kubernetes executor passes the job's time; the Job's activeDeadlineSeconds adds the longest wait
 * for a node to it).
 */
export async function runOne(
  jobId: string,
  config: Config,
  logger: Logger,
  env: Record<string, string | undefined> = process.env,
): Promise<number> {
  let deadlineSeconds: number | undefined;
  try {
    deadlineSeconds = jobTimeoutFromEnv(env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    // As for any other configuration error: exit 2, before the job is touched.
    logger.fatal(err.message);
    writeTerminationMessage(err.message, logger);
    return EXIT.permanent;
  }
  const shutdown = new AbortController();
  process.once("SIGTERM", () => shutdown.abort(new Error("runner received SIGTERM")));
  const deps = openDeps(config, logger, shutdown.signal);
  collectStartGarbage();
  try {
    const outcome = await runJob(jobId, {
      ...deps,
      ...(deadlineSeconds !== undefined ? { deadlineSeconds } : {}),
    });
    if (outcome.error) writeTerminationMessage(outcome.error, logger);
    return outcome.code;
  } finally {
    await deps.close();
  }
}

/**
 * `media-service runner --serve`: the local executor's runner process. It runs the jobs it is sent
 * over IPC one at a time, with exactly the code path of `--job`, and exits after `maxJobs` jobs or
 * when its executor goes away (the IPC channel closes), so it never outlives the controller.
 */
export async function serve(config: Config, logger: Logger, maxJobs: number): Promise<number> {
  if (!process.send || !process.connected) {
    logger.error("runner --serve must be started by the local executor (it talks over IPC)");
    return EXIT.permanent;
  }
  // A send that fails (EPIPE: the executor died between the check and the write) is not an error of
  // this runner's: "disconnect" follows and ends it. Without a callback Node would throw it instead.
  const send = (message: RunnerMessage) => {
    if (process.connected) process.send!(message, undefined, {}, () => undefined);
  };
  const shutdown = new AbortController();
  const deps = openDeps(config, logger, shutdown.signal);
  let served = 0;
  let busy: Promise<void> = Promise.resolve();
  const finished = new Promise<void>((resolve) => {
    process.on("disconnect", () => {
      shutdown.abort(new Error("the executor went away"));
      resolve();
    });
    process.once("SIGTERM", () => {
      shutdown.abort(new Error("runner received SIGTERM"));
      resolve();
    });
    process.on("message", (message: ExecutorMessage) => {
      if (message?.type !== "run") return;
      busy = busy.then(async () => {
        const outcome = await runJob(message.jobId, deps, message.job).catch((err: unknown) => ({
          code: 1,
          error: `runner error: ${err instanceof Error ? err.message : String(err)}`,
        }));
        send({
          type: "done",
          jobId: message.jobId,
          code: outcome.code,
          ...(outcome.error ? { error: outcome.error } : {}),
        });
        if (++served >= maxJobs) resolve();
      });
    });
  });
  collectStartGarbage();
  send({ type: "ready" });
  await finished;
  await busy;
  await deps.close();
  if (process.connected) process.disconnect();
  return 0;
}

function writeTerminationMessage(message: string, logger: Logger): void {
  const path = process.env.TERMINATION_MESSAGE_PATH;
  if (!path) return;
  try {
    writeFileSync(path, message.slice(0, 4000));
  } catch (err) {
    logger.debug({ err: (err as Error).message }, "no termination log written");
  }
}
