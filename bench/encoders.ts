// Encoder settings by measurement: for each setting of the AVIF and WebP encoders (effort, chroma
// subsampling, a few qualities) the encode time, the output's size and how close it stays to the
// picture it was made from. JPEG and PNG get the runner's own two settings each, as a check. Figures
// only, never pass/fail.
//
//   npm run bench -- encoders                      with the other benchmarks (bench/run.ts)
//   npx tsx bench/encoders.ts [avif] [webp] [jpeg] [png] [runner]   alone; the formats named, or all
//
// What is encoded (bench/fixtures.ts scene(): a sky gradient, hard-edged shapes in strong colours,
// thin lines, text, photo-like blotches and grain), decoded once to pixels so that only the encoder
// is timed:
//   resize    the 3000×2000 scene resized as image_resize does (cover) to 800×600
//   optimize  a 1224×816 (1 megapixel) scene at full size, as image_optimize encodes it
//   full6     the 3000×2000 scene at full size (BENCH_ENC_CASES=full6: slow, AVIF above effort 2 alone
//             takes seconds per image)
//
// Each setting encodes the same pixels in two pipelines at once (concurrency 2, this machine's 2
// cores; libvips itself with the runner's settings, runner/image/settings.ts) until BENCH_ENC_SECONDS
// have passed. Per setting:
//   KiB    output size
//   SSIM   structural similarity of the decoded output to the pixels encoded, at full resolution
//          (ssim.js, its default "weber" variant, no downsampling), on each of Y, Cb and Cr (BT.601)
//          and weighted 6:1:1, so chroma subsampling counts; SSIM-Y is luma alone
//   ms     CPU time per image (process CPU over the batch, all threads, divided by the images)
//   img/s  images per second of wall time at concurrency 2
// Then per setting across qualities: the size at equal SSIM, and at equal SSIM-Y, against a baseline
// setting (log size interpolated over SSIM in dB, -10·log10(1 - SSIM), between the measured
// qualities; the mean over the baseline's qualities the setting's range covers), and the Pareto-efficient
// points (no other point is smaller, closer and cheaper at once).
//
// Knobs (environment): BENCH_ENC_CASES (resize,optimize; empty for the photos alone),
// BENCH_ENC_SECONDS (0.8), BENCH_ENC_AVIF_Q (50,65,80), BENCH_ENC_WEBP_Q (60,75,85),
// BENCH_ENC_AVIF_EFFORTS (0,1,2,3,4,5,6), BENCH_ENC_AVIF_TUNES (libaom's tunes: iq,ssim),
// BENCH_ENC_JSON (a file to write every point to, as JSON),
// BENCH_ENC_REPORT (such a file: its tables printed again, nothing measured).
//
// Two optional inputs, each off unless its variable is set:
//   BENCH_ENC_PHOTOS=<directory>  every .png, .jpg, .jpeg and .webp file in it is one more case, named
//          after the file, encoded at its own size (decoded once to RGB pixels as above, alpha
//          removed). With more than one photo, a summary per format follows: per setting, the size at
//          equal score against the baseline, the geometric mean over the photos of each photo's mean
//          (with how many photos had one), and CPU ms per image against the baseline's (geometric
//          mean of the ratios at each quality, then over the photos).
//   SSIMULACRA2_BIN=<program>     a SSIMULACRA 2 scorer, run as `<program> reference.png distorted.png`,
//          that prints the score as the last number on stdout (the ssimulacra2 Python package's
//          command, libjxl's ssimulacra2 tool). Every point gets its score, s2 (100 = identical,
//          higher is closer), and the size columns a third variant at equal SSIMULACRA 2 (log size
//          interpolated linearly over the score). The scorer runs two at a time after a case's and
//          format's encodes are timed, never beside them, on PNGs written to a temporary directory
//          and removed.
import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { HeifTune, Sharp } from "sharp";
import { ssim } from "ssim.js";
import { encode, type EncodeMode, type OutputFormat } from "../runner/image/encode.js";
import { sharp } from "../runner/image/settings.js";
import { scene } from "./fixtures.js";

const SECONDS = Number(process.env.BENCH_ENC_SECONDS ?? 0.8);
const list = (name: string, fallback: string) =>
  (process.env[name] ?? fallback)
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
const AVIF_Q = list("BENCH_ENC_AVIF_Q", "50,65,80").map(Number);
const WEBP_Q = list("BENCH_ENC_WEBP_Q", "60,75,85").map(Number);
const AVIF_EFFORTS = list("BENCH_ENC_AVIF_EFFORTS", "0,1,2,3,4,5,6").map(Number);
const AVIF_TUNES = list("BENCH_ENC_AVIF_TUNES", "iq,ssim") as HeifTune[];
const PHOTOS = process.env.BENCH_ENC_PHOTOS || undefined;
const SCORER = process.env.SSIMULACRA2_BIN || undefined;
const log = (line: string) => console.error(line);

interface Pixels {
  data: Buffer;
  width: number;
  height: number;
}

interface Case {
  name: string;
  title: string;
  pixels: Pixels;
  /** Y, Cb and Cr of the pixels, as ssim.js images (grey: R = G = B). */
  planes: PlaneImages;
  /** A file of BENCH_ENC_PHOTOS. */
  photo?: boolean;
}

type PlaneImages = [ImagePlane, ImagePlane, ImagePlane];
interface ImagePlane {
  data: Uint8ClampedArray;
  width: number;
  height: number;
}

/** One setting of one format: a label without the quality, and how to apply it. */
interface Setting {
  format: OutputFormat;
  label: string;
  apply: (pipeline: Sharp, quality: number) => Sharp;
}

export interface Point {
  case: string;
  format: OutputFormat;
  setting: string;
  quality: number;
  bytes: number;
  ssim: number;
  ssimY: number;
  /** SSIMULACRA 2 (SSIMULACRA2_BIN). */
  s2?: number;
  cpuMs: number;
  perSecond: number;
  images: number;
  /** The case is a file of BENCH_ENC_PHOTOS. */
  photo?: true;
}

/** Y, Cb, Cr (BT.601 full range, as JPEG defines them) of RGB pixels, each as a grey RGBA image. */
function planes(pixels: Pixels, channels = 3): PlaneImages {
  const n = pixels.width * pixels.height;
  const make = () => ({ data: new Uint8ClampedArray(n * 4), width: pixels.width, height: pixels.height });
  const out: PlaneImages = [make(), make(), make()];
  const d = pixels.data;
  for (let i = 0; i < n; i++) {
    const r = d[i * channels]!;
    const g = d[i * channels + 1]!;
    const b = d[i * channels + 2]!;
    const values = [
      0.299 * r + 0.587 * g + 0.114 * b,
      128 - 0.168736 * r - 0.331264 * g + 0.5 * b,
      128 + 0.5 * r - 0.418688 * g - 0.081312 * b,
    ];
    for (let p = 0; p < 3; p++) {
      const v = Math.round(values[p]!);
      const o = out[p]!.data;
      o[i * 4] = o[i * 4 + 1] = o[i * 4 + 2] = v;
      o[i * 4 + 3] = 255;
    }
  }
  return out;
}

/** SSIM (weighted and luma) of an encoded image against another image's decoded pixels (both files). */
export async function ssimAgainst(
  reference: Buffer,
  encoded: Buffer,
): Promise<{ ssim: number; ssimY: number }> {
  const { data, info } = await sharp(reference).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return similarity(planes({ data, width: info.width, height: info.height }, info.channels), encoded);
}

async function similarity(reference: PlaneImages, encoded: Buffer): Promise<{ ssim: number; ssimY: number }> {
  const { data, info } = await decode(encoded);
  const decoded = planes({ data, width: info.width, height: info.height }, info.channels);
  const scores = reference.map((plane, p) => ssim(plane, decoded[p]!, { downsample: false }).mssim);
  const [y, cb, cr] = scores as [number, number, number];
  return { ssim: (6 * y + cb + cr) / 8, ssimY: y };
}

const decode = (encoded: Buffer) => sharp(encoded).removeAlpha().raw().toBuffer({ resolveWithObject: true });

const run = promisify(execFile);

/** SSIMULACRA 2 of a distorted PNG against a reference PNG: SSIMULACRA2_BIN's last number on stdout. */
async function ssimulacra2(scorer: string, reference: string, distorted: string): Promise<number> {
  let stdout: string;
  try {
    ({ stdout } = await run(scorer, [reference, distorted], { maxBuffer: 1 << 20 }));
  } catch (err) {
    throw new Error(`SSIMULACRA2_BIN=${scorer}: ${(err as Error).message}`);
  }
  const last = stdout.match(/[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?/gi)?.at(-1);
  if (last === undefined)
    throw new Error(`SSIMULACRA2_BIN=${scorer} printed no score: ${stdout.trim() || "nothing"}`);
  return Number(last);
}

/** Writes the decoded pixels of an encoded image (alpha removed) as a PNG. */
async function writePng(encoded: Buffer, path: string): Promise<void> {
  const { data, info } = await decode(encoded);
  await sharp(data, { raw: { width: info.width, height: info.height, channels: info.channels } })
    .png({ compressionLevel: 1 })
    .toFile(path);
}

/** Runs `fn` over the items, at most `limit` at once. */
async function inParallel<T>(items: T[], limit: number, fn: (item: T, index: number) => Promise<void>) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** Encodes the pixels with the setting, two at a time, until SECONDS have passed. */
async function measure(
  c: Case,
  setting: Setting,
  quality: number,
): Promise<{ bytes: number; cpuMs: number; perSecond: number; images: number; output: Buffer }> {
  const { data, width, height } = c.pixels;
  const m = await encodeFor(
    () => setting.apply(sharp(data, { raw: { width, height, channels: 3 } }), quality).toBuffer(),
    SECONDS * 1000,
  );
  return { bytes: m.output.length, ...m };
}

/**
 * Runs `once` `concurrency` at a time until `ms` have passed (at least once): images per second of
 * wall time, this process's CPU per image (all threads), and the last output.
 */
export async function encodeFor(
  once: () => Promise<Buffer>,
  ms: number,
  concurrency = 2,
): Promise<{ cpuMs: number; perSecond: number; images: number; output: Buffer }> {
  let images = 0;
  let output: Buffer | undefined;
  const cpu = process.cpuUsage();
  const started = performance.now();
  do {
    const batch = await Promise.all(Array.from({ length: concurrency }, once));
    output = batch[0]!;
    images += concurrency;
  } while (performance.now() - started < ms);
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  return { cpuMs: (used.user + used.system) / 1000 / images, perSecond: images / seconds, images, output };
}

function avifSettings(): Setting[] {
  const settings: Setting[] = [];
  for (const effort of AVIF_EFFORTS) {
    for (const chromaSubsampling of ["4:2:0", "4:4:4"] as const) {
      for (const tune of AVIF_TUNES) {
        settings.push({
          format: "avif",
          label: `e${effort} ${chromaSubsampling} ${tune}`,
          apply: (p, quality) => p.avif({ quality, effort, chromaSubsampling, tune }),
        });
      }
    }
  }
  return settings;
}

function webpSettings(): Setting[] {
  const settings: Setting[] = [];
  for (let effort = 0; effort <= 6; effort++) {
    for (const smartSubsample of [false, true]) {
      settings.push({
        format: "webp",
        label: `e${effort}${smartSubsample ? " smart" : ""}`,
        apply: (p, quality) => p.webp({ quality, effort, smartSubsample }),
      });
    }
  }
  return settings;
}

/** The runner's own encoder (runner/image/encode.ts) in both modes, told the image's size as the runner is. */
function runnerSettings(format: OutputFormat, pixels: number): Setting[] {
  return (["standard", "optimize"] as EncodeMode[]).map((mode) => ({
    format,
    label: `runner ${mode}`,
    apply: (p, quality) => encode(p, { format, quality, mode, hasAlpha: false, pixels }),
  }));
}

const kib = (bytes: number) => (bytes / 1024).toFixed(1);
const dB = (s: number) => -10 * Math.log10(Math.max(1 - s, 1e-9));

type Score = "ssim" | "ssimY" | "s2";

/** The size columns: each score, its column's name, and the scale log size is interpolated over. */
const SCORES: [Score, string, (s: number) => number][] = [
  ["ssim", "SSIM", dB],
  ["ssimY", "SSIM-Y", dB],
  ["s2", "SSIMULACRA 2", (s) => s],
];

const geomean = (values: number[]) => Math.exp(values.reduce((s, v) => s + Math.log(v), 0) / values.length);
const percent = (ratio: number) => {
  const pct = Math.round((ratio - 1) * 1000) / 10; // rounded first: no "-0.0 %"
  return `${pct >= 0 ? "+" : ""}${pct.toFixed(1)} %`;
};

/** Size of `points` (one setting, several qualities) at `target` of `score`, or undefined outside their range. */
export function bytesAt(
  points: Array<Pick<Point, "bytes" | Score>>,
  score: Score,
  target: number,
): number | undefined {
  const scale = SCORES.find(([s]) => s === score)![2];
  const sorted = points.filter((p) => p[score] !== undefined).sort((a, b) => a[score]! - b[score]!);
  for (let i = 0; i + 1 < sorted.length; i++) {
    const a = sorted[i]!;
    const b = sorted[i + 1]!;
    if (target >= a[score]! && target <= b[score]!) {
      const span = scale(b[score]!) - scale(a[score]!);
      const t = span === 0 ? 0 : (scale(target) - scale(a[score]!)) / span;
      return Math.exp(Math.log(a.bytes) + t * (Math.log(b.bytes) - Math.log(a.bytes)));
    }
  }
  return undefined;
}

/**
 * Mean size ratio (geometric) of `points` to `baseline` at the baseline's scores that `points`
 * covers, with how many of the baseline's qualities it covered; undefined when it covers none.
 */
function sizeRatio(
  points: Point[],
  baseline: Point[],
  score: Score,
): { ratio: number; covered: number } | undefined {
  const ratios = baseline
    .map((b) => {
      const at = b[score] === undefined ? undefined : bytesAt(points, score, b[score]);
      return at === undefined ? undefined : at / b.bytes;
    })
    .filter((r): r is number => r !== undefined);
  return ratios.length === 0 ? undefined : { ratio: geomean(ratios), covered: ratios.length };
}

/** sizeRatio as a signed percentage with how many of the baseline's qualities it covered. */
function sizeAtEqual(points: Point[], baseline: Point[], score: Score): string {
  const r = sizeRatio(points, baseline, score);
  return r ? `${percent(r.ratio)} (${r.covered}/${baseline.length})` : "n/a";
}

/** The scores the points have (s2 only with SSIMULACRA2_BIN). */
const scoresOf = (points: Point[]) => SCORES.filter(([score]) => points.some((p) => p[score] !== undefined));

function pareto(points: Point[]): Point[] {
  return points
    .filter(
      (p) =>
        !points.some(
          (q) =>
            q !== p &&
            q.bytes <= p.bytes &&
            q.ssim >= p.ssim &&
            q.cpuMs <= p.cpuMs &&
            (q.bytes < p.bytes || q.ssim > p.ssim || q.cpuMs < p.cpuMs),
        ),
    )
    .sort((a, b) => a.bytes - b.bytes);
}

/** The settings each format's size-at-equal-SSIM column compares with. */
const BASELINES: Partial<Record<OutputFormat, string>> = {
  // imgproxy's default AVIF speed 8 is libvips effort 1 (libvips passes libheif speed = 9 - effort),
  // with libvips' own chroma default below quality 90: 4:2:0; and libaom tuned for SSIM, the default
  // of the libheif it is built with (a libheif of 1.22 or later on libaom 3.13 or later picks the
  // IQ tune instead, and maps quality to the quantizer by another table).
  avif: "e1 4:2:0 ssim",
  // libwebp's default method (4), as sharp sets it.
  webp: "e4",
  // libjpeg-turbo's defaults, against mozjpeg's trellis and scans.
  jpeg: "runner standard",
};

const CASES = [
  ["resize", "image_resize: 3000x2000 scene -> 800x600 (cover)"],
  ["optimize", "image_optimize: 1224x816 scene, full size"],
  ["full6", "image_optimize: 3000x2000 scene, full size"],
] as const;

const PHOTO_TYPES = [".png", ".jpg", ".jpeg", ".webp"];

/** One case per image file in `dir` (BENCH_ENC_PHOTOS), at its own size. */
async function photoCases(dir: string): Promise<Case[]> {
  const files = (await readdir(dir, { withFileTypes: true }))
    .filter((e) => !e.isDirectory() && PHOTO_TYPES.includes(extname(e.name).toLowerCase()))
    .map((e) => e.name)
    .sort();
  if (files.length === 0) throw new Error(`BENCH_ENC_PHOTOS=${dir} holds no ${PHOTO_TYPES.join(", ")} file`);
  const cases: Case[] = [];
  for (const file of files) {
    const { data, info } = await sharp(join(dir, file))
      .removeAlpha()
      .toColourspace("srgb")
      .raw()
      .toBuffer({ resolveWithObject: true });
    if (info.channels !== 3)
      throw new Error(`BENCH_ENC_PHOTOS: ${file} decodes to ${info.channels} channels, not RGB`);
    const pixels = { data, width: info.width, height: info.height };
    const title = `photo ${file}: ${info.width}x${info.height}, full size`;
    cases.push({ name: file, title, pixels, planes: planes(pixels), photo: true });
  }
  return cases;
}

async function makeCases(names: string[]): Promise<Case[]> {
  const cases: Case[] = [];
  for (const name of names) {
    const title = CASES.find(([n]) => n === name)?.[1];
    if (!title) throw new Error(`unknown case ${name}; choose from ${CASES.map(([n]) => n).join(", ")}`);
    const p =
      name === "resize"
        ? sharp(await scene(3000, 2000)).resize(800, 600, { fit: "cover" })
        : sharp(name === "optimize" ? await scene(1224, 816) : await scene(3000, 2000));
    const { data, info } = await p.removeAlpha().raw().toBuffer({ resolveWithObject: true });
    const pixels = { data, width: info.width, height: info.height };
    cases.push({ name, title, pixels, planes: planes(pixels) });
  }
  return cases;
}

export async function encodersBenchmark(formats: string[] = []): Promise<Point[]> {
  const all = ["avif", "webp", "jpeg", "png"];
  const wanted = formats.filter((f) => all.includes(f));
  const chosen = (wanted.length > 0 ? wanted : all) as OutputFormat[];
  const runnerOnly = formats.includes("runner");
  const cases = await makeCases(list("BENCH_ENC_CASES", "resize,optimize"));
  if (PHOTOS) cases.push(...(await photoCases(PHOTOS)));
  const points: Point[] = [];
  const scratch = SCORER ? await mkdtemp(join(tmpdir(), "bench-encoders-")) : undefined;
  try {
    await measureCases(cases, chosen, runnerOnly, points, scratch);
  } finally {
    if (scratch) await rm(scratch, { recursive: true, force: true });
  }
  photoSummary(points);
  console.log(
    `load average at the end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  if (process.env.BENCH_ENC_JSON)
    await writeFile(process.env.BENCH_ENC_JSON, JSON.stringify(points, null, 1));
  return points;
}

async function measureCases(
  cases: Case[],
  chosen: OutputFormat[],
  runnerOnly: boolean,
  points: Point[],
  scratch: string | undefined,
): Promise<void> {
  const versions = sharp.versions as Record<string, string>;
  console.log(
    `\nEncoder settings (sharp ${versions.sharp}, libvips ${versions.vips}, libaom ${versions.aom}, ` +
      `libwebp ${versions.webp}, mozjpeg ${versions.mozjpeg}; libvips threads ${sharp.concurrency()}, ` +
      `concurrency 2; load average at start ${loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")})`,
  );

  for (const [index, c] of cases.entries()) {
    // SSIMULACRA 2's reference: the case's pixels as a PNG; the first one also scored against itself,
    // a check of the scorer before anything is measured.
    const reference = scratch ? join(scratch, `${index}-reference.png`) : undefined;
    if (reference) {
      await sharp(c.pixels.data, { raw: { ...sizeOf(c), channels: 3 } })
        .png({ compressionLevel: 1 })
        .toFile(reference);
      if (index === 0)
        log(
          `SSIMULACRA 2 of ${c.name} against itself: ${(await ssimulacra2(SCORER!, reference, reference)).toFixed(2)}`,
        );
    }
    for (const format of chosen) {
      const grid =
        runnerOnly || format === "jpeg" || format === "png"
          ? []
          : format === "avif"
            ? avifSettings()
            : webpSettings();
      const settings = [...grid, ...runnerSettings(format, c.pixels.width * c.pixels.height)];
      const qualities = format === "avif" ? AVIF_Q : format === "png" ? [80] : WEBP_Q;
      // One encode first, not counted: the encoder's own start-up (libaom's tables, for one).
      await settings[0]!.apply(sharp(c.pixels.data, { raw: { ...sizeOf(c), channels: 3 } }), 50).toBuffer();
      const ours: Point[] = [];
      const outputs: Buffer[] = [];
      for (const setting of settings) {
        for (const quality of qualities) {
          const m = await measure(c, setting, quality);
          const s = await similarity(c.planes, m.output);
          const point: Point = {
            case: c.name,
            format,
            setting: setting.label,
            quality,
            bytes: m.bytes,
            ssim: s.ssim,
            ssimY: s.ssimY,
            cpuMs: m.cpuMs,
            perSecond: m.perSecond,
            images: m.images,
            ...(c.photo ? { photo: true as const } : {}),
          };
          ours.push(point);
          outputs.push(m.output);
          log(
            `${c.name} ${format} ${setting.label} q${quality}: ${kib(point.bytes)} KiB, SSIM ${point.ssim.toFixed(4)}, ` +
              `${point.cpuMs.toFixed(0)} ms CPU, ${point.perSecond.toFixed(2)} img/s (${point.images} images)`,
          );
        }
      }
      if (reference) {
        // After the timed encodes, not beside them: the scorer takes CPU time of its own.
        const started = performance.now();
        await inParallel(ours, 2, async (point, i) => {
          const distorted = join(scratch!, `${index}-${format}-${i}.png`);
          await writePng(outputs[i]!, distorted);
          point.s2 = await ssimulacra2(SCORER!, reference, distorted);
          await rm(distorted, { force: true });
        });
        log(
          `${c.name} ${format}: SSIMULACRA 2 of ${ours.length} points in ${((performance.now() - started) / 1000).toFixed(1)} s`,
        );
      }
      points.push(...ours);
      report(
        c.name,
        c.title,
        format,
        settings.map((s) => s.label),
        qualities,
        ours,
      );
    }
    if (reference) await rm(reference, { force: true });
  }
}

const sizeOf = (c: Case) => ({ width: c.pixels.width, height: c.pixels.height });

function report(
  name: string,
  title: string,
  format: OutputFormat,
  labels: string[],
  qualities: number[],
  points: Point[],
) {
  const baselineLabel = BASELINES[format];
  const baseline = points.filter((p) => p.setting === baselineLabel);
  const scores = scoresOf(points);
  const s2 = scores.some(([score]) => score === "s2");
  console.log(
    `\n${format.toUpperCase()}, ${title}; per quality: KiB, SSIM (Y:Cb:Cr 6:1:1), SSIM-Y, ` +
      `${s2 ? "SSIMULACRA 2, " : ""}CPU ms/image, images/s at concurrency 2`,
  );
  const rows = labels.map((label) => {
    const mine = points.filter((p) => p.setting === label);
    const row: Record<string, string> = {};
    for (const q of qualities) {
      const p = mine.find((x) => x.quality === q);
      if (p)
        row[`q${q}`] =
          `${kib(p.bytes)} ${p.ssim.toFixed(4)} ${p.ssimY.toFixed(4)}${p.s2 === undefined ? "" : ` ${p.s2.toFixed(2)}`} ` +
          `${p.cpuMs.toFixed(0)}ms ${p.perSecond.toFixed(1)}/s`;
    }
    if (baseline.length > 1 && mine.length > 1)
      for (const [i, [score, name]] of scores.entries())
        row[i === 0 ? `size at equal ${name} vs ${baselineLabel}` : `at equal ${name}`] = sizeAtEqual(
          mine,
          baseline,
          score,
        );
    return [label, row] as const;
  });
  console.table(Object.fromEntries(rows));
  const grid = points.filter((p) => !p.setting.startsWith("runner"));
  if (grid.length > 2) {
    console.log(
      `Pareto-efficient (${format}, ${name}): none of the others is smaller, closer and cheaper at once`,
    );
    for (const p of pareto(grid))
      console.log(
        `  ${p.setting.padEnd(9)} q${String(p.quality).padEnd(3)} ${kib(p.bytes).padStart(7)} KiB  SSIM ${p.ssim.toFixed(4)}  ` +
          `${p.s2 === undefined ? "" : `s2 ${p.s2.toFixed(2)}  `}${p.cpuMs.toFixed(0).padStart(5)} ms  ${p.perSecond.toFixed(1)}/s`,
      );
  }
}

/**
 * With more than one photo (BENCH_ENC_PHOTOS), per format: each setting's size at equal score
 * against the baseline, the geometric mean over the photos of each photo's mean ratio (sizeRatio;
 * with how many photos had one), and its CPU time against the baseline's.
 */
function photoSummary(points: Point[]) {
  const photos = points.filter((p) => p.photo);
  for (const format of new Set(photos.map((p) => p.format))) {
    const ours = photos.filter((p) => p.format === format);
    const names = [...new Set(ours.map((p) => p.case))];
    const baselineLabel = BASELINES[format];
    if (names.length < 2 || !ours.some((p) => p.setting === baselineLabel)) continue;
    const of = (name: string, label: string) => ours.filter((p) => p.case === name && p.setting === label);
    const scores = scoresOf(ours);
    console.log(
      `\n${format.toUpperCase()}, ${names.length} photos: size at equal score vs ${baselineLabel} (geometric mean ` +
        `over the photos of each photo's mean; photos with one), CPU ms/image vs ${baselineLabel}`,
    );
    const rows = [...new Set(ours.map((p) => p.setting))].map((label) => {
      const row: Record<string, string> = {};
      for (const [i, [score, name]] of scores.entries()) {
        const ratios = names
          .map((n) => sizeRatio(of(n, label), of(n, baselineLabel!), score)?.ratio)
          .filter((r): r is number => r !== undefined);
        row[i === 0 ? `size at equal ${name}` : `at equal ${name}`] =
          ratios.length === 0 ? "n/a" : `${percent(geomean(ratios))} (${ratios.length}/${names.length})`;
      }
      const cpu = names
        .map((n) => {
          const base = of(n, baselineLabel!);
          const ratios = of(n, label)
            .map((p) => [p, base.find((b) => b.quality === p.quality)] as const)
            .filter(([, b]) => b !== undefined)
            .map(([p, b]) => p.cpuMs / b!.cpuMs);
          return ratios.length === 0 ? undefined : geomean(ratios);
        })
        .filter((r): r is number => r !== undefined);
      row["CPU"] = cpu.length === 0 ? "n/a" : `${geomean(cpu).toFixed(2)}x`;
      return [label, row] as const;
    });
    console.table(Object.fromEntries(rows));
  }
}

/** The tables of an earlier run's points (BENCH_ENC_JSON), printed again without measuring. */
async function reprint(path: string): Promise<void> {
  const points = JSON.parse(await readFile(path, "utf8")) as Point[];
  const titles: Record<string, string> = Object.fromEntries(CASES.map(([name, title]) => [name, title]));
  for (const name of new Set(points.map((p) => p.case))) {
    for (const format of new Set(points.filter((p) => p.case === name).map((p) => p.format))) {
      const ours = points.filter((p) => p.case === name && p.format === format);
      const labels = [...new Set(ours.map((p) => p.setting))];
      const qualities = [...new Set(ours.map((p) => p.quality))];
      const title = titles[name] ?? (ours[0]!.photo ? `photo ${name}, full size` : name);
      report(name, title, format, labels, qualities, ours);
    }
  }
  photoSummary(points);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.env.BENCH_ENC_REPORT) await reprint(process.env.BENCH_ENC_REPORT);
  else await encodersBenchmark(process.argv.slice(2).filter((a) => a !== "--"));
}
