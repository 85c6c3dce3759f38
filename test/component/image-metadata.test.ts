// The image_metadata processor on images sharp makes here: EXIF (camera, date, GPS, orientation) and
// an ICC profile embedded, or neither; from a file and from memory; and what is not an image.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import sharp from "sharp";
import { imageMetadata } from "../../jobs/image_metadata/processor.js";
import { loadConfig, type Config } from "../../core/config/load.js";
import type { Job } from "../../core/jobs/records.js";
import { PermanentError } from "../../runner/errors.js";
import type { ProcessContext } from "../../runner/processor.js";

let root: string;
let config: Config;

before(async () => {
  root = await mkdtemp(join(tmpdir(), "image-metadata-"));
  config = loadConfig({ env: {} });
});

after(async () => {
  await rm(root, { recursive: true, force: true });
});

/** The processor's result for `source`, read from a file, or from memory. */
async function metadataOf(
  source: Buffer,
  from: "file" | "memory" = "file",
): Promise<Record<string, unknown>> {
  const scratchDir = await mkdtemp(join(root, "job-"));
  const sourcePath = join(scratchDir, "source.img");
  if (from === "file") await writeFile(sourcePath, source);
  const now = new Date().toISOString();
  const job: Job = {
    id: `test-${scratchDir.slice(-6)}`,
    type: "image_metadata",
    status: "processing",
    source_bucket: "media",
    source_key: "in/photo",
    parameters: {},
    created_at: now,
    updated_at: now,
  };
  const ctx: ProcessContext = {
    job,
    sourcePath,
    ...(from === "memory" ? { sourceBuffer: source } : {}),
    scratchDir,
    limits: {
      maxInputPixels: config.limits.maxInputPixels,
      maxOutputDimension: config.limits.maxOutputDimension,
    },
    signal: new AbortController().signal,
    progress: () => {},
    fetchObject: () => Promise.reject(new Error("image_metadata fetches nothing")),
    logger: pino({ level: "silent" }),
    config,
  };
  const out = await imageMetadata(ctx);
  assert.equal(out.output, undefined, "image_metadata writes no output");
  return out.result;
}

/** A 64×48 photo-like JPEG, rotated by its EXIF orientation 6, from a camera with a GPS, in Display P3. */
async function cameraJpeg(gps = true): Promise<Buffer> {
  return sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 200, g: 120, b: 40 } } })
    .withMetadata({ orientation: 6 })
    .withIccProfile("p3")
    .withExif({
      IFD0: { Make: "Testcam", Model: "T-1000" },
      IFD2: { DateTimeOriginal: "2024:05:01 10:30:15", OffsetTimeOriginal: "+02:00" },
      ...(gps ? { IFD3: { GPSLatitudeRef: "N", GPSLatitude: "48/1 51/1 24/1" } } : {}),
    })
    .jpeg()
    .toBuffer();
}

describe("image_metadata", () => {
  test("a camera's JPEG: size as displayed, orientation, ICC profile and EXIF fields", async () => {
    const source = await cameraJpeg();
    const result = await metadataOf(source);
    assert.deepEqual(result, {
      width: 48,
      height: 64,
      format: "jpeg",
      size: source.length,
      orientation: 6,
      color_space: "srgb",
      has_alpha: false,
      icc_profile: result.icc_profile,
      exif: { make: "Testcam", model: "T-1000", date_taken: "2024-05-01T10:30:15+02:00", gps: true },
    });
    const profile = result.icc_profile as Record<string, string>;
    assert.match(profile.description ?? "", /P3/);
    assert.equal(profile.color_space, "RGB");
    assert.match(profile.version ?? "", /^[24]\.\d/);
  });

  test("read from memory, the same answer", async () => {
    const source = await cameraJpeg();
    assert.deepEqual(await metadataOf(source, "memory"), await metadataOf(source, "file"));
  });

  test("EXIF without a GPS position says so", async () => {
    const result = await metadataOf(await cameraJpeg(false));
    assert.equal((result.exif as { gps: boolean }).gps, false);
  });

  test("a PNG with alpha and no metadata: no orientation, profile or EXIF", async () => {
    const source = await sharp({
      create: { width: 30, height: 20, channels: 4, background: { r: 0, g: 0, b: 255, alpha: 0.5 } },
    })
      .png()
      .toBuffer();
    assert.deepEqual(await metadataOf(source, "memory"), {
      width: 30,
      height: 20,
      format: "png",
      size: source.length,
      color_space: "srgb",
      has_alpha: true,
    });
  });

  test("a greyscale PNG: its colour space", async () => {
    const source = await sharp({ create: { width: 16, height: 16, channels: 3, background: "#808080" } })
      .toColourspace("b-w")
      .png()
      .toBuffer();
    const result = await metadataOf(source);
    assert.equal(result.format, "png");
    assert.equal(result.color_space, "b-w");
    assert.equal(result.has_alpha, false);
  });

  test("what is not an image fails for good, saying so", async () => {
    await assert.rejects(
      metadataOf(Buffer.from("this is a text file, not an image")),
      (err: unknown) => err instanceof PermanentError && /^source is not a decodable image/.test(err.message),
    );
  });
});
