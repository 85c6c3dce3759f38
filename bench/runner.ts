// The runner's benchmarks: each compares the runner with the plainest way of doing the same work,
// side by side in one run, alternating the two across rounds so drift on a shared machine hits both
// alike. They print figures and ratios, never pass/fail.
//
//   resize     image_resize jobs/s through the whole local stack vs a bare S3 → sharp → S3 loop, sharp
//              alone in memory, and imgproxy serving the file from disk (IMGPROXY_BIN)
//   avif       image_resize to AVIF through the local stack vs imgproxy's AVIF: images/s, size, SSIM
//   thumbnail  video_thumbnail 50 minutes into a 60-minute video vs one plain ffmpeg command
//   rss        peak RSS of a runner resizing a 50-megapixel JPEG through the stack (S3 GET, resize,
//              S3 PUT, reports to Redis) vs imgproxy (IMGPROXY_BIN) and vipsthumbnail
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
import { loadConfig } from "../core/config/load.js";
import { execFile, fork, spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { compileProject } from "./compile.js";
import { processContext } from "./context.js";
import { longVideo, photo } from "./fixtures.js";
import type { RoundResult, ServerReply, ServerRequest } from "./resize-server.js";
import type { AvifOptions, HeifTune, Sharp } from "sharp";
import type { SharpPatch } from "./sharp-patch.js";
import { imgproxyBinary, imgproxyPath, imgproxyRound, startImgproxy, type Imgproxy } from "./imgproxy.js";
import { RUNNER_NODE_FLAGS, RUNNER_PROCESS_ENV } from "../core/config/runner-env.js";
import { formatRatio, formatSummary, median, printTable, ratio, summarize, type Summary } from "./stats.js";

const run = promisify(execFile);
// Read before anything here loads sharp (see shellEnv).
const ORIGINAL_VIPSHOME = process.env.VIPSHOME;
const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const json = <T>(name: string): T | undefined => {
  const raw = process.env[name];
  return raw ? (JSON.parse(raw) as T) : undefined;
};
const log = (line: string) => console.error(line);
const fmt = (n: number, digits = 2) => n.toFixed(digits);

// ---------------------------------------------------------------------------------------------
// (a) image_resize throughput

type Request = ServerRequest extends infer R ? (R extends { id: number } ? Omit<R, "id"> : never) : never;

/**
 * The child process holding the stack and the bare loop (bench/resize-server.ts), compiled (its
 * runners then start from the compiled cli.js, as in production) or, with BENCH_RUNNER_SOURCE=1,
 * from source under tsx (runners too).
 */
class ResizeServer {
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

interface Rate {
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

const addRound = (rate: Rate, r: RoundResult) => {
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
const newRate = (): Rate => ({
  jobs: 0,
  failed: 0,
  retried: 0,
  seconds: 0,
  rounds: [],
  jobSeconds: [],
  processorSeconds: [],
});
/** A target's jobs/s over its rounds. */
const perSecond = (r: Rate) => summarize(r.rounds);
/** a / b round by round (both measured in the same rounds, back to back). */
const rateRatio = (a: Rate, b: Rate) => ratio(a.rounds, b.rounds);

/** What the resize benchmark measured, jobs/s per target and ratios round by round. */
export interface ResizeFigures {
  stack: Summary;
  bare: Summary;
  stackOverBare: Summary;
  /** Without IMGPROXY_BIN: absent. */
  imgproxy?: Summary;
  stackOverImgproxy?: Summary;
}

/** image_resize's box in the resize benchmark (bench/resize-server.ts RESIZE, cover). */
const RESIZE_BOX = { width: 800, height: 600 };

export async function resizeBenchmark(): Promise<ResizeFigures> {
  const jobs = num("BENCH_RESIZE_JOBS", 60);
  const rounds = num("BENCH_RESIZE_ROUNDS", 7);
  const freshJobs = num("BENCH_RESIZE_FRESH_JOBS", 12);
  const concurrency = 2;
  // executor.local_runner_max_jobs: its default unless BENCH_RESIZE_MAX_JOBS says otherwise.
  const maxJobs = num("BENCH_RESIZE_MAX_JOBS", loadConfig({ env: {} }).executor.localRunnerMaxJobs);
  const patch = json<SharpPatch>("BENCH_RESIZE_PATCH");
  const env = json<Record<string, string>>("BENCH_RUNNER_ENV");
  const source = await photo(3000, 2000);
  const fromSource = process.env.BENCH_RUNNER_SOURCE === "1";
  const server = new ResizeServer(fromSource ? undefined : await compileProject());
  const stack = newRate();
  const bare = newRate();
  const bareEnc = newRate();
  const fresh = newRate();
  const extra = newRate();
  const raw = newRate();
  const proxied = newRate();
  const imgproxyBin = imgproxyBinary();
  let proxy: Imgproxy | undefined;
  const proxyPath = imgproxyPath(source, { ...RESIZE_BOX, type: "fill", format: "jpg", quality: 85 });
  try {
    await server.send({ cmd: "setup", source, concurrency });
    if (imgproxyBin) {
      proxy = await startImgproxy(imgproxyBin, source, { workers: concurrency });
      await imgproxyRound(proxy, proxyPath, 10, concurrency);
    }
    await server.send({ cmd: "raw", jobs: 10 });
    const stackRound = (n: number, runnerMaxJobs: number, runners?: number) =>
      server.send({
        cmd: "stack",
        jobs: n,
        maxJobs: runnerMaxJobs,
        ...(patch ? { patch } : {}),
        ...(env ? { env } : {}),
        ...(runners ? { runners } : {}),
      });
    // Warm-up of both, not counted: runner processes started and their processor loaded, the
    // connection pools and sharp of the bare loop.
    await stackRound(10, maxJobs);
    await server.send({ cmd: "bare", jobs: 10 });
    await server.send({ cmd: "bare", jobs: 4, runnerEncoder: true });
    for (let round = 1; round <= rounds; round++) {
      addRound(bare, await server.send({ cmd: "bare", jobs }));
      addRound(stack, await stackRound(jobs, maxJobs));
      addRound(bareEnc, await server.send({ cmd: "bare", jobs, runnerEncoder: true }));
      addRound(raw, await server.send({ cmd: "raw", jobs }));
      if (proxy) addRound(proxied, await imgproxyRound(proxy, proxyPath, jobs, concurrency));
      log(
        `resize round ${round}/${rounds}: stack ${fmt(stack.rounds.at(-1)!, 1)} jobs/s ` +
          `(job ${Math.round(1000 * stack.jobSeconds.at(-1)!)} ms, processor ${Math.round(1000 * stack.processorSeconds.at(-1)!)} ms), ` +
          `bare ${fmt(bare.rounds.at(-1)!, 1)} jobs/s, bare with the runner's encoder ${fmt(bareEnc.rounds.at(-1)!, 1)} jobs/s, ` +
          `raw sharp ${fmt(raw.rounds.at(-1)!, 1)}/s` +
          (proxy ? `, imgproxy ${fmt(proxied.rounds.at(-1)!, 1)}/s` : ""),
      );
    }
    // One runner more than the cores: fills the time both runners wait on a request (information;
    // every other target runs at `concurrency`). Its own rounds, after a warm-up of its runners.
    await stackRound(10, maxJobs, concurrency + 1);
    for (let round = 1; round <= Math.min(rounds, 3); round++)
      addRound(extra, await stackRound(jobs, maxJobs, concurrency + 1));
    log(`resize, local_concurrency ${concurrency + 1}: ${formatSummary(perSecond(extra), 1)} jobs/s`);
    if (freshJobs > 0) {
      await stackRound(2, 1);
      addRound(fresh, await stackRound(freshJobs, 1));
      log(`resize, a fresh runner process per job: ${fmt(fresh.rounds.at(-1)!, 2)} jobs/s`);
    }
  } finally {
    await proxy?.stop();
    await server.close();
  }

  const row = (r: Rate) => ({
    "jobs/s": formatSummary(perSecond(r)),
    "ms/job": Math.round(1000 / perSecond(r).median),
    "per round": r.rounds.map((x) => fmt(x, 1)).join(" "),
    "output bytes": r.outputBytes,
    failed: r.failed,
    retried: r.retried,
  });
  console.log(
    `\nimage_resize throughput: 3000x2000 JPEG (${Math.round((await fileSize(source)) / 1024)} KiB) -> 800x600 JPEG q85, ` +
      `concurrency ${concurrency}`,
  );
  console.log(
    `(${jobs} jobs per round, ${rounds} alternating rounds after a warm-up; jobs/s: median [min–max] ` +
      `of the rounds; ratios: median [min–max] of the per-round ratios)` +
      (patch ? `\nrunner sharp settings: ${JSON.stringify(patch)}` : "") +
      (env ? `\nrunner environment: ${JSON.stringify(env)}` : "") +
      "\n",
  );
  printTable({
    [`local stack (API → executor → runner, local_runner_max_jobs ${maxJobs})`]: row(stack),
    "bare loop (S3 GET → sharp → S3 PUT, in memory)": row(bare),
    "bare loop with the runner's JPEG encoder (encode.ts)": row(bareEnc),
    "raw sharp in memory (file bytes → sharp → buffer)": row(raw),
    ...(proxy ? { "imgproxy (file on local disk → HTTP answer, fill 800x600)": row(proxied) } : {}),
    [`local stack, local_concurrency ${concurrency + 1} (a runner more than the concurrency)`]: row(extra),
    ...(fresh.jobs > 0 ? { "local stack, local_runner_max_jobs 1 (a process per job)": row(fresh) } : {}),
  });
  for (const [name, r] of Object.entries({ stack, fresh })) {
    if (r.failed > 0) console.log(`${name}: ${r.failed} job(s) failed, e.g. ${r.error}`);
  }
  console.log(
    `throughput ratio stack/bare:          ${formatRatio(rateRatio(stack, bare), { atLeast: 0.9 })}`,
  );
  if (proxy) {
    console.log(
      `throughput ratio stack/imgproxy:      ${formatRatio(rateRatio(stack, proxied), { atLeast: 1 })}`,
    );
    console.log(`throughput ratio bare/imgproxy:       ${formatRatio(rateRatio(bare, proxied))}`);
  } else {
    console.log("imgproxy: skipped (set IMGPROXY_BIN to an imgproxy binary; docs/development.md)");
  }
  console.log(`throughput ratio stack/raw sharp:     ${formatRatio(rateRatio(stack, raw))}`);
  console.log(
    `throughput ratio stack/bare with the runner's encoder: ${formatRatio(rateRatio(stack, bareEnc))}`,
  );
  // Measured in rounds of their own, after the alternating ones: the ratio of medians, marked so.
  console.log(
    `stack at local_concurrency ${concurrency + 1}/bare: ${fmt(perSecond(extra).median / perSecond(bare).median)} ` +
      `(ratio of medians, not paired; information)` +
      (proxy ? `; /imgproxy: ${fmt(perSecond(extra).median / perSecond(proxied).median)}` : ""),
  );
  if (fresh.jobs > 0) {
    console.log(
      `a process per job (max_jobs 1)/bare:  ${fmt(perSecond(fresh).median / perSecond(bare).median)} ` +
        `(ratio of medians, one round; information)`,
    );
  }
  return {
    stack: perSecond(stack),
    bare: perSecond(bare),
    stackOverBare: rateRatio(stack, bare),
    ...(proxy ? { imgproxy: perSecond(proxied), stackOverImgproxy: rateRatio(stack, proxied) } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// (a2) image_resize to AVIF against imgproxy's AVIF

/** What the AVIF benchmark measured: images/s per target, the ratio round by round, sizes. */
export interface AvifFigures {
  stack: Summary;
  /** Without IMGPROXY_BIN: absent, and so are the rest. */
  imgproxy?: Summary;
  stackOverImgproxy?: Summary;
  /** Our output's size at imgproxy's SSIM (the first of our qualities 40, 45 … 90 reaching it) / its. */
  sizeAtEqualSsim?: number;
}

export async function avifBenchmark(): Promise<AvifFigures> {
  const jobs = num("BENCH_AVIF_JOBS", 30);
  const rounds = num("BENCH_AVIF_ROUNDS", 7);
  const quality = num("BENCH_AVIF_QUALITY", 65);
  const concurrency = 2;
  const source = await photo(3000, 2000);
  // Loaded here, not at the top: importing sharp sets VIPSHOME in this process (see shellEnv).
  const { bytesAt, encodeFor, ssimAgainst } = await import("./encoders.js");
  const { avifSettings, encode } = await import("../runner/image/encode.js");
  const { sharp } = await import("../runner/image/settings.js");
  const imgproxyBin = imgproxyBinary();
  const server = new ResizeServer(
    process.env.BENCH_RUNNER_SOURCE === "1" ? undefined : await compileProject(),
  );
  let proxy: Imgproxy | undefined;
  const ours = newRate();
  const theirs = newRate();
  let ourOutput: Buffer | undefined;
  let theirOutput: Buffer | undefined;
  let theirReference: Buffer | undefined;
  const proxyPath = (q: number, format: "avif" | "png" = "avif") =>
    imgproxyPath(source, { ...RESIZE_BOX, type: "fill", format, quality: q });
  // Ours, lossless: what the processor resizes before it encodes (cover, centre), as PNG.
  const ourReference = await sharp(source)
    .autoOrient()
    .resize(RESIZE_BOX.width, RESIZE_BOX.height)
    .png()
    .toBuffer();
  try {
    await server.send({ cmd: "setup", source, concurrency });
    const stackRound = (n: number, q: number, keepOutput = false) =>
      server.send({
        cmd: "stack",
        jobs: n,
        maxJobs: loadConfig({ env: {} }).executor.localRunnerMaxJobs,
        format: "avif",
        quality: q,
        keepOutput,
      });
    if (imgproxyBin) {
      proxy = await startImgproxy(imgproxyBin, source, { workers: concurrency });
      await imgproxyRound(proxy, proxyPath(quality), 4, concurrency);
      theirOutput = await proxy.get(proxyPath(quality));
      theirReference = await proxy.get(proxyPath(100, "png"));
    }
    ourOutput = Buffer.from((await stackRound(4, quality, true)).output!, "base64");
    for (let round = 1; round <= rounds; round++) {
      addRound(ours, await stackRound(jobs, quality));
      if (proxy) addRound(theirs, await imgproxyRound(proxy, proxyPath(quality), jobs, concurrency));
      log(
        `avif round ${round}/${rounds}: stack ${fmt(ours.rounds.at(-1)!, 1)} jobs/s` +
          (proxy ? `, imgproxy ${fmt(theirs.rounds.at(-1)!, 1)}/s` : ""),
      );
    }
  } finally {
    await proxy?.stop();
    await server.close();
  }
  const ourScore = await ssimAgainst(ourReference, ourOutput);
  console.log(
    `\nimage_resize to AVIF: 3000x2000 JPEG -> 800x600 AVIF q${quality} (effort and subsampling of ` +
      `encode.ts avifSettings("standard"): ${JSON.stringify(avifSettings("standard"))}), concurrency ${concurrency}`,
  );
  console.log(
    `(${jobs} jobs per round, ${rounds} alternating rounds; images/s: median [min–max] of the rounds; ` +
      `SSIM against each one's own lossless resize)\n`,
  );
  const table: Record<string, Record<string, unknown>> = {
    "local stack (image_resize, avif)": {
      "images/s": formatSummary(perSecond(ours)),
      "per round": ours.rounds.map((x) => fmt(x, 1)).join(" "),
      bytes: ourOutput.length,
      SSIM: Number(ourScore.ssim.toFixed(4)),
      "SSIM-Y": Number(ourScore.ssimY.toFixed(4)),
    },
  };
  if (!proxy) {
    printTable(table);
    console.log("imgproxy: skipped (set IMGPROXY_BIN to an imgproxy binary; docs/development.md)");
    return { stack: perSecond(ours) };
  }
  const theirScore = await ssimAgainst(theirReference!, theirOutput!);
  table[`imgproxy (avif, q${quality})`] = {
    "images/s": formatSummary(perSecond(theirs)),
    "per round": theirs.rounds.map((x) => fmt(x, 1)).join(" "),
    bytes: theirOutput!.length,
    SSIM: Number(theirScore.ssim.toFixed(4)),
    "SSIM-Y": Number(theirScore.ssimY.toFixed(4)),
  };
  // An encoder setting at qualities 40-90 on the same lossless resize: size and SSIM of each.
  const sweepOf = async (encodeAt: (q: number) => Sharp) => {
    const points: Array<{ quality: number; bytes: number; ssim: number; ssimY: number }> = [];
    for (let q = 40; q <= 90; q += 5) {
      const encoded = await encodeAt(q).toBuffer();
      points.push({ quality: q, bytes: encoded.length, ...(await ssimAgainst(ourReference, encoded)) });
    }
    return points;
  };
  // Ours, as the runner encodes: the size it needs for imgproxy's SSIM.
  const oursAt = (q: number) =>
    encode(sharp(ourReference), { format: "avif", quality: q, mode: "standard", hasAlpha: false });
  const sweep = await sweepOf(oursAt);
  const atEqual = sweep.find((p) => p.ssim >= theirScore.ssim);
  if (atEqual) {
    table[`ours at equal SSIM (q${atEqual.quality}, encode alone)`] = {
      bytes: atEqual.bytes,
      SSIM: Number(atEqual.ssim.toFixed(4)),
    };
  }
  printTable(table);
  console.log(
    `our quality sweep (size, SSIM): ${sweep.map((p) => `q${p.quality} ${p.bytes} ${p.ssim.toFixed(4)}`).join(", ")}`,
  );
  console.log(
    `throughput ratio ours/imgproxy:       ${formatRatio(rateRatio(ours, theirs), { atLeast: 1 })}`,
  );
  console.log(
    `size ratio ours/imgproxy at q${quality}:     ${fmt(ourOutput.length / theirOutput!.length)} ` +
      `(SSIM ${ourScore.ssim.toFixed(4)} vs ${theirScore.ssim.toFixed(4)})`,
  );
  if (atEqual) {
    console.log(
      `size ratio at equal SSIM (ours q${atEqual.quality}): ${fmt(atEqual.bytes / theirOutput!.length)} (target <= 1.00)`,
    );
  }
  // Other settings of our encoder on the same lossless resize: the size each needs for imgproxy's
  // SSIM and SSIM-Y (interpolated between its qualities), and its encode CPU at the benchmark's quality.
  const standard = avifSettings("standard");
  const avifAt = (effort: number, chromaSubsampling: "4:2:0" | "4:4:4", tune: HeifTune) => (q: number) =>
    sharp(ourReference).avif({ quality: q, effort, chromaSubsampling, tune });
  const settings: Record<string, (q: number) => Sharp> = {
    [`${describeAvif(standard)} (ours)`]: oursAt,
  };
  for (const effort of [0, 1])
    for (const chromaSubsampling of ["4:2:0", "4:4:4"] as const)
      for (const tune of ["iq", "ssim"] as const) {
        const name = describeAvif({ effort, chromaSubsampling, tune });
        if (!(`${name} (ours)` in settings)) settings[name] = avifAt(effort, chromaSubsampling, tune);
      }
  const others: Record<string, Record<string, number | string>> = {};
  for (const [name, encodeAt] of Object.entries(settings)) {
    const points = encodeAt === oursAt ? sweep : await sweepOf(encodeAt);
    const cpu = process.cpuUsage();
    for (let i = 0; i < 4; i++) await encodeAt(quality).toBuffer();
    const used = process.cpuUsage(cpu);
    const ratio = (score: "ssim" | "ssimY") => {
      const at = bytesAt(points, score, theirScore[score]);
      return at === undefined ? "n/a" : Number(fmt(at / theirOutput!.length));
    };
    others[name] = {
      "size at imgproxy's SSIM": ratio("ssim"),
      "at its SSIM-Y": ratio("ssimY"),
      [`encode CPU ms (q${quality})`]: Math.round((used.user + used.system) / 1000 / 4),
    };
  }
  console.log(`\nour encoder's settings against imgproxy's q${quality} (size ratios at equal score):`);
  printTable(others);

  // The encoder alone: the lossless resize (its PNG, in memory) encoded `concurrency` at a time for
  // ENCODE_ALONE_MS each, with one libvips thread per encode and with the runner's; no stack around it
  // can be faster.
  const alone: Record<string, Record<string, number>> = {};
  const encoders: Record<string, (q: number) => Sharp> = {
    [`${describeAvif(standard)} (ours)`]: oursAt,
    "effort 1, 4:2:0, tune ssim (imgproxy's settings)": avifAt(1, "4:2:0", "ssim"),
  };
  const threads = sharp.concurrency();
  try {
    for (const [name, encodeAt] of Object.entries(encoders)) {
      const row: Record<string, number> = {};
      for (const n of new Set([1, threads])) {
        sharp.concurrency(n);
        await encodeAt(quality).toBuffer();
        const { perSecond } = await encodeFor(
          () => encodeAt(quality).toBuffer(),
          ENCODE_ALONE_MS,
          concurrency,
        );
        row[`images/s, ${n} libvips thread${n === 1 ? "" : "s"} each`] = Number(fmt(perSecond));
      }
      alone[name] = row;
    }
  } finally {
    sharp.concurrency(threads);
  }
  console.log(
    `\nthe encoder alone (q${quality}, in memory, ${concurrency} at a time), against imgproxy's ` +
      `${formatSummary(perSecond(theirs))} through its server:`,
  );
  printTable(alone);
  return {
    stack: perSecond(ours),
    imgproxy: perSecond(theirs),
    stackOverImgproxy: rateRatio(ours, theirs),
    ...(atEqual ? { sizeAtEqualSsim: atEqual.bytes / theirOutput!.length } : {}),
  };
}

/** How long the AVIF benchmark encodes with each setting alone. */
const ENCODE_ALONE_MS = 5000;

/** An AVIF setting as the tables name it: "effort 1, 4:2:0, tune ssim". */
function describeAvif(o: Pick<AvifOptions, "effort" | "chromaSubsampling" | "tune">): string {
  return `effort ${o.effort}, ${o.chromaSubsampling}, tune ${o.tune ?? "auto"}`;
}

async function fileSize(path: string): Promise<number> {
  return (await stat(path)).size;
}

// ---------------------------------------------------------------------------------------------
// (b) a video thumbnail far into a long video

const THUMB_SECONDS = 3000;

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await work();
  return { ms: performance.now() - started, value };
}

export async function thumbnailBenchmark(): Promise<{ processorOverFfmpeg: Summary }> {
  const rounds = num("BENCH_THUMB_ROUNDS", 7);
  const video = await longVideo();
  const { videoThumbnail } = await import("../jobs/video_thumbnail/processor.js");
  const work = await mkdtemp(join(tmpdir(), "media-service-bench-thumb-"));
  const processor = async () => {
    const bench = await processContext("video_thumbnail", video, { timestamp: "00:50:00", format: "jpeg" });
    try {
      return await videoThumbnail(bench.ctx);
    } finally {
      await bench.cleanup();
    }
  };
  const ffmpegArgs = ["-v", "error", "-y", "-ss", String(THUMB_SECONDS), "-i", video, "-frames:v", "1"];
  const targets: Record<string, () => Promise<unknown>> = {
    processor,
    ffmpeg: () => run("ffmpeg", [...ffmpegArgs, join(work, "out.jpg")]),
    // Where the time goes: one ffprobe of the source, and starting ffmpeg at all.
    probe: () => run("ffprobe", ["-v", "error", "-show_format", "-show_streams", "-of", "json", video]),
    spawn: () => run("ffmpeg", ["-version"]),
  };
  const ms: Record<string, number[]> = {};
  let cold = 0;
  let result: Record<string, unknown> = {};
  try {
    // The first call in a process also loads fluent-ffmpeg, sharp (for the header), and pays
    // fluent-ffmpeg's one-off capability checks (`ffmpeg -formats`, `ffmpeg -encoders`): what the
    // first video job of a runner process pays.
    cold = (await timed(processor)).ms;
    for (const target of Object.values(targets)) await target();
    for (let round = 1; round <= rounds; round++) {
      for (const [name, target] of Object.entries(targets)) {
        const t = await timed(target);
        (ms[name] ??= []).push(t.ms);
        if (name === "processor") result = (t.value as { result: Record<string, unknown> }).result;
      }
      log(
        `thumbnail round ${round}/${rounds}: processor ${Math.round(ms.processor!.at(-1)!)} ms, ` +
          `ffmpeg ${Math.round(ms.ffmpeg!.at(-1)!)} ms`,
      );
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  const row = (name: string) => ({ "ms, median [min–max]": formatSummary(summarize(ms[name]!), 0) });
  const processorOverFfmpeg = ratio(ms.processor!, ms.ffmpeg!);
  console.log(`\nvideo_thumbnail at 00:50:00 of a 60-minute 320x240 H.264 video (5 fps, keyframe every 5 s)`);
  console.log(
    `(median [min–max] of ${rounds} alternating rounds, the ratio of each round's own; the processor ` +
      `called in-process as the runner calls it)\n`,
  );
  printTable({
    "runner processor (video_thumbnail)": row("processor"),
    [`ffmpeg -ss ${THUMB_SECONDS} -i f -frames:v 1 out.jpg`]: row("ffmpeg"),
    "processor, first call in a process": { "ms, median [min–max]": Math.round(cold).toString() },
    "ffprobe of the source alone": row("probe"),
    "ffmpeg -version (starting ffmpeg at all)": row("spawn"),
  });
  console.log(`processor result: ${JSON.stringify(result)}`);
  console.log(`time ratio processor/ffmpeg:          ${formatRatio(processorOverFfmpeg, { atMost: 1.2 })}`);
  return { processorOverFfmpeg };
}

// ---------------------------------------------------------------------------------------------
// (c) peak RSS of a 50-megapixel resize

/** What the rss benchmark measured: peak RSS in MiB over its runs (the README's row). */
export interface RssFigures {
  runner: Summary;
  /** Without IMGPROXY_BIN: absent, and so is the ratio (runner and imgproxy alternate run by run). */
  imgproxy?: Summary;
  runnerOverImgproxy?: Summary;
  /** node with sharp loaded, idle. */
  floor: Summary;
}

interface Peak {
  /** Peak RSS (GNU time's maximum resident set size, else VmHWM as the script read it). */
  kb: number;
  /** Highest anonymous and file-backed RSS seen while polling /proc every few ms (approximate). */
  anonKb: number;
  fileKb: number;
  ms: number;
}

function procStatus(pid: number): { anonKb: number; fileKb: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/status`, "utf8");
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? 0);
    return { anonKb: field("RssAnon"), fileKb: field("RssFile") };
  } catch {
    return undefined;
  }
}

/** The process GNU time runs (its only child). */
function childOf(pid: number): number | undefined {
  try {
    const first = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/)[0];
    return first ? Number(first) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The environment as the shell gave it. Loading sharp sets VIPSHOME (to its build prefix) in this
 * process's environment; a Debian vipsthumbnail inheriting it looks for its loadable modules
 * (ImageMagick, poppler, HEIF, ...) there, finds none, and peaks ~8 MiB lower than as users run it.
 */
function shellEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (ORIGINAL_VIPSHOME === undefined) delete env.VIPSHOME;
  else env.VIPSHOME = ORIGINAL_VIPSHOME;
  return { ...env, ...extra };
}

/** Runs a command to its end; its peak RSS from GNU time (or, without it, from the script). */
async function peak(command: string, args: string[], env: NodeJS.ProcessEnv = shellEnv()): Promise<Peak> {
  const gnuTime = existsSync("/usr/bin/time");
  const argv = gnuTime ? ["-f", "maxrss_kb=%M", command, ...args] : args;
  const started = performance.now();
  let anonKb = 0;
  let fileKb = 0;
  const { stdout, stderr } = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(gnuTime ? "/usr/bin/time" : command, argv, {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
    const poll = setInterval(() => {
      const pid = gnuTime ? childOf(child.pid!) : child.pid;
      const now = pid ? procStatus(pid) : undefined;
      if (now) {
        anonKb = Math.max(anonKb, now.anonKb);
        fileKb = Math.max(fileKb, now.fileKb);
      }
    }, 2);
    child.once("error", (e) => {
      clearInterval(poll);
      reject(e);
    });
    child.once("close", (code) => {
      clearInterval(poll);
      if (code !== 0) reject(new Error(`${command} ${args.join(" ")} exited with ${code}: ${err.trim()}`));
      else resolve({ stdout: out, stderr: err });
    });
  });
  const ms = performance.now() - started;
  const fromTime = /maxrss_kb=(\d+)/.exec(stderr)?.[1];
  if (fromTime) return { kb: Number(fromTime), anonKb, fileKb, ms };
  const line = stdout.trim().split("\n").at(-1);
  const hwm = line ? (JSON.parse(line) as { hwmKb?: number }).hwmKb : undefined;
  if (!hwm) throw new Error(`no peak RSS for ${command}: install GNU time (apt-get install time)`);
  return { kb: hwm, anonKb, fileKb, ms };
}

/**
 * imgproxy's peak RSS over its whole life: started under GNU time, one request resizing `file` to
 * 800 px wide (JPEG q85, as the runner's), then stopped. Its idle floor is included, as the
 * runner's node + sharp is.
 */
async function imgproxyPeak(binary: string, file: string): Promise<Peak> {
  if (!existsSync("/usr/bin/time"))
    throw new Error("imgproxy's peak RSS needs GNU time (apt-get install time)");
  const started = performance.now();
  const wrapper = join(tmpdir(), `media-service-bench-imgproxy-${process.pid}.sh`);
  const { writeFile } = await import("node:fs/promises");
  // GNU time around imgproxy, writing its figure to a file (imgproxy's stderr stays its own).
  const report = `${wrapper}.out`;
  await writeFile(wrapper, `#!/bin/sh\nexec /usr/bin/time -o "${report}" -f maxrss_kb=%M "$@"\n`, {
    mode: 0o755,
  });
  let anonKb = 0;
  let fileKb = 0;
  const proxy = await startImgproxy(wrapper, file, { workers: 2, binaryArgs: [binary] });
  const poll = setInterval(() => {
    const pid = proxy.pid ? childOf(proxy.pid) : undefined;
    const now = pid ? procStatus(pid) : undefined;
    if (now) {
      anonKb = Math.max(anonKb, now.anonKb);
      fileKb = Math.max(fileKb, now.fileKb);
    }
  }, 2);
  try {
    await proxy.get(imgproxyPath(file, { width: 800, height: 0, type: "fit", format: "jpg", quality: 85 }));
  } finally {
    clearInterval(poll);
    // imgproxy itself, so that GNU time outlives it and reports.
    await proxy.stop(proxy.pid ? childOf(proxy.pid) : undefined);
  }
  const text = readFileSync(report, "utf8");
  await rm(wrapper, { force: true });
  await rm(report, { force: true });
  const kb = Number(/maxrss_kb=(\d+)/.exec(text)?.[1]);
  if (!kb) throw new Error(`no peak RSS for imgproxy: ${text}`);
  return { kb, anonKb, fileKb, ms: performance.now() - started };
}

export async function rssBenchmark(): Promise<RssFigures> {
  const rounds = num("BENCH_RSS_ROUNDS", 3);
  const node = process.env.BENCH_NODE ?? process.execPath;
  const large = await photo(8660, 5773);
  const tiny = await photo(64, 64);
  const script = join(await compileProject(), "bench", "resize-once.js");
  const work = await mkdtemp(join(tmpdir(), "media-service-bench-rss-"));
  const out = (name: string) => join(work, name);
  const vips = (source: string, name: string, env?: NodeJS.ProcessEnv) =>
    peak("vipsthumbnail", [source, "--size", "800x", "-o", `${out(name)}[Q=85]`], env);
  const imgproxyBin = imgproxyBinary();
  const fromSource = process.env.BENCH_RUNNER_SOURCE === "1";
  const server = new ResizeServer(fromSource ? undefined : await compileProject());
  await server.send({ cmd: "setup", source: large, concurrency: 1 });
  const runnerEnv = json<Record<string, string>>("BENCH_RUNNER_ENV");
  const outputs: Record<string, Buffer> = {};
  let runnerIdle: number[] = [];
  const targets: Record<string, () => Promise<Peak>> = {
    // The real thing: a `runner --serve` process of the local executor doing the job through the
    // stack (S3 GET from the embedded store, resize, S3 PUT, its reports to Redis), started as every
    // runner process is (RUNNER_PROCESS_ENV, RUNNER_NODE_FLAGS; core/config/runner-env.ts).
    runner: async () => {
      const r = await server.send({
        cmd: "rss",
        source: large,
        keepOutput: !outputs.runner,
        ...(runnerEnv ? { env: runnerEnv } : {}),
      });
      if (r.output) outputs.runner = Buffer.from(r.output, "base64");
      runnerIdle.push(r.idleKb!);
      return { kb: r.peakKb!, anonKb: r.anonKb!, fileKb: r.fileKb!, ms: r.seconds * 1000 };
    },
    vipsthumbnail: () => vips(large, "vips.jpg"),
    ...(imgproxyBin ? { imgproxy: () => imgproxyPeak(imgproxyBin, large) } : {}),
  };
  const info: Record<string, () => Promise<Peak>> = {
    // What the README's figure was before it was measured through the stack: the processor alone on
    // a local file, no S3, no Redis, no runner loop.
    "runner's processor alone on a local file (resize-once)": async () => {
      const measured = await peak(
        node,
        [...RUNNER_NODE_FLAGS, script, "processor", large, "800", out("processor.jpg")],
        shellEnv({ ...RUNNER_PROCESS_ENV }),
      );
      outputs.processor ??= await readFile(out("processor.jpg"));
      return measured;
    },
    "node, nothing loaded": () => peak(node, [script, "node"]),
    "node + sharp loaded (import: ESM build)": () => peak(node, [script, "load-sharp"]),
    "node + sharp loaded (require: CommonJS build)": () => peak(node, [script, "load-sharp-cjs"]),
    "vipsthumbnail of a 64x64 JPEG (its floor)": () => vips(tiny, "tiny.jpg"),
    "vipsthumbnail without its loadable modules": () =>
      vips(large, "vips2.jpg", shellEnv({ VIPSHOME: "/nonexistent" })),
    "plain sharp(path).resize(800).jpeg(), ESM build": () =>
      peak(node, [script, "sharp", large, "800", out("sharp.jpg")]),
    "plain sharp(path).resize(800).jpeg(), CommonJS build": () =>
      peak(node, [script, "sharp-cjs", large, "800", out("sharp-cjs.jpg")]),
    "runner processor alone without RUNNER_PROCESS_ENV": () =>
      peak(node, [...RUNNER_NODE_FLAGS, script, "processor", large, "800", out("runner2.jpg")]),
    "runner processor alone without RUNNER_NODE_FLAGS": () =>
      peak(
        node,
        [script, "processor", large, "800", out("runner3.jpg")],
        shellEnv({ ...RUNNER_PROCESS_ENV }),
      ),
    "runner processor alone under tsx (npm run dev)": () =>
      peak(process.execPath, ["--import", "tsx", here("./resize-once.ts"), "processor", large, "800"]),
  };
  const peaks: Record<string, Peak[]> = {};
  try {
    for (let round = 1; round <= rounds; round++) {
      for (const [name, measure] of Object.entries(targets)) (peaks[name] ??= []).push(await measure());
      log(
        `rss round ${round}/${rounds}: runner ${Math.round(peaks.runner!.at(-1)!.kb / 1024)} MiB, ` +
          `vipsthumbnail ${Math.round(peaks.vipsthumbnail!.at(-1)!.kb / 1024)} MiB` +
          (peaks.imgproxy ? `, imgproxy ${Math.round(peaks.imgproxy.at(-1)!.kb / 1024)} MiB` : ""),
      );
    }
    for (const [name, measure] of Object.entries(info)) {
      for (let round = 1; round <= rounds; round++) (peaks[name] ??= []).push(await measure());
    }
  } finally {
    await server.close();
    await rm(work, { recursive: true, force: true });
  }
  peaks["runner --serve started, idle (before its job)"] = runnerIdle.map((kb) => ({
    kb,
    anonKb: 0,
    fileKb: 0,
    ms: 0,
  }));
  runnerIdle = [];
  const mib = (name: string, field: "kb" | "anonKb" | "fileKb" = "kb") =>
    median(peaks[name]!.map((p) => p[field])) / 1024;
  const table: Record<string, Record<string, number>> = {};
  for (const name of Object.keys(peaks)) {
    table[name] = {
      "peak RSS MiB": Number(fmt(mib(name), 1)),
      "~anon MiB": Number(fmt(mib(name, "anonKb"), 1)),
      "~file MiB": Number(fmt(mib(name, "fileKb"), 1)),
      "per run MiB": peaks[name]!.map((p) => fmt(p.kb / 1024, 1)).join(" ") as unknown as number,
      "wall ms": Math.round(median(peaks[name]!.map((p) => p.ms))),
    };
  }
  const nodeVersion = (await run(node, ["--version"])).stdout.trim();
  const sourceMiB = Math.round((await fileSize(large)) / 1048576);
  console.log(
    `\nPeak RSS resizing a 50-megapixel JPEG (8660x5773, ${sourceMiB} MiB) to 800 px wide, JPEG q85`,
  );
  console.log(
    `(median of ${rounds} runs, each a process of its own; peak RSS from ` +
      `${existsSync("/usr/bin/time") ? "GNU time" : "VmHWM"}, the runner's from its VmHWM once its job ` +
      `completed; ~anon/~file: the highest anonymous and file-backed RSS seen polling /proc every 2 ms; ` +
      `runner = a \`runner --serve\` process of the local executor doing the job through the stack ` +
      `(S3 GET, resize, S3 PUT, reports to Redis), compiled, on node ${nodeVersion})\n`,
  );
  console.table(table);
  const runnerMiB = mib("runner");
  const processorMiB = mib("runner's processor alone on a local file (resize-once)");
  const vipsMiB = mib("vipsthumbnail");
  const floor = mib("node + sharp loaded (import: ESM build)");
  const vipsFloor = mib("vipsthumbnail of a 64x64 JPEG (its floor)");
  const spread = (name: string) => {
    const kbs = peaks[name]!.map((p) => p.kb / 1024);
    return `${fmt(Math.min(...kbs), 1)}-${fmt(Math.max(...kbs), 1)}`;
  };
  if (peaks.imgproxy) {
    console.log(
      `peak RSS ratio runner/imgproxy:      ${fmt(runnerMiB / mib("imgproxy"))} (${fmt(runnerMiB, 1)} ` +
        `[${spread("runner")}] against ${fmt(mib("imgproxy"), 1)} [${spread("imgproxy")}] MiB; target < 1.00)`,
    );
  } else {
    console.log("imgproxy: skipped (set IMGPROXY_BIN to an imgproxy binary; docs/development.md)");
  }
  console.log(`peak RSS ratio runner/vipsthumbnail: ${fmt(runnerMiB / vipsMiB)} (information)`);
  console.log(
    `the stack's part: runner ${fmt(runnerMiB, 1)} MiB against its processor alone ` +
      `${fmt(processorMiB, 1)} (+${fmt(runnerMiB - processorMiB, 1)}; information)`,
  );
  console.log(
    `above each one's floor: runner +${fmt(runnerMiB - floor, 1)} MiB over node + sharp, ` +
      `vipsthumbnail +${fmt(vipsMiB - vipsFloor, 1)} MiB over its own (information)`,
  );
  const same = outputs.runner && outputs.processor && outputs.runner.equals(outputs.processor);
  console.log(
    `output: ${outputs.runner?.length ?? "?"} bytes, sha256 ` +
      `${outputs.runner ? createHash("sha256").update(outputs.runner).digest("hex").slice(0, 16) : "?"}, ` +
      `${same ? "the same bytes as" : "NOT the same bytes as"} the processor's alone`,
  );
  console.log(
    `node + sharp before any work / vipsthumbnail's whole peak: ${fmt(floor / vipsMiB)} (information)`,
  );
  const runs = (name: string) => peaks[name]!.map((p) => p.kb / 1024);
  return {
    runner: summarize(runs("runner")),
    ...(peaks.imgproxy
      ? { imgproxy: summarize(runs("imgproxy")), runnerOverImgproxy: ratio(runs("runner"), runs("imgproxy")) }
      : {}),
    floor: summarize(runs("node + sharp loaded (import: ESM build)")),
  };
}
