// npm run bench -- rss: peak RSS of a runner resizing a 50-megapixel JPEG through the stack (S3 GET,
// resize, S3 PUT, reports to Redis) vs imgproxy (IMGPROXY_BIN), vipsthumbnail and the node + sharp
// floor (BENCH_RSS_ROUNDS; bench/runner.ts).
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RUNNER_NODE_FLAGS, RUNNER_PROCESS_ENV } from "../core/config/runner-env.js";
import { compileProject } from "./compile.js";
import { photo } from "./fixtures.js";
import { imgproxyBinary, imgproxyPath, startImgproxy } from "./imgproxy.js";
import { fileSize, fmt, here, json, log, num, ORIGINAL_VIPSHOME, ResizeServer, run } from "./runner.js";
import { median, ratio, summarize, type Summary } from "./stats.js";

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
export function shellEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (ORIGINAL_VIPSHOME === undefined) delete env.VIPSHOME;
  else env.VIPSHOME = ORIGINAL_VIPSHOME;
  return { ...env, ...extra };
}

/** Runs a command to its end; its peak RSS from GNU time (or, without it, from the script). */
export async function peak(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv = shellEnv(),
): Promise<Peak> {
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
  let runnerIdleRss: number[] = [];
  let runnerJob: number[] = [];
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
      runnerIdleRss.push(r.idleRssKb!);
      if (r.jobPeakKb !== undefined) runnerJob.push(r.jobPeakKb);
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
  const only = (kbs: number[]) => kbs.map((kb) => ({ kb, anonKb: 0, fileKb: 0, ms: 0 }));
  peaks["runner --serve, its start's peak (VmHWM once idle)"] = only(runnerIdle);
  peaks["runner --serve idle, its RSS then (VmRSS)"] = only(runnerIdleRss);
  if (runnerJob.length > 0) peaks["runner --serve, its peak while its job ran"] = only(runnerJob);
  runnerIdle = [];
  runnerIdleRss = [];
  runnerJob = [];
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
