// npm run bench -- resize: image_resize jobs/s through the whole local stack vs a bare S3 → sharp → S3
// loop, sharp alone in memory, and imgproxy serving the file from disk (IMGPROXY_BIN). Knobs and how
// the figures are made: bench/runner.ts.
import { loadConfig } from "../core/config/load.js";
import { compileProject } from "./compile.js";
import { photo } from "./fixtures.js";
import { imgproxyBinary, imgproxyPath, imgproxyRound, startImgproxy, type Imgproxy } from "./imgproxy.js";
import {
  addRound,
  fileSize,
  fmt,
  json,
  log,
  newRate,
  num,
  perSecond,
  rateRatio,
  RESIZE_BOX,
  ResizeServer,
  type Rate,
} from "./runner.js";
import type { SharpPatch } from "./sharp-patch.js";
import { formatRatio, formatSummary, printTable, type Summary } from "./stats.js";

/** What the resize benchmark measured, jobs/s per target and ratios round by round. */
export interface ResizeFigures {
  stack: Summary;
  bare: Summary;
  stackOverBare: Summary;
  /** Without IMGPROXY_BIN: absent. */
  imgproxy?: Summary;
  stackOverImgproxy?: Summary;
}

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
