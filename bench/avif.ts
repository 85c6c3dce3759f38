// npm run bench -- avif: image_resize to AVIF through the local stack vs imgproxy's AVIF (IMGPROXY_BIN):
// images/s, size, SSIM, and our encoder's other settings against imgproxy's. Knobs: bench/runner.ts.
import type { AvifOptions, HeifTune, Sharp } from "sharp";
import { loadConfig } from "../core/config/load.js";
import { compileProject } from "./compile.js";
import { photo } from "./fixtures.js";
import { imgproxyBinary, imgproxyPath, imgproxyRound, startImgproxy, type Imgproxy } from "./imgproxy.js";
import {
  addRound,
  fmt,
  log,
  newRate,
  num,
  perSecond,
  rateRatio,
  RESIZE_BOX,
  ResizeServer,
} from "./runner.js";
import { formatRatio, formatSummary, printTable, type Summary } from "./stats.js";

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
  const { encodeFor } = await import("./encoders.js");
  const { bytesAt } = await import("./encoders-report.js");
  const { ssimAgainst } = await import("./encoders-score.js");
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
