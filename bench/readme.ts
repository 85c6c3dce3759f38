// npm run bench -- readme [--write]: measures what the README's "Measured" table shows and prints
// the table as the README has it (bench/readme-table.ts), with the date (UTC) and the machine under
// it; with --write it also replaces the block in README.md. It runs, in this order:
//
//   resize   the local stack vs the bare S3 → sharp → S3 loop vs imgproxy (jobs/s; ratios round by round)
//   avif     the stack's AVIF vs imgproxy's (images/s; size at equal SSIM)
//   rss      the runner's peak RSS vs imgproxy's and the node + sharp floor
//
// with the benchmarks' own rounds (BENCH_RESIZE_ROUNDS, BENCH_AVIF_ROUNDS, BENCH_RSS_ROUNDS; run.ts
// and runner.ts). The Kubernetes row is the last recorded `npm run bench -- k8s` (POOL_RECORDED), marked
// with its date: it needs a real node. imgproxy is required (IMGPROXY_BIN, docs/development.md).
// Run it on a quiet machine: every figure is printed with its spread, and the spread is the check.
import { readFile, writeFile } from "node:fs/promises";
import { imgproxyBinary } from "./imgproxy.js";
import { POOL_RECORDED, readmeBlock, replaceBlock, thisMachine, type ReadmeFigures } from "./readme-table.js";
import { avifBenchmark } from "./avif.js";
import { resizeBenchmark } from "./resize.js";
import { rssBenchmark } from "./rss.js";

export async function readmeBenchmark(): Promise<string> {
  if (!imgproxyBinary()) {
    throw new Error(
      "bench readme compares with imgproxy: set IMGPROXY_BIN to an imgproxy binary (docs/development.md)",
    );
  }
  const started = new Date();
  const resize = await resizeBenchmark();
  const avif = await avifBenchmark();
  const rss = await rssBenchmark();
  if (!resize.imgproxy || !resize.stackOverImgproxy || !avif.imgproxy || !avif.stackOverImgproxy) {
    throw new Error("imgproxy was not measured (IMGPROXY_BIN)");
  }
  if (avif.sizeAtEqualSsim === undefined) {
    throw new Error("our AVIF reached imgproxy's SSIM at no quality up to 90: no size at equal SSIM");
  }
  if (!rss.imgproxy || !rss.runnerOverImgproxy) {
    throw new Error("imgproxy's peak RSS was not measured (IMGPROXY_BIN)");
  }
  const figures: ReadmeFigures = {
    pool: POOL_RECORDED,
    resize: {
      stack: resize.stack,
      bare: resize.bare,
      imgproxy: resize.imgproxy,
      stackOverBare: resize.stackOverBare,
      stackOverImgproxy: resize.stackOverImgproxy,
    },
    avif: {
      stack: avif.stack,
      imgproxy: avif.imgproxy,
      stackOverImgproxy: avif.stackOverImgproxy,
      sizeAtEqualSsim: avif.sizeAtEqualSsim,
    },
    rss: {
      runner: rss.runner,
      imgproxy: rss.imgproxy,
      runnerOverImgproxy: rss.runnerOverImgproxy,
      floor: rss.floor,
    },
  };
  const rounds =
    `medians of ${resize.stack.n} (resize), ${avif.stack.n} (AVIF) and ${rss.runner.n} (RSS) rounds, ` +
    `ratios the median [min–max] of the per-round ratios`;
  const block = readmeBlock(figures, started.toISOString().slice(0, 10), thisMachine(), rounds);
  console.log(`\nThe README's "Measured" table (README.md, between its bench readme markers):\n`);
  console.log(block);
  if (process.argv.includes("--write")) {
    const readme = new URL("../README.md", import.meta.url);
    await writeFile(readme, replaceBlock(await readFile(readme, "utf8"), block));
    console.log("\nREADME.md: its block replaced");
  }
  return block;
}
