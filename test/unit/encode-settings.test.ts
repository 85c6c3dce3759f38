// The AVIF settings the runner encodes with: the fast ones for resizes, more effort for optimize,
// bounded for large images.
import { test } from "node:test";
import assert from "node:assert/strict";
import { AVIF_OPTIMIZE_FULL_EFFORT_MAX_PIXELS, avifSettings } from "../../runner/image/encode.js";

test("AVIF: effort 1 with 4:2:0 for resizes; effort 4 with 4:4:4 for optimize, 3 above 8 megapixels", () => {
  assert.deepEqual(avifSettings("standard", 100e6), { effort: 1, chromaSubsampling: "4:2:0" });
  assert.deepEqual(avifSettings("optimize", 1224 * 816), { effort: 4, chromaSubsampling: "4:4:4" });
  assert.deepEqual(avifSettings("optimize", AVIF_OPTIMIZE_FULL_EFFORT_MAX_PIXELS), {
    effort: 4,
    chromaSubsampling: "4:4:4",
  });
  assert.deepEqual(avifSettings("optimize", 50e6), { effort: 3, chromaSubsampling: "4:4:4" });
  assert.deepEqual(
    avifSettings("optimize"),
    { effort: 3, chromaSubsampling: "4:4:4" },
    "size unknown: bounded",
  );
});
