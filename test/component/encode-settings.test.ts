// The AVIF settings the runner encodes with: the fast ones for resizes, more effort for optimize,
// bounded for large images; libaom tuned for image quality (IQ) in both, whatever sharp's default.
import { test } from "node:test";
import assert from "node:assert/strict";
import { AVIF_OPTIMIZE_FULL_EFFORT_MAX_PIXELS, avifSettings, encode } from "../../runner/image/encode.js";
import { sharp } from "../../runner/image/settings.js";
import { makeImage } from "../support/media.js";

test("AVIF: effort 1 with 4:2:0 for resizes; effort 4 with 4:4:4 for optimize, 3 above 8 megapixels", () => {
  assert.deepEqual(avifSettings("standard", 100e6), { effort: 1, chromaSubsampling: "4:2:0", tune: "iq" });
  assert.deepEqual(avifSettings("optimize", 1224 * 816), {
    effort: 4,
    chromaSubsampling: "4:4:4",
    tune: "iq",
  });
  assert.deepEqual(avifSettings("optimize", AVIF_OPTIMIZE_FULL_EFFORT_MAX_PIXELS), {
    effort: 4,
    chromaSubsampling: "4:4:4",
    tune: "iq",
  });
  assert.deepEqual(avifSettings("optimize", 50e6), { effort: 3, chromaSubsampling: "4:4:4", tune: "iq" });
  assert.deepEqual(
    avifSettings("optimize"),
    { effort: 3, chromaSubsampling: "4:4:4", tune: "iq" },
    "size unknown: bounded",
  );
});

test("AVIF: what the runner writes is libaom's IQ-tuned encode, not the SSIM-tuned one", async () => {
  const source = await makeImage({ width: 160, height: 120, format: "png", photo: true });
  const ours = await encode(sharp(source), {
    format: "avif",
    quality: 60,
    mode: "standard",
    hasAlpha: false,
  }).toBuffer();
  const as = (tune: "iq" | "ssim") =>
    sharp(source).avif({ quality: 60, effort: 1, chromaSubsampling: "4:2:0", tune }).toBuffer();
  const [iq, ssim] = await Promise.all([as("iq"), as("ssim")]);
  assert.ok(!iq.equals(ssim), "the two tunes give different files");
  assert.ok(ours.equals(iq), "the runner's file is the IQ-tuned one");
});
