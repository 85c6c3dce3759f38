// One resize in a process of its own, for the peak-memory comparison (bench/rss.ts): the runner's
// image_resize processor on a local file, as the runner calls it after downloading the source.
// Prints one JSON line with the process's own peak RSS (VmHWM) read just before it exits; the
// benchmark also runs it under GNU time.
//
//   resize-once.ts processor <source> <width> [out]   the image_resize processor (jpeg, q85, inside)
//   resize-once.ts sharp <source> <width> [out]       plain sharp: sharp(path).resize(width).jpeg()
//   resize-once.ts sharp-cjs <source> <width> [out]   the same with sharp's CommonJS build (require)
//   resize-once.ts load-sharp                         only loads sharp (and libvips): the floor
//   resize-once.ts load-sharp-cjs                     the same with sharp's CommonJS build
//   resize-once.ts node                               loads nothing: Node's own floor
//
// BENCH_SHARP (bench/sharp-patch.ts) applies sharp settings first, for tuning experiments.
import { readFileSync } from "node:fs";
import { copyFile } from "node:fs/promises";
import { createRequire } from "node:module";
import type SharpModule from "sharp";

function status(): { hwmKb: number; rssKb: number } {
  const text = readFileSync("/proc/self/status", "utf8");
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? NaN);
  return { hwmKb: field("VmHWM"), rssKb: field("VmRSS") };
}

const [mode = "processor", source, widthArg, out] = process.argv.slice(2);
const width = Number(widthArg ?? 800);
const started = performance.now();
let output: Record<string, unknown> = {};

if (process.env.BENCH_SHARP && mode !== "node") {
  const { applySharpPatch, patchFromEnv } = await import("./sharp-patch.js");
  applySharpPatch(patchFromEnv()!);
}

if (mode === "processor") {
  if (!source) throw new Error("usage: resize-once.ts processor <source> <width> [out]");
  const { processContext } = await import("./context.js");
  const { imageResize } = await import("../jobs/image_resize/processor.js");
  // A box as tall as allowed: `inside` then sets the height from the aspect ratio (800 px wide).
  const bench = await processContext("image_resize", source, {
    width,
    height: 16_384,
    fit: "inside",
    format: "jpeg",
    quality: 85,
  });
  try {
    const result = await imageResize(bench.ctx);
    if (out && result.output && "path" in result.output) await copyFile(result.output.path, out);
    output = result.result;
  } finally {
    await bench.cleanup();
  }
} else if (mode === "sharp") {
  if (!source) throw new Error("usage: resize-once.ts sharp <source> <width> [out]");
  const { default: sharp } = await import("sharp");
  const info = await sharp(source)
    .resize({ width })
    .jpeg({ quality: 85 })
    .toFile(out ?? "/dev/null");
  output = { width: info.width, height: info.height, size: info.size };
} else if (mode === "sharp-cjs") {
  if (!source) throw new Error("usage: resize-once.ts sharp-cjs <source> <width> [out]");
  const sharp = createRequire(import.meta.url)("sharp") as typeof SharpModule;
  const info = await sharp(source)
    .resize({ width })
    .jpeg({ quality: 85 })
    .toFile(out ?? "/dev/null");
  output = { width: info.width, height: info.height, size: info.size };
} else if (mode === "load-sharp") {
  const { default: sharp } = await import("sharp");
  output = { vips: sharp.versions.vips, concurrency: sharp.concurrency() };
} else if (mode === "load-sharp-cjs") {
  const sharp = createRequire(import.meta.url)("sharp") as typeof SharpModule;
  output = { vips: sharp.versions.vips, concurrency: sharp.concurrency() };
} else if (mode !== "node") {
  throw new Error(`unknown mode ${mode}`);
}

process.stdout.write(
  `${JSON.stringify({ mode, ms: Math.round(performance.now() - started), ...status(), ...output })}\n`,
);
