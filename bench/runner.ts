// The runner's benchmarks: each compares the runner with the plainest way of doing the same work,
// side by side in one run, alternating the two across rounds so drift on a shared machine hits both
// alike. They print figures and ratios, never pass/fail. Each has a module of its own, over the
// helpers here (the resize server, rates over rounds, the knobs):
//
//   resize     image_resize jobs/s through the whole local stack vs a bare S3 → sharp → S3 loop, sharp
//              alone in memory, and imgproxy serving the file from disk (IMGPROXY_BIN; resize.ts)
//   avif       image_resize to AVIF through the local stack vs imgproxy's AVIF: images/s, size, SSIM
//              (avif.ts)
//   thumbnail  video_thumbnail 50 minutes into a 60-minute video vs one plain ffmpeg command
//              (thumbnail.ts)
//   rss        peak RSS of a runner resizing a 50-megapixel JPEG through the stack (S3 GET, resize,
//              S3 PUT, reports to Redis) vs imgproxy (IMGPROXY_BIN) and vipsthumbnail (rss.ts)
//
// Media is generated once into BENCH_CACHE_DIR (bench/fixtures.ts). Knobs (environment):
//   BENCH_RESIZE_JOBS (60), BENCH_RESIZE_ROUNDS (7), BENCH_RESIZE_FRESH_JOBS (12),
//   BENCH_RESIZE_MAX_JOBS (executor.local_runner_max_jobs of the measured stack; default: the config's)
//   BENCH_RESIZE_PATCH   sharp settings for the runner processes, JSON (bench/sharp-patch.ts)
//   BENCH_RUNNER_ENV     extra environment of the runner processes, JSON (e.g. {"MALLOC_ARENA_MAX":"2"})
//   BENCH_THUMB_ROUNDS (7), BENCH_RSS_ROUNDS (3), BENCH_AVIF_JOBS (30), BENCH_AVIF_ROUNDS (7)
//
// Every figure is the median over the rounds with its [min–max] spread, every ratio the median of
// the per-round ratios (bench/stats.ts). Resize and AVIF run 7 rounds (were 3): over three rounds
// the spread of stack/bare and stack/imgproxy was as wide as the 0.1 the claims turn on; seven take
// about a minute each.
//   IMGPROXY_BIN         an imgproxy binary (bench/imgproxy.ts): its figures beside ours, else skipped
//   BENCH_NODE           the node binary of the runner processes (resize) and resize processes (rss)
//   BENCH_RUNNER_SOURCE=1  runners from source under tsx instead of compiled (bench/compile.ts)
import { execFile, fork, type ChildProcess } from "node:child_process";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { RoundResult, ServerReply, ServerRequest } from "./resize-server.js";
import { RUNNER_NODE_FLAGS } from "../core/config/runner-env.js";
import { ratio, summarize } from "./stats.js";

export const run = promisify(execFile);
// Read before anything here loads sharp (see shellEnv in rss.ts).
export const ORIGINAL_VIPSHOME = process.env.VIPSHOME;
export const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
export const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
export const json = <T>(name: string): T | undefined => {
  const raw = process.env[name];
  return raw ? (JSON.parse(raw) as T) : undefined;
};
export const log = (line: string) => console.error(line);
export const fmt = (n: number, digits = 2) => n.toFixed(digits);

type Request = ServerRequest extends infer R ? (R extends { id: number } ? Omit<R, "id"> : never) : never;

/**
 * The child process holding the stack and the bare loop (bench/resize-server.ts), compiled (its
 * runners then start from the compiled cli.js, as in production) or, with BENCH_RUNNER_SOURCE=1,
 * from source under tsx (runners too).
 */
export class ResizeServer {
  private readonly child: ChildProcess;
  private nextId = 0;
  private readonly pending = new Map<
    number,
    { resolve: (r: RoundResult) => void; reject: (e: Error) => void }
  >();
  private readonly exited: Promise<void>;

  constructor(compiledDir: string | undefined) {
    this.child = fork(
      compiledDir ? join(compiledDir, "bench", "resize-server.js") : here("./resize-server.ts"),
      [],
      {
        // With the runner's V8 flags: the bare loop there does a runner's work, as a runner would.
        execArgv: [...RUNNER_NODE_FLAGS, ...(compiledDir ? [] : ["--import", "tsx"])],
        ...(process.env.BENCH_NODE ? { execPath: process.env.BENCH_NODE } : {}),
        stdio: ["ignore", "ignore", "inherit", "ipc"],
        serialization: "json",
        // The AWS SDK warns once per process on Node < 22: once per runner process, on stderr.
        env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" },
      },
    );
    this.child.on("message", (reply: ServerReply) => {
      const waiter = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if (reply.ok) waiter?.resolve(reply.result);
      else waiter?.reject(new Error(reply.error));
    });
    this.exited = new Promise((resolve) =>
      this.child.once("exit", (code) => {
        for (const waiter of this.pending.values())
          waiter.reject(new Error(`bench server exited with ${code}`));
        this.pending.clear();
        resolve();
      }),
    );
  }

  send(request: Request): Promise<RoundResult> {
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.send({ ...request, id });
    });
  }

  async close(): Promise<void> {
    if (this.child.connected) await this.send({ cmd: "stop" }).catch(() => undefined);
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    await this.exited;
    clearTimeout(timer);
  }
}

export interface Rate {
  jobSeconds: number[];
  processorSeconds: number[];
  retried: number;
  jobs: number;
  failed: number;
  error?: string;
  seconds: number;
  rounds: number[];
  outputBytes?: number;
}

export const addRound = (rate: Rate, r: RoundResult) => {
  rate.jobs += r.jobs;
  rate.failed += r.failed ?? 0;
  rate.retried += r.retried ?? 0;
  rate.error ??= r.error;
  rate.seconds += r.seconds;
  rate.rounds.push(r.jobs / r.seconds);
  if (r.outputBytes !== undefined) rate.outputBytes = r.outputBytes;
  if (r.jobSeconds !== undefined) rate.jobSeconds.push(r.jobSeconds);
  if (r.processorSeconds !== undefined) rate.processorSeconds.push(r.processorSeconds);
};
export const newRate = (): Rate => ({
  jobs: 0,
  failed: 0,
  retried: 0,
  seconds: 0,
  rounds: [],
  jobSeconds: [],
  processorSeconds: [],
});
/** A target's jobs/s over its rounds. */
export const perSecond = (r: Rate) => summarize(r.rounds);
/** a / b round by round (both measured in the same rounds, back to back). */
export const rateRatio = (a: Rate, b: Rate) => ratio(a.rounds, b.rounds);

/** image_resize's box in the resize benchmark (bench/resize-server.ts RESIZE, cover). */
export const RESIZE_BOX = { width: 800, height: 600 };

export async function fileSize(path: string): Promise<number> {
  return (await stat(path)).size;
}

/**
 * Runs each target once per round, the order turned round by round (round 1 a, b; round 2 b, a;
 * …), so neither always runs on the machine the other left; `name` and `show` word the log line
 * of each round.
 */
export async function alternate<T>(
  name: string,
  rounds: number,
  targets: Record<string, () => Promise<T>>,
  show: (value: T) => string,
): Promise<Record<string, T[]>> {
  const values: Record<string, T[]> = {};
  for (let round = 1; round <= rounds; round++) {
    const order = Object.entries(targets);
    if (round % 2 === 0) order.reverse();
    for (const [target, measure] of order) (values[target] ??= []).push(await measure());
    log(
      `${name} round ${round}/${rounds}: ` +
        Object.keys(targets)
          .map((t) => `${t} ${show(values[t]!.at(-1)!)}`)
          .join(", "),
    );
  }
  return values;
}
