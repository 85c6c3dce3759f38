// The image_resize throughput benchmark's two targets, in one child process of the benchmark
// (bench/runner.ts drives it over IPC), so both run on the same machinery:
//
// - stack: jobs submitted over HTTP to the real API, claimed by the local executor, run by its
//   `media-service runner --serve` processes (S3 GET → sharp → S3 PUT → complete);
// - bare: a loop in this process doing the same S3 GET → sharp resize → S3 PUT with the same
//   concurrency, and nothing else;
// - raw: sharp alone on the source's bytes in memory (resize → JPEG buffer), nothing stored.
//
// Both use the same redis-server, the same embedded S3-protocol store (served from this process)
// and the same source image. This process's stdout goes to /dev/null, and with it the runners'
// logs, written at the production level (info) as in a deployment.
import { readFile, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { LocalExecutor } from "../controller/local-executor.js";
import type { Config } from "../core/config/load.js";
import type { Logger } from "../core/logger.js";
import type { CoreServices } from "../core/services.js";
import { createS3Client } from "../core/storage/s3.js";
import { jobsRound, type JobsRequest } from "./jobs-round.js";
import { procKb, runnerPids } from "./procs.js";
import { SHARP_PATCH_ENV, type SharpPatch } from "./sharp-patch.js";
import { BENCH_API_KEY, listenApi, startBenchStack } from "./stack.js";

export const BUCKET = "bench";
export const SOURCE_KEY = "in/photo.jpg";
/** The rss command's source. */
export const RSS_SOURCE_KEY = "in/large.jpg";

/** What the resize does, in both targets: an 800×600 cover crop, JPEG quality 85. */
export const RESIZE = { width: 800, height: 600, format: "jpeg", quality: 85 } as const;

export type ServerRequest =
  | { id: number; cmd: "setup"; source: string; concurrency: number }
  | {
      id: number;
      cmd: "raw";
      jobs: number;
    }
  | {
      id: number;
      cmd: "bare";
      jobs: number;
      /** JPEG as the runner encodes it (runner/image/encode.ts, standard mode) instead of sharp's default. */
      runnerEncoder?: boolean;
    }
  | {
      id: number;
      cmd: "stack";
      jobs: number;
      maxJobs: number;
      /** sharp settings applied in the runner processes (bench/sharp-patch.ts). */
      patch?: SharpPatch;
      /** Extra environment of the runner processes (e.g. MALLOC_ARENA_MAX). */
      env?: Record<string, string>;
      /** The output format and quality, instead of RESIZE's JPEG q85. */
      format?: "jpeg" | "avif";
      quality?: number;
      /** Keep the output of the round's first job (the caller compares it). */
      keepOutput?: boolean;
      /** The executor's local_concurrency for this round, instead of the setup's concurrency. */
      runners?: number;
    }
  | {
      id: number;
      cmd: "rss";
      /** The source, uploaded once under RSS_SOURCE_KEY. */
      source: string;
      /** Extra environment of the runner process. */
      env?: Record<string, string>;
      /** Keep the output (the caller compares it). */
      keepOutput?: boolean;
      /** Another job than the image resize (bench/video.ts): its API path under /api/v1 and parameters. */
      job?: { path: string; sourceKey: string; contentType: string; parameters: Record<string, unknown> };
    }
  | ({ id: number; cmd: "jobs" } & JobsRequest)
  | { id: number; cmd: "stop" };

export type ServerReply =
  { id: number; ok: true; result: RoundResult } | { id: number; ok: false; error: string };

export interface RoundResult {
  /** Jobs completed. */
  jobs: number;
  /** Jobs that failed (the stack only): counted in the round's time, not in `jobs`. */
  failed?: number;
  /** The first failure's error. */
  error?: string;
  seconds: number;
  /** Size of one output, as a check that both targets did the same work. */
  outputBytes?: number;
  /** Stack only, means over the round's jobs: started → completed as the store saw it, and the processor's own time. */
  jobSeconds?: number;
  processorSeconds?: number;
  /** Stack only: jobs started more than once (a runner failed them transiently). */
  retried?: number;
  /** The first job's output, base64, when asked for. */
  output?: string;
  /** rss only: the runner process's peak RSS (VmHWM) once started and idle, and over its whole life after the job. */
  idleKb?: number;
  peakKb?: number;
  /** rss only: its RSS once started and idle (VmRSS: the floor its job starts from). */
  idleRssKb?: number;
  /** rss only: its peak RSS while the job ran (VmHWM reset before it); absent where Linux refuses the reset. */
  jobPeakKb?: number;
  /** jobs only (bench/jobs-round.ts): CPU seconds of the runners and their children, and of the rest of the stack. */
  runnerCpu?: number;
  runnerOwnCpu?: number;
  stackCpu?: number;
  /** rss only: the highest anonymous and file-backed RSS seen polling /proc every 2 ms (approximate). */
  anonKb?: number;
  fileKb?: number;
}

// Run from source (tsx) or compiled (bench/compile.ts): the preload is the same kind of file.
const FROM_SOURCE = import.meta.url.endsWith(".ts");
const PRELOAD = fileURLToPath(
  new URL(FROM_SOURCE ? "./runner-preload.ts" : "./runner-preload.js", import.meta.url),
);

let config: Config;
let sourceBytes: Buffer;
let services: CoreServices;
let logger: Logger;
let apiUrl = "";
let concurrency = 2;
let executor: { key: string; executor: LocalExecutor } | undefined;
let outputs = 0;
const cleanups: Array<() => Promise<unknown>> = [];

async function setup(source: string, localConcurrency: number): Promise<RoundResult> {
  concurrency = localConcurrency;
  sourceBytes = await readFile(source);
  const stack = await startBenchStack("resize", (dataDir) => ({
    executor: { scratch_dir: join(dataDir, "scratch"), local_concurrency: localConcurrency },
  }));
  cleanups.unshift(() => stack.stop());
  ({ config, services, logger } = stack);
  await services.s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
  await services.s3.send(
    new PutObjectCommand({
      Bucket: BUCKET,
      Key: SOURCE_KEY,
      Body: await readFile(source),
      ContentType: "image/jpeg",
    }),
  );
  const { api, port } = await listenApi(stack);
  cleanups.unshift(() => api.close());
  apiUrl = `http://127.0.0.1:${port}/api/v1/jobs/image/resize`;
  return { jobs: 0, seconds: 0 };
}

/** The executor for a runner configuration, started fresh; any other one is stopped first. */
async function useExecutor(
  runners: number,
  maxJobs: number,
  patch: SharpPatch | undefined,
  env: Record<string, string> | undefined,
): Promise<void> {
  const key = JSON.stringify({ runners, maxJobs, patch, env });
  if (executor?.key === key) return;
  await executor?.executor.stop(0);
  executor = undefined;
  // The executor hands its own environment to its runners, read when it is constructed.
  const saved = process.env;
  process.env = {
    ...saved,
    ...(patch
      ? {
          [SHARP_PATCH_ENV]: JSON.stringify(patch),
          NODE_OPTIONS: FROM_SOURCE ? `--import tsx --import ${PRELOAD}` : `--import ${PRELOAD}`,
        }
      : {}),
    ...env,
  };
  const runnerConfig: Config = structuredClone(config);
  runnerConfig.executor.localRunnerMaxJobs = maxJobs;
  runnerConfig.executor.localConcurrency = runners;
  let next: LocalExecutor;
  try {
    next = new LocalExecutor({
      config: runnerConfig,
      store: services.store,
      subscriber: services.subscriber,
      redis: services.redis,
      logger,
    });
  } finally {
    process.env = saved;
  }
  await next.start();
  executor = { key, executor: next };
}

/**
 * image_resize's completed and failed totals: one HMGET, polled every ROUND_POLL_MS while a round
 * runs (the store's counters() reads every type's counters, a cost the round would charge to the
 * stack).
 */
async function completedTotal(): Promise<{ completed: number; failed: number }> {
  const [completed, failed] = await services.redis.hmget(
    services.store.keys.stats("image_resize"),
    "completed_total",
    "failed_total",
  );
  return { completed: Number(completed ?? 0), failed: Number(failed ?? 0) };
}

/**
 * How often a stack round looks whether its jobs have ended. The round's time ends at its last
 * job's completed_at, not when the poll sees it, so the interval costs no precision; polling every
 * 5 ms charged the stack ~2 % of a core (the HMGETs, in this process and in redis).
 */
const ROUND_POLL_MS = 50;

/** Submits `jobs` jobs over HTTP and waits until all have completed. */
async function stackRound(request: Extract<ServerRequest, { cmd: "stack" }>): Promise<RoundResult> {
  await useExecutor(request.runners ?? concurrency, request.maxJobs, request.patch, request.env);
  const before = await completedTotal();
  // Wall-clock time: the round ends at a completed_at the store wrote (milliseconds, this machine).
  const started = Date.now();
  const body = (i: number) =>
    JSON.stringify({
      source_bucket: BUCKET,
      source_key: SOURCE_KEY,
      dest_bucket: BUCKET,
      dest_key: `out/stack-${++outputs}-${i}.${request.format ?? "jpeg"}`,
      ...RESIZE,
      ...(request.format ? { format: request.format } : {}),
      ...(request.quality ? { quality: request.quality } : {}),
    });
  const submitted = await Promise.all(
    Array.from({ length: request.jobs }, async (_, i) => {
      const res = await fetch(apiUrl, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": BENCH_API_KEY },
        body: body(i),
      });
      if (res.status !== 202) throw new Error(`submit answered ${res.status}: ${await res.text()}`);
      return ((await res.json()) as { job_id: string }).job_id;
    }),
  );
  let now = before;
  while (now.completed + now.failed - before.completed - before.failed < request.jobs) {
    await new Promise((r) => setTimeout(r, ROUND_POLL_MS));
    now = await completedTotal();
  }
  const jobs = await Promise.all(submitted.map((id) => services.store.getJob(id)));
  const last = Math.max(...jobs.map((j) => Date.parse(j?.completed_at ?? "") || 0));
  const seconds = ((last > started ? last : Date.now()) - started) / 1000;
  const completed = jobs.filter((j) => j?.status === "completed");
  const failed = jobs.filter((j) => j?.status === "failed");
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const results = completed.map((j) => j!.result as { file_size?: number; duration?: number });
  return {
    jobs: request.jobs - failed.length,
    seconds,
    ...(failed.length > 0 ? { failed: failed.length, error: failed[0]!.error } : {}),
    outputBytes: results[0]?.file_size,
    jobSeconds: mean(
      completed.map((j) => (Date.parse(j!.completed_at!) - Date.parse(j!.started_at!)) / 1000),
    ),
    processorSeconds: mean(results.map((r) => r.duration ?? 0)),
    retried: jobs.filter((j) => (j?.attempts ?? 1) > 1).length,
    ...(request.keepOutput && completed[0]
      ? { output: await objectBytes(completed[0].dest_key!).then((b) => b.toString("base64")) }
      : {}),
  };
}

let rssSourceUploaded = false;

/**
 * One image_resize job through the stack, by a `runner --serve` process of its own: a fresh
 * executor with one runner, which stays up after the job (it may take two), so that its VmHWM, the
 * peak over its whole life (start, S3 GET, resize, S3 PUT, the reports to Redis), is read from
 * /proc once the job has completed; and, apart, its start's peak, its RSS once idle and its peak
 * while the job ran (VmHWM reset once it is idle). The job is the processor benchmark's (bench/resize-once.ts):
 * 800 px wide, `inside`, JPEG q85.
 */
async function rssRound(request: Extract<ServerRequest, { cmd: "rss" }>): Promise<RoundResult> {
  if (!rssSourceUploaded) {
    await services.s3.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: request.job?.sourceKey ?? RSS_SOURCE_KEY,
        Body: await readFile(request.source),
        ContentType: request.job?.contentType ?? "image/jpeg",
      }),
    );
    rssSourceUploaded = !request.job;
  }
  await executor?.executor.stop(0);
  executor = undefined;
  await useExecutor(1, 2, undefined, request.env);
  const measured = executor!.executor;
  // Its runner has started once the executor has it idle, ready for a job.
  for (let tries = 0; measured.room().total === 0; tries++) {
    if (tries > 600) throw new Error("no runner process was ready within 30 s");
    await new Promise((r) => setTimeout(r, 50));
  }
  const [pid] = await runnerPids();
  if (pid === undefined) throw new Error("no runner process found (is /proc mounted?)");
  const idleKb = await procKb(pid, "VmHWM");
  const idleRssKb = await procKb(pid, "VmRSS");
  // From here VmHWM is the job's own peak: 5 written to clear_refs resets it to the current RSS.
  const reset = await writeFile(`/proc/${pid}/clear_refs`, "5").then(
    () => true,
    () => false,
  );
  let anonKb = 0;
  let fileKb = 0;
  const poll = setInterval(() => {
    void Promise.all([procKb(pid, "RssAnon"), procKb(pid, "RssFile")]).then(([anon, file]) => {
      anonKb = Math.max(anonKb, anon);
      fileKb = Math.max(fileKb, file);
    });
  }, 2);
  const started = Date.now();
  const key = `out/rss-${++outputs}.${request.job ? "out" : "jpg"}`;
  const resize = { width: 800, height: 16_384, fit: "inside", format: "jpeg", quality: 85 };
  try {
    const res = await fetch(request.job ? apiUrl.replace(/\/jobs\/.*$/, request.job.path) : apiUrl, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": BENCH_API_KEY },
      body: JSON.stringify({
        source_bucket: BUCKET,
        source_key: request.job?.sourceKey ?? RSS_SOURCE_KEY,
        dest_bucket: BUCKET,
        dest_key: key,
        ...(request.job?.parameters ?? resize),
      }),
    });
    if (res.status !== 202) throw new Error(`submit answered ${res.status}: ${await res.text()}`);
    const id = ((await res.json()) as { job_id: string }).job_id;
    for (;;) {
      const job = await services.store.getJob(id);
      if (job?.status === "failed") throw new Error(`the rss job failed: ${job.error}`);
      if (job?.status === "completed") break;
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    clearInterval(poll);
  }
  const seconds = (Date.now() - started) / 1000;
  const jobPeakKb = await procKb(pid, "VmHWM");
  const peakKb = Math.max(idleKb, jobPeakKb);
  await measured.stop(0);
  executor = undefined;
  const output = await objectBytes(key);
  return {
    jobs: 1,
    seconds,
    outputBytes: output.length,
    idleKb,
    peakKb,
    idleRssKb,
    ...(reset ? { jobPeakKb } : {}),
    anonKb,
    fileKb,
    ...(request.keepOutput ? { output: output.toString("base64") } : {}),
  };
}

/**
 * Jobs submitted at once to the executor at the stack's concurrency and runner job quota, once all
 * its runners are idle (the executor starts them as jobs come: a warm-up round starts them).
 */
async function stackJobsRound(request: JobsRequest): Promise<RoundResult> {
  const { localConcurrency, localRunnerMaxJobs } = config.executor;
  await useExecutor(localConcurrency, localRunnerMaxJobs, undefined, undefined);
  for (let tries = 0; request.idle !== false && executor!.executor.room().total < localConcurrency; tries++) {
    if (tries > 600) throw new Error(`${localConcurrency} runner processes were not idle within 30 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return jobsRound(services, apiUrl.replace(/\/jobs\/.*$/, ""), BUCKET, request, ++outputs);
}

async function objectBytes(key: string): Promise<Buffer> {
  const got = await services.s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return Buffer.from(await got.Body!.transformToByteArray());
}

/** sharp alone, nothing stored: the source's bytes (read once) → resize → JPEG in memory. */
async function rawRound(request: Extract<ServerRequest, { cmd: "raw" }>): Promise<RoundResult> {
  const { default: sharp } = await import("sharp");
  let next = 0;
  let outputBytes = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < request.jobs) {
      next++;
      const output = await sharp(sourceBytes)
        .resize(RESIZE.width, RESIZE.height)
        .jpeg({ quality: RESIZE.quality })
        .toBuffer();
      outputBytes = output.length;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { jobs: request.jobs, seconds: (performance.now() - started) / 1000, outputBytes };
}

let bareClient: ReturnType<typeof createS3Client> | undefined;

/** `concurrency` workers taking jobs off one counter: GET → sharp → PUT, all in memory. */
async function bareRound(request: Extract<ServerRequest, { cmd: "bare" }>): Promise<RoundResult> {
  const { default: sharp } = await import("sharp");
  // Pure functions, no sharp settings: importing them leaves this process's sharp at its defaults.
  const { encode } = await import("../runner/image/encode.js");
  // The bare loop has its own client, as a runner has.
  bareClient ??= createS3Client(config.storage);
  const s3 = bareClient;
  let next = 0;
  let outputBytes = 0;
  const round = ++outputs;
  const started = performance.now();
  const worker = async () => {
    while (next < request.jobs) {
      const i = next++;
      const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: SOURCE_KEY }));
      const input = await got.Body!.transformToByteArray();
      const resized = sharp(input).resize(RESIZE.width, RESIZE.height);
      const output = await (
        request.runnerEncoder
          ? encode(resized, { format: "jpeg", quality: RESIZE.quality, mode: "standard", hasAlpha: false })
          : resized.jpeg({ quality: RESIZE.quality })
      ).toBuffer();
      await s3.send(
        new PutObjectCommand({
          Bucket: BUCKET,
          Key: `out/bare-${round}-${i}.jpg`,
          Body: output,
          ContentType: "image/jpeg",
        }),
      );
      outputBytes = output.length;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { jobs: request.jobs, seconds: (performance.now() - started) / 1000, outputBytes };
}

/**
 * Runner processes the executor left behind: LocalExecutor.stop() stops idle and running runners,
 * not those still starting, and a runner whose IPC channel closed before it listened for that
 * waits forever. Only this process's own children running `runner --serve` are stopped.
 */
async function stopLeftRunners(): Promise<void> {
  for (const pid of await runnerPids()) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

let stopping: Promise<void> | undefined;
function stop(): Promise<void> {
  stopping ??= (async () => {
    await executor?.executor.stop(0);
    await stopLeftRunners();
    bareClient?.destroy();
    for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  })();
  return stopping;
}

process.on("message", (request: ServerRequest) => {
  const handle = async (): Promise<RoundResult> => {
    switch (request.cmd) {
      case "setup":
        return setup(resolve(request.source), request.concurrency);
      case "bare":
        return bareRound(request);
      case "raw":
        return rawRound(request);
      case "stack":
        return stackRound(request);
      case "rss":
        return rssRound(request);
      case "jobs":
        return stackJobsRound(request);
      case "stop":
        await stop();
        return { jobs: 0, seconds: 0 };
    }
  };
  handle().then(
    (result) => {
      process.send!({ id: request.id, ok: true, result } satisfies ServerReply);
      if (request.cmd === "stop") process.disconnect();
    },
    (err: unknown) =>
      process.send!({
        id: request.id,
        ok: false,
        error: err instanceof Error ? err.message : String(err),
      } satisfies ServerReply),
  );
});
process.on("disconnect", () => void stop().finally(() => process.exit(0)));
