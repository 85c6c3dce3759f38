// Encoder settings by measurement: for each setting of the AVIF and WebP encoders (effort, chroma
// subsampling, a few qualities) the encode time, the output's size and how close it stays to the
// picture it was made from. JPEG and PNG get the runner's own two settings each, as a check. Figures
// only, never pass/fail. The scores: bench/encoders-score.ts; the tables: bench/encoders-report.ts.
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
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { HeifTune, Sharp } from "sharp";
import { encode, type EncodeMode, type OutputFormat } from "../runner/image/encode.js";
import { sharp } from "../runner/image/settings.js";
import { kib, photoSummary, report, type Point } from "./encoders-report.js";
import {
  planes,
  similarity,
  ssimulacra2,
  writePng,
  type PlaneImages,
  type Pixels,
} from "./encoders-score.js";
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

interface Case {
  name: string;
  title: string;
  pixels: Pixels;
  /** Y, Cb and Cr of the pixels, as ssim.js images (grey: R = G = B). */
  planes: PlaneImages;
  /** A file of BENCH_ENC_PHOTOS. */
  photo?: boolean;
}

/** One setting of one format: a label without the quality, and how to apply it. */
interface Setting {
  format: OutputFormat;
  label: string;
  apply: (pipeline: Sharp, quality: number) => Sharp;
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
