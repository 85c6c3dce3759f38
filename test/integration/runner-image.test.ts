// The four image processors (resize, optimize, watermark, colors) on real images made by sharp at
// test time, called directly with a ProcessContext built here: a scratch directory per job, a
// "bucket" directory that fetchObject copies from, progress collected. Assertions are on the
// output files themselves (sharp's metadata, decoded pixels, sizes), never on statuses.
import assert from "node:assert/strict";
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import sharp from "sharp";
import { loadConfig, type Config } from "../../core/config/load.js";
import type { Job } from "../../core/jobs/records.js";
import { normalizeParameters } from "../../core/jobs/spec.js";
import type { JobType } from "../../core/jobs/types.js";
import { PermanentError } from "../../runner/errors.js";
import type { ProcessContext, ProcessLimits, ProcessOutput, Processor } from "../../runner/processor.js";
import { imageColors } from "../../jobs/image_colors/processor.js";
import { imageOptimize } from "../../jobs/image_optimize/processor.js";
import { imageResize } from "../../jobs/image_resize/processor.js";
import { imageWatermark } from "../../jobs/image_watermark/processor.js";
import {
  makeImage,
  noiseBytes,
  pixelAt,
  pngBomb,
  readPixels,
  truncated,
  type ImageSpec,
  type Pixels,
} from "../support/media.js";

const BUCKET = "media-in";
const BOUND_MS = 20_000;

let root: string;
let bucketDir: string;
let config: Config;

before(async () => {
  root = await mkdtemp(join(tmpdir(), "runner-image-"));
  bucketDir = join(root, "bucket");
  await mkdir(join(bucketDir, BUCKET), { recursive: true });
  config = loadConfig({ env: {} });
});

after(async () => {
  await rm(root, { recursive: true, force: true });
});

interface Harness {
  ctx: ProcessContext;
  progress: number[];
  scratchDir: string;
}

interface ContextOptions {
  limits?: Partial<ProcessLimits>;
  /** File name of the source in the scratch directory (its extension is all that matters). */
  sourceName?: string;
  signal?: AbortSignal;
}

/** A job of `type` with `parameters` (validated, defaults applied, as the store records them). */
async function harness(
  type: JobType,
  parameters: Record<string, unknown>,
  source: Buffer,
  options: ContextOptions = {},
): Promise<Harness> {
  const scratchDir = await mkdtemp(join(root, "job-"));
  const sourcePath = join(scratchDir, options.sourceName ?? "source.img");
  await writeFile(sourcePath, source);
  const now = new Date().toISOString();
  const job: Job = {
    id: `test-${scratchDir.slice(-6)}`,
    type,
    status: "processing",
    source_bucket: BUCKET,
    source_key: "in/source",
    dest_bucket: "media-out",
    dest_key: "out/result",
    parameters: normalizeParameters(type, parameters),
    created_at: now,
    updated_at: now,
  };
  const progress: number[] = [];
  let fetched = 0;
  const ctx: ProcessContext = {
    job,
    sourcePath,
    scratchDir,
    limits: {
      maxInputPixels: config.limits.maxInputPixels,
      maxOutputDimension: config.limits.maxOutputDimension,
      ...options.limits,
    },
    signal: options.signal ?? new AbortController().signal,
    progress: (percent) => progress.push(percent),
    fetchObject: async (bucket, key) => {
      const path = join(scratchDir, `object-${++fetched}`);
      await copyFile(join(bucketDir, bucket, key), path);
      return path;
    },
    logger: pino({ level: "silent" }),
    config,
  };
  return { ctx, progress, scratchDir };
}

/** Settles within BOUND_MS or fails the test: a processor must never hang on bad input. */
async function bounded<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${BOUND_MS} ms`)), BOUND_MS);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function run(
  processor: Processor,
  type: JobType,
  parameters: Record<string, unknown>,
  source: Buffer,
  options: ContextOptions = {},
): Promise<{ out: ProcessOutput; harness: Harness }> {
  const h = await harness(type, parameters, source, options);
  const out = await bounded(processor(h.ctx), type);
  return { out, harness: h };
}

async function expectPermanent(promise: Promise<unknown>, message: RegExp, what: string): Promise<void> {
  await assert.rejects(bounded(promise, what), (err: unknown) => {
    assert.ok(err instanceof PermanentError, `${what}: expected a PermanentError, got ${String(err)}`);
    assert.match(err.message, message, what);
    return true;
  });
}

/** The output file a processor wrote (a context with the source on disk gets one). */
function outputFile(out: ProcessOutput): string {
  assert.ok(out.output && "path" in out.output, "the processor names an output file");
  return out.output.path;
}

async function outputMeta(out: ProcessOutput) {
  return sharp(outputFile(out)).metadata();
}

function outputMetadata(out: ProcessOutput): { width: number; height: number; format: string } {
  return out.result.metadata as { width: number; height: number; format: string };
}

const PHOTO: ImageSpec = { width: 400, height: 300, photo: true, format: "jpeg", quality: 95 };

// ---------------------------------------------------------------------------------------------

describe("image_resize", () => {
  let photo: Buffer;
  before(async () => {
    photo = await makeImage(PHOTO);
  });

  const fits: [string, number, number][] = [
    ["cover", 200, 100], // fills the box, the overflow cropped
    ["contain", 200, 100], // fits inside, padded to the box
    ["fill", 200, 100], // stretched to the box
    ["inside", 133, 100], // fits inside, aspect kept, no padding
    ["outside", 200, 150], // covers the box, aspect kept, no cropping
  ];
  for (const [fit, width, height] of fits) {
    test(`fit ${fit} into 200x100 gives ${width}x${height}`, async () => {
      const { out } = await run(imageResize, "image_resize", { width: 200, height: 100, fit }, photo);
      const meta = await outputMeta(out);
      assert.deepEqual([meta.width, meta.height, meta.format], [width, height, "jpeg"]);
      assert.deepEqual(outputMetadata(out), { width, height, format: "jpeg" });
      assert.equal(out.output!.contentType, "image/jpeg");
    });
  }

  test("contain pads with transparency when the format has alpha", async () => {
    const { out } = await run(
      imageResize,
      "image_resize",
      { width: 200, height: 100, fit: "contain", format: "png" },
      photo,
    );
    const pixels = await readPixels(outputFile(out), { rgba: true });
    assert.deepEqual([pixels.width, pixels.height], [200, 100]);
    assert.equal(pixelAt(pixels, 3, 50)[3], 0, "left padding is transparent");
    assert.equal(pixelAt(pixels, 100, 50)[3], 255, "the picture is opaque");
  });

  test("never enlarges by default, keeping the box's aspect ratio", async () => {
    const small = await makeImage({ width: 100, height: 80, background: "#3366cc" });
    const cover = await run(imageResize, "image_resize", { width: 400, height: 200 }, small);
    assert.deepEqual(outputMetadata(cover.out), { width: 100, height: 50, format: "png" });
    const inside = await run(imageResize, "image_resize", { width: 400, height: 200, fit: "inside" }, small);
    assert.deepEqual(outputMetadata(inside.out), { width: 100, height: 80, format: "png" });
    const contain = await run(
      imageResize,
      "image_resize",
      { width: 400, height: 400, fit: "contain" },
      small,
    );
    assert.deepEqual(outputMetadata(contain.out), { width: 100, height: 100, format: "png" });
  });

  test("enlarges with enlarge: true", async () => {
    const small = await makeImage({ width: 100, height: 80, background: "#3366cc" });
    const cover = await run(imageResize, "image_resize", { width: 400, height: 200, enlarge: true }, small);
    const meta = await outputMeta(cover.out);
    assert.deepEqual([meta.width, meta.height], [400, 200]);
    const inside = await run(
      imageResize,
      "image_resize",
      { width: 400, height: 200, fit: "inside", enlarge: true },
      small,
    );
    assert.deepEqual(outputMetadata(inside.out), { width: 250, height: 200, format: "png" });
  });

  const formats: [string, string, string, string][] = [
    ["jpeg", "jpeg", "image/jpeg", ".jpg"],
    ["png", "png", "image/png", ".png"],
    ["webp", "webp", "image/webp", ".webp"],
    ["avif", "heif", "image/avif", ".avif"],
  ];
  for (const [format, sharpFormat, contentType, extension] of formats) {
    test(`format ${format} writes a real ${format} file`, async () => {
      const { out } = await run(imageResize, "image_resize", { width: 120, height: 90, format }, photo);
      const meta = await outputMeta(out);
      assert.equal(meta.format, sharpFormat);
      if (format === "avif") assert.equal(meta.compression, "av1");
      assert.deepEqual([meta.width, meta.height], [120, 90]);
      assert.equal(out.output!.contentType, contentType);
      assert.ok(outputFile(out).endsWith(extension), outputFile(out));
      assert.deepEqual(outputMetadata(out), { width: 120, height: 90, format });
      assert.equal(typeof out.result.duration, "number");
    });
  }

  test("the output format defaults to the source's; GIF becomes PNG, TIFF JPEG or PNG with alpha", async () => {
    const sources: [ImageSpec, string, boolean][] = [
      [{ width: 200, height: 100, format: "webp" }, "webp", false],
      [{ width: 200, height: 100, format: "avif" }, "heif", false],
      [{ width: 200, height: 100, format: "gif" }, "png", false],
      [
        {
          width: 200,
          height: 100,
          format: "gif",
          alpha: 0,
          blocks: [{ left: 0, top: 0, width: 100, height: 100, color: "#884422" }],
        },
        "png",
        true,
      ],
      [{ width: 200, height: 100, format: "tiff" }, "jpeg", false],
      [{ width: 200, height: 100, format: "tiff", alpha: 0.5 }, "png", true],
    ];
    for (const [spec, expected, alpha] of sources) {
      const { out } = await run(
        imageResize,
        "image_resize",
        { width: 100, height: 50 },
        await makeImage(spec),
      );
      const meta = await outputMeta(out);
      assert.equal(meta.format, expected, `${spec.format} → ${expected}`);
      assert.equal(meta.hasAlpha, alpha, `${spec.format}: alpha ${alpha}`);
    }
  });

  test("quality changes the size of lossy output", async () => {
    for (const format of ["jpeg", "webp"]) {
      const low = await run(
        imageResize,
        "image_resize",
        { width: 300, height: 200, format, quality: 30 },
        photo,
      );
      const high = await run(
        imageResize,
        "image_resize",
        { width: 300, height: 200, format, quality: 90 },
        photo,
      );
      const [lowSize, highSize] = [
        (await stat(outputFile(low.out))).size,
        (await stat(outputFile(high.out))).size,
      ];
      assert.ok(lowSize < highSize, `${format}: q30 ${lowSize} bytes < q90 ${highSize} bytes`);
    }
  });

  test("applies EXIF orientation: a 300x200 image tagged 6 comes out 200x300, turned clockwise", async () => {
    // Red in the stored top-left corner; orientation 6 shows it turned 90° clockwise: top-right.
    const tagged = await makeImage({
      width: 300,
      height: 200,
      background: "#ffffff",
      blocks: [{ left: 0, top: 0, width: 60, height: 60, color: "#ff0000" }],
      format: "jpeg",
      exifOrientation: 6,
    });
    assert.equal((await sharp(tagged).metadata()).orientation, 6);
    const { out } = await run(
      imageResize,
      "image_resize",
      { width: 1000, height: 1000, fit: "inside" },
      tagged,
    );
    const meta = await outputMeta(out);
    assert.deepEqual([meta.width, meta.height], [200, 300]);
    assert.ok((meta.orientation ?? 1) === 1, "no orientation left to apply");
    const pixels = await readPixels(outputFile(out));
    const [r, g, b] = pixelAt(pixels, 190, 10);
    assert.ok(r! > 200 && g! < 60 && b! < 60, `top-right is red: ${[r, g, b].join(",")}`);
    const [r2, g2, b2] = pixelAt(pixels, 10, 10);
    assert.ok(r2! > 200 && g2! > 200 && b2! > 200, "top-left is white");
  });

  test("an output larger than limits.max_output_dimension is refused", async () => {
    const small = await makeImage({ width: 100, height: 80 });
    const h = await harness("image_resize", { width: 600, height: 300, enlarge: true }, small, {
      limits: { maxOutputDimension: 500 },
    });
    await expectPermanent(imageResize(h.ctx), /max_output_dimension \(500\)/, "resize over the limit");
  });

  test("reports progress", async () => {
    const { harness: h } = await run(imageResize, "image_resize", { width: 100, height: 100 }, photo);
    assert.ok(h.progress.length >= 2, "progress reported");
    assert.deepEqual(
      h.progress,
      [...h.progress].sort((a, b) => a - b),
      "progress only grows",
    );
    assert.ok(h.progress.at(-1)! >= 90);
  });

  test("a job whose time is up stops before working", async () => {
    const controller = new AbortController();
    controller.abort(new Error("deadline"));
    const h = await harness("image_resize", { width: 100, height: 100 }, photo, {
      signal: controller.signal,
    });
    await assert.rejects(imageResize(h.ctx), /deadline/);
    assert.deepEqual(
      (await readdir(h.scratchDir)).filter((f) => f.startsWith("output")),
      [],
    );
  });
});

// ---------------------------------------------------------------------------------------------

describe("image_optimize", () => {
  test("a JPEG comes out smaller and still a JPEG of the same size", async () => {
    const source = await makeImage(PHOTO);
    const { out } = await run(imageOptimize, "image_optimize", {}, source);
    const meta = await outputMeta(out);
    assert.deepEqual([meta.format, meta.width, meta.height], ["jpeg", 400, 300]);
    assert.ok((await stat(outputFile(out))).size < source.length);
    assert.deepEqual(outputMetadata(out), { width: 400, height: 300, format: "jpeg" });
  });

  test("a PNG photo is quantised to a smaller palette PNG", async () => {
    const source = await makeImage({ ...PHOTO, format: "png" });
    const { out } = await run(imageOptimize, "image_optimize", {}, source);
    const meta = await outputMeta(out);
    assert.equal(meta.format, "png");
    assert.equal(meta.isPalette, true);
    assert.ok((await stat(outputFile(out))).size < source.length * 0.7);
  });

  test("format converts", async () => {
    const source = await makeImage({ ...PHOTO, format: "png" });
    const { out } = await run(imageOptimize, "image_optimize", { format: "webp" }, source);
    assert.equal((await outputMeta(out)).format, "webp");
    assert.equal(out.output!.contentType, "image/webp");
  });

  test("strip_metadata: true removes EXIF, ICC, XMP and IPTC", async () => {
    const source = await makeImage({ ...PHOTO, withMetadata: true });
    const before = await sharp(source).metadata();
    assert.ok(before.exif && before.icc && before.xmp, "the fixture carries metadata");
    const { out } = await run(imageOptimize, "image_optimize", { strip_metadata: true }, source);
    const meta = await outputMeta(out);
    assert.equal(meta.exif, undefined);
    assert.equal(meta.icc, undefined);
    assert.equal(meta.xmp, undefined);
    assert.equal(meta.iptc, undefined);
  });

  test("strip_metadata: false (default) keeps EXIF, ICC and XMP", async () => {
    const source = await makeImage({ ...PHOTO, withMetadata: true });
    const { out } = await run(imageOptimize, "image_optimize", {}, source);
    const meta = await outputMeta(out);
    assert.ok(meta.exif?.includes("TestCam"), "EXIF kept");
    assert.ok(meta.icc, "ICC kept");
    assert.match(meta.xmpAsString ?? "", /media-service tests/);
  });

  test("stripping EXIF applies the orientation first", async () => {
    const source = await makeImage({ ...PHOTO, exifOrientation: 6 });
    const { out } = await run(imageOptimize, "image_optimize", { strip_metadata: true }, source);
    const meta = await outputMeta(out);
    assert.deepEqual([meta.width, meta.height, meta.orientation], [300, 400, undefined]);
  });

  test("never makes a file bigger: an already small JPEG stays byte for byte", async () => {
    const source = await makeImage({ ...PHOTO, quality: 40 });
    const { out } = await run(imageOptimize, "image_optimize", { quality: 95 }, source);
    assert.ok((await readFile(outputFile(out))).equals(source), "the output is the source");
    assert.deepEqual(outputMetadata(out), { width: 400, height: 300, format: "jpeg" });
  });
});

// ---------------------------------------------------------------------------------------------

const BASE_COLOR = [32, 64, 96];
const BASE: ImageSpec = { width: 400, height: 300, background: "#204060" };

interface Region {
  changed: number;
  minX: number;
  maxX: number;
  minY: number;
  maxY: number;
  /** Largest difference from the background in any channel. */
  maxDiff: number;
}

/** Where a watermarked image differs from the uniform BASE colour. */
function changedRegion(pixels: Pixels, threshold = 0): Region {
  const region: Region = { changed: 0, minX: Infinity, maxX: -1, minY: Infinity, maxY: -1, maxDiff: 0 };
  for (let y = 0; y < pixels.height; y++) {
    for (let x = 0; x < pixels.width; x++) {
      const at = (y * pixels.width + x) * pixels.channels;
      const diff = Math.max(...BASE_COLOR.map((v, c) => Math.abs(pixels.data[at + c]! - v)));
      if (diff <= threshold) continue;
      region.changed++;
      region.maxDiff = Math.max(region.maxDiff, diff);
      region.minX = Math.min(region.minX, x);
      region.maxX = Math.max(region.maxX, x);
      region.minY = Math.min(region.minY, y);
      region.maxY = Math.max(region.maxY, y);
    }
  }
  return region;
}

describe("image_watermark", () => {
  let base: Buffer;
  before(async () => {
    base = await makeImage(BASE);
  });

  async function watermark(parameters: Record<string, unknown>, source = base) {
    const { out } = await run(imageWatermark, "image_watermark", parameters, source);
    const meta = await outputMeta(out);
    assert.deepEqual([meta.width, meta.height, meta.format], [400, 300, "png"], "same size and format");
    return { out, pixels: await readPixels(outputFile(out)) };
  }

  const W = BASE.width;
  const H = BASE.height;
  const positions: [string, (r: Region) => boolean][] = [
    ["top-left", (r) => r.minX < W * 0.1 && r.minY < H * 0.1 && r.maxX < W / 2 && r.maxY < H / 2],
    ["top-right", (r) => r.maxX > W * 0.9 && r.minY < H * 0.1 && r.minX > W / 2 && r.maxY < H / 2],
    ["bottom-left", (r) => r.minX < W * 0.1 && r.maxY > H * 0.9 && r.maxX < W / 2 && r.minY > H / 2],
    ["bottom-right", (r) => r.maxX > W * 0.9 && r.maxY > H * 0.9 && r.minX > W / 2 && r.minY > H / 2],
    [
      "center",
      (r) =>
        Math.abs((r.minX + r.maxX) / 2 - W / 2) < W * 0.05 &&
        Math.abs((r.minY + r.maxY) / 2 - H / 2) < H * 0.05,
    ],
  ];
  for (const [position, where] of positions) {
    test(`text at ${position}: glyphs drawn there, nothing else touched`, async () => {
      const { pixels } = await watermark({ watermark_text: "Sample Mark", position });
      const region = changedRegion(pixels);
      assert.ok(region.changed > 100, `pixels changed: ${region.changed}`);
      assert.ok(where(region), `changed region ${JSON.stringify(region)} is at ${position}`);
      // Real glyphs: strong ink, and background left between the letters inside the text's box.
      assert.ok(region.maxDiff > 150, `ink differs clearly from the background (${region.maxDiff})`);
      const box = (region.maxX - region.minX + 1) * (region.maxY - region.minY + 1);
      const inked = changedRegion(pixels, 100).changed;
      assert.ok(
        inked > 50 && inked < box * 0.8,
        `glyph shapes, not a block: ${inked} of ${box} pixels inked`,
      );
      // Far from the watermark (every changed pixel is inside the region above): exactly the source.
      const [farX, farY] = [region.minX > W / 2 ? 5 : W - 6, region.minY > H / 2 ? 5 : H - 6];
      assert.deepEqual(pixelAt(pixels, farX, farY), BASE_COLOR);
    });
  }

  test("default text size follows the image; font_size and color are honoured", async () => {
    const plain = changedRegion((await watermark({ watermark_text: "HH" })).pixels);
    const big = changedRegion((await watermark({ watermark_text: "HH", font_size: 60 })).pixels);
    const plainHeight = plain.maxY - plain.minY + 1;
    const bigHeight = big.maxY - big.minY + 1;
    // Default: 5 % of 300 px = 15 px em, capitals about 11 px tall; 60 px em: about 44 px.
    assert.ok(plainHeight >= 8 && plainHeight <= 18, `default cap height ${plainHeight}`);
    assert.ok(bigHeight >= 38 && bigHeight <= 50, `60 px cap height ${bigHeight}`);
    const { pixels } = await watermark({ watermark_text: "HH", font_size: 60, color: "#ff0000" });
    const red = changedRegion(pixels, 100);
    assert.ok(red.changed > 200);
    for (let y = red.minY; y <= red.maxY; y++) {
      for (let x = red.minX; x <= red.maxX; x++) {
        const [r, g, b] = pixelAt(pixels, x, y);
        if (r! - BASE_COLOR[0]! > 150) assert.ok(g! <= BASE_COLOR[1]! && b! <= BASE_COLOR[2]!, "ink is red");
      }
    }
  });

  test("opacity 0 changes nothing; opacity 50 blends", async () => {
    const none = await watermark({ watermark_text: "Sample Mark", opacity: 0 });
    assert.equal(changedRegion(none.pixels).changed, 0);
    const full = changedRegion((await watermark({ watermark_text: "Sample Mark", font_size: 40 })).pixels);
    const half = changedRegion(
      (await watermark({ watermark_text: "Sample Mark", font_size: 40, opacity: 50 })).pixels,
    );
    // White over #204060 at 50 %: the blue channel moves by (255 - 96) / 2 ≈ 80 at most.
    assert.ok(full.maxDiff > 200, `full: ${full.maxDiff}`);
    assert.ok(half.maxDiff >= 100 && half.maxDiff <= 120, `half: ${half.maxDiff}`);
  });

  test("text too long for the image wraps or shrinks to fit, and never spills over", async () => {
    const text = "Copyright Example Photography Incorporated, all rights reserved ".repeat(4);
    const { pixels } = await watermark({ watermark_text: text, font_size: 200, position: "top-left" });
    const region = changedRegion(pixels);
    assert.ok(region.changed > 1000);
    assert.ok(region.maxX < W && region.maxY < H);
  });

  test("an image watermark is scaled to a quarter of the width and placed", async () => {
    const logo = await makeImage({ width: 400, height: 200, background: "#ff0000" });
    await writeFile(join(bucketDir, BUCKET, "logo.png"), logo);
    const { pixels } = await watermark({ watermark_image: "logo.png", position: "top-left" });
    const region = changedRegion(pixels);
    const [w, h] = [region.maxX - region.minX + 1, region.maxY - region.minY + 1];
    assert.ok(Math.abs(w - 100) <= 1 && Math.abs(h - 50) <= 1, `scaled to ${w}x${h}`);
    assert.ok(region.minX <= 8 && region.minY <= 8, "at the top-left corner");
    assert.deepEqual(pixelAt(pixels, region.minX + 50, region.minY + 25), [255, 0, 0]);
  });

  test("a watermark image keeps its transparency, times the opacity", async () => {
    const logo = await makeImage({
      width: 80,
      height: 40,
      alpha: 0,
      blocks: [{ left: 20, top: 10, width: 40, height: 20, color: "#ffffff" }],
    });
    await writeFile(join(bucketDir, BUCKET, "cutout.png"), logo);
    const { pixels } = await watermark({ watermark_image: "cutout.png", position: "center", opacity: 50 });
    const region = changedRegion(pixels);
    assert.deepEqual(
      [region.maxX - region.minX + 1, region.maxY - region.minY + 1],
      [40, 20],
      "only the opaque part",
    );
    const [r, g, b] = pixelAt(pixels, W / 2, H / 2);
    // 50 % white over #204060.
    assert.ok(
      Math.abs(r! - 144) <= 2 && Math.abs(g! - 160) <= 2 && Math.abs(b! - 176) <= 2,
      `${r},${g},${b}`,
    );
  });

  test("an undecodable watermark image fails permanently, naming it", async () => {
    await writeFile(join(bucketDir, BUCKET, "broken.png"), "not a picture");
    const h = await harness("image_watermark", { watermark_image: "broken.png" }, base);
    await expectPermanent(
      imageWatermark(h.ctx),
      /^watermark image s3:\/\/media-in\/broken\.png is not a decodable image: /,
      "broken watermark",
    );
  });

  test("keeps the source's format and applies its orientation", async () => {
    const tagged = await makeImage({ ...PHOTO, exifOrientation: 6 });
    const { out } = await run(imageWatermark, "image_watermark", { watermark_text: "Sample" }, tagged);
    const meta = await outputMeta(out);
    assert.deepEqual([meta.format, meta.width, meta.height], ["jpeg", 300, 400]);
    assert.deepEqual(outputMetadata(out), { width: 300, height: 400, format: "jpeg" });
  });
});

// ---------------------------------------------------------------------------------------------

/** Largest channel difference between a `#rrggbb` colour and an expected [r, g, b]. */
function channelDistance(hex: string, expected: number[]): number {
  const n = Number.parseInt(hex.slice(1), 16);
  return Math.max(...[(n >> 16) & 255, (n >> 8) & 255, n & 255].map((v, i) => Math.abs(v - expected[i]!)));
}

const STRIPES: ImageSpec = {
  width: 400,
  height: 200,
  stripes: [
    { color: "#ff0000", share: 0.5 },
    { color: "#00ff00", share: 0.3 },
    { color: "#0000ff", share: 0.2 },
  ],
};

describe("image_colors", () => {
  async function colors(parameters: Record<string, unknown>, source: Buffer) {
    const { out } = await run(imageColors, "image_colors", parameters, source);
    assert.equal(out.output, undefined, "no output file");
    return out.result as { colors: string[]; percentages: number[] };
  }

  function assertShares(
    result: { colors: string[]; percentages: number[] },
    expected: [number[], number][],
  ): void {
    for (const [i, [rgb, share]] of expected.entries()) {
      assert.ok(
        channelDistance(result.colors[i]!, rgb) <= 8,
        `colour ${i}: ${result.colors[i]} ≈ ${rgb.join(",")}`,
      );
      assert.ok(
        Math.abs(result.percentages[i]! - share) <= 2,
        `share ${i}: ${result.percentages[i]} ≈ ${share}`,
      );
    }
    const sum = result.percentages.reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(sum - 100) < 0.011, `shares add up to 100 (${sum})`);
    assert.deepEqual(
      result.percentages,
      [...result.percentages].sort((a, b) => b - a),
      "sorted by share",
    );
  }

  const expected: [number[], number][] = [
    [[255, 0, 0], 50],
    [[0, 255, 0], 30],
    [[0, 0, 255], 20],
  ];

  test("colour blocks give their colours and shares, largest first (PNG)", async () => {
    const result = await colors({ color_count: 3 }, await makeImage(STRIPES));
    assert.equal(result.colors.length, 3);
    assertShares(result, expected);
  });

  test("colour blocks give their colours and shares, largest first (JPEG)", async () => {
    const result = await colors({ color_count: 3 }, await makeImage({ ...STRIPES, format: "jpeg" }));
    assert.equal(result.colors.length, 3);
    assertShares(result, expected);
  });

  test("formats are exact for pure colours", async () => {
    const source = await makeImage(STRIPES);
    assert.deepEqual((await colors({ format: "hex" }, source)).colors, ["#ff0000", "#00ff00", "#0000ff"]);
    assert.deepEqual((await colors({ format: "rgb" }, source)).colors, [
      "rgb(255, 0, 0)",
      "rgb(0, 255, 0)",
      "rgb(0, 0, 255)",
    ]);
    assert.deepEqual((await colors({ format: "hsl" }, source)).colors, [
      "hsl(0, 100%, 50%)",
      "hsl(120, 100%, 50%)",
      "hsl(240, 100%, 50%)",
    ]);
    const grey = await colors(
      { format: "hsl" },
      await makeImage({ width: 50, height: 50, background: "#808080" }),
    );
    assert.deepEqual(grey, { colors: ["hsl(0, 0%, 50%)"], percentages: [100] });
  });

  test("an image with fewer colours than color_count gives only its colours", async () => {
    const two = await makeImage({
      width: 200,
      height: 100,
      stripes: [
        { color: "#123456", share: 0.75 },
        { color: "#fedcba", share: 0.25 },
      ],
    });
    const result = await colors({ color_count: 5 }, two);
    assert.deepEqual(result.colors, ["#123456", "#fedcba"]);
    assert.ok(
      Math.abs(result.percentages[0]! - 75) <= 1 && result.percentages[0]! + result.percentages[1]! === 100,
    );
  });

  test("transparent pixels are ignored", async () => {
    const half = await makeImage({
      width: 200,
      height: 100,
      alpha: 0,
      background: "#0000ff",
      blocks: [{ left: 0, top: 0, width: 100, height: 100, color: "#ff0000" }],
    });
    assert.deepEqual(await colors({}, half), { colors: ["#ff0000"], percentages: [100] });
  });

  test("an image without opaque pixels fails permanently", async () => {
    const clear = await makeImage({ width: 50, height: 50, alpha: 0 });
    const h = await harness("image_colors", {}, clear);
    await expectPermanent(imageColors(h.ctx), /^source image has no opaque pixels$/, "transparent image");
  });

  test("a photo gives color_count distinct colours, the same every time", async () => {
    const photo = await makeImage(PHOTO);
    const first = await colors({ color_count: 6 }, photo);
    const second = await colors({ color_count: 6 }, photo);
    assert.deepEqual(first, second);
    assert.equal(first.colors.length, 6);
    assert.equal(new Set(first.colors).size, 6);
    for (const c of first.colors) assert.match(c, /^#[0-9a-f]{6}$/);
  });
});

// ---------------------------------------------------------------------------------------------

describe("bad media fails permanently, never crashes or hangs", () => {
  const processors: [JobType, Processor, Record<string, unknown>][] = [
    ["image_resize", imageResize, { width: 50, height: 50 }],
    ["image_optimize", imageOptimize, {}],
    ["image_watermark", imageWatermark, { watermark_text: "mark" }],
    ["image_colors", imageColors, {}],
  ];
  const NOT_DECODABLE = /^source is not a decodable image: \S/;
  const CORRUPT = /^source image is truncated or corrupt: \S/;
  const OVER_LIMIT = /^source image has \d+ pixels \(\d+x\d+\), more than limits\.max_input_pixels \(\d+\)$/;

  const cases: {
    name: string;
    make: () => Promise<Buffer>;
    message: RegExp;
    limits?: Partial<ProcessLimits>;
  }[] = [
    {
      name: "an empty file",
      make: async () => Buffer.alloc(0),
      message: /^source is not a decodable image: the file is empty$/,
    },
    { name: "a truncated JPEG", make: async () => truncated(await makeImage(PHOTO)), message: CORRUPT },
    {
      name: "a truncated PNG",
      make: async () => truncated(await makeImage({ ...PHOTO, format: "png" })),
      message: CORRUPT,
    },
    {
      name: "a text file named .jpg",
      make: async () => Buffer.from("this is not a picture\n"),
      message: NOT_DECODABLE,
    },
    { name: "random bytes", make: async () => noiseBytes(4096), message: NOT_DECODABLE },
    {
      name: "an image over max_input_pixels",
      make: () => makeImage({ width: 1000, height: 1000, format: "jpeg" }),
      limits: { maxInputPixels: 10_000 },
      message: OVER_LIMIT,
    },
    {
      name: "a PNG declaring 50000x50000 pixels",
      make: async () => pngBomb(50_000, 50_000),
      message: OVER_LIMIT,
    },
    {
      name: "an SVG",
      make: async () => Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>'),
      message: /^source is a svg file, which is not supported/,
    },
  ];

  for (const c of cases) {
    test(c.name, async () => {
      const data = await c.make();
      for (const [type, processor, parameters] of processors) {
        const h = await harness(type, parameters, data, { sourceName: "source.jpg", limits: c.limits ?? {} });
        await expectPermanent(processor(h.ctx), c.message, `${type} on ${c.name}`);
        const left = (await readdir(h.scratchDir)).filter((f) => f.startsWith("output"));
        assert.deepEqual(left, [], `${type} leaves no output behind`);
      }
    });
  }
});
