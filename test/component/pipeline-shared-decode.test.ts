// One decode for a pipeline's image steps that read the same input (runner/image/shared.ts): the
// pixels are decoded once, auto-oriented, shrunk to the largest size a reader needs; openImage reads
// them as the image they came from; a resize from them gives the output a resize from the file
// gives; readers that must read the file itself get nothing shared.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { pino } from "pino";
import sharp from "sharp";
import { loadConfig } from "../../core/config/load.js";
import type { Job } from "../../core/jobs/records.js";
import { imageResize } from "../../jobs/image_resize/processor.js";
import { openImage } from "../../runner/image/open.js";
import { sharedDecodes, type ImageReader } from "../../runner/image/shared.js";
import type { ProcessContext } from "../../runner/processor.js";
import { makeImage, readPixels } from "../support/media.js";

const config = loadConfig({ env: {} });
const limits = { maxInputPixels: config.limits.maxInputPixels, maxOutputDimension: 16384 };
const base = { limits, signal: new AbortController().signal, logger: pino({ level: "silent" }) };
const resize = (width: number, height: number, input?: string): ImageReader => ({
  input,
  type: "image_resize",
  parameters: { width, height },
});

/** 640×480 as displayed: stored 480×640 with EXIF orientation 6 (turned 90°). */
const turned = () => makeImage({ width: 480, height: 640, format: "jpeg", photo: true, exifOrientation: 6 });

describe("one decode shared by image steps", () => {
  test("shrunk to the largest size its readers need, auto-oriented, opened as the source it came from", async () => {
    const source = await turned();
    const shared = await sharedDecodes(
      [resize(160, 120), resize(320, 240), { input: undefined, type: "image_colors", parameters: {} }],
      () => source,
      base,
    );
    const pixels = shared.get(undefined);
    assert.ok(pixels, "the source's readers share one decode");
    assert.equal(pixels.length, 320 * 240 * 3, "320×240 RGB: the larger resize's size, turned upright");
    const image = await openImage(pixels, { maxInputPixels: limits.maxInputPixels });
    assert.deepEqual([image.width, image.height, image.format], [320, 240, "jpeg"]);
  });

  test("a watermark needs the whole size; one reader alone, or one that reads the file, shares nothing", async () => {
    const source = await turned();
    const watermark: ImageReader = { input: undefined, type: "image_watermark", parameters: {} };
    const whole = await sharedDecodes([resize(32, 24), watermark], () => source, base);
    assert.equal(whole.get(undefined)?.length, 640 * 480 * 3);
    assert.equal((await sharedDecodes([resize(32, 24)], () => source, base)).size, 0);
    const optimize: ImageReader = { input: undefined, type: "image_optimize", parameters: {} };
    assert.equal((await sharedDecodes([resize(32, 24), optimize], () => source, base)).size, 0);
    // Readers of different inputs are grouped by input.
    const byInput = await sharedDecodes(
      [resize(32, 24, "a"), resize(16, 12, "a"), resize(8, 6)],
      (input) => (input === "a" ? source : Buffer.alloc(0)),
      base,
    );
    assert.deepEqual([...byInput.keys()], ["a"]);
  });

  test("a resize from the shared pixels gives the resize from the file: size, format, pixels", async () => {
    const source = await turned();
    const shared = (await sharedDecodes([resize(320, 240), resize(200, 150)], () => source, base)).get(
      undefined,
    )!;
    const now = new Date().toISOString();
    const job: Job = {
      id: "shared-decode",
      type: "image_resize",
      status: "processing",
      source_bucket: "in",
      source_key: "photo.jpg",
      parameters: { width: 200, height: 150, format: "png" },
      created_at: now,
      updated_at: now,
    };
    const ctx = (sourceBuffer: Buffer): ProcessContext => ({
      ...base,
      job,
      sourcePath: "/nonexistent/source.jpg",
      sourceBuffer,
      scratchDir: "/nonexistent",
      progress: () => undefined,
      fetchObject: () => Promise.reject(new Error("no objects here")),
      config,
    });
    const [fromShared, fromFile] = await Promise.all([imageResize(ctx(shared)), imageResize(ctx(source))]);
    const bytes = (out: typeof fromShared) => (out.output as { buffer: Buffer }).buffer;
    const [a, b] = await Promise.all([readPixels(bytes(fromShared)), readPixels(bytes(fromFile))]);
    assert.deepEqual([a.width, a.height], [200, 150]);
    assert.deepEqual([a.width, a.height], [b.width, b.height]);
    assert.equal((await sharp(bytes(fromShared)).metadata()).format, "png");
    // Resampled twice (to the shared size, then the step's) against once: close, not identical.
    let squared = 0;
    for (let i = 0; i < a.data.length; i++) squared += (a.data[i]! - b.data[i]!) ** 2;
    const psnr = 10 * Math.log10(255 ** 2 / (squared / a.data.length));
    assert.ok(psnr > 30, `PSNR ${psnr.toFixed(1)} dB`);
  });
});
