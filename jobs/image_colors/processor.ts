// image_colors: the image's dominant colours and their shares. No output file.
//
// Pipeline: open and check → a sample of about SAMPLE_PIXELS pixels (a nearest-neighbour resize,
// i.e. a regular grid of the image's own pixels: an averaging filter would invent blends of
// neighbouring colours along every edge, which then show up as "colours" of the image) → sRGB,
// RGBA → histogram of the opaque pixels (alpha ≥ 128: transparent pixels are ignored)
// → quantize.ts (k-means in OKLab, deterministic) → shares in percent of the counted pixels,
// rounded to two decimals and adding up to exactly 100, largest first.
//
// Up to color_count colours: an image with fewer distinct colours (after merging colours too close
// to tell apart) gives fewer (see quantize.ts). An image without an opaque pixel fails.
import { withDefaults } from "../../core/jobs/parameters.js";
import { PermanentError } from "../../runner/errors.js";
import { formatColor } from "../../runner/image/color.js";
import { openImage } from "../../runner/image/open.js";
import { percentages, quantize } from "../../runner/image/quantize.js";
import type { Processor } from "../../runner/processor.js";

/** Pixels sampled: shares come out within about half a point, and clustering takes milliseconds. */
export const SAMPLE_PIXELS = 128 * 128;
/** Pixels less opaque than this are not counted. */
const MIN_ALPHA = 128;

export const imageColors: Processor = async (ctx) => {
  const { color_count: colorCount, format } = withDefaults("image_colors", ctx.job.parameters);

  const source = await openImage(ctx.sourceBuffer ?? ctx.sourcePath, {
    maxInputPixels: ctx.limits.maxInputPixels,
    signal: ctx.signal,
  });
  ctx.progress(10, "source opened");
  ctx.signal.throwIfAborted();

  // The stored size: orientation does not change which colours there are.
  const { width, height } = source.metadata;
  const scale = Math.min(1, Math.sqrt(SAMPLE_PIXELS / (width * height)));
  let pipeline = source.pipeline();
  if (scale < 1) {
    pipeline = pipeline.resize({
      width: Math.max(1, Math.round(width * scale)),
      height: Math.max(1, Math.round(height * scale)),
      fit: "fill",
      kernel: "nearest",
    });
  }
  const { data, info } = await source.run(() =>
    pipeline.toColourspace("srgb").ensureAlpha().raw().toBuffer({ resolveWithObject: true }),
  );
  if (info.channels !== 4) throw new Error(`expected RGBA samples, got ${info.channels} channels`);
  ctx.progress(50, "sampled");
  ctx.signal.throwIfAborted();

  const histogram = new Map<number, number>();
  let counted = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (data[i + 3]! < MIN_ALPHA) continue;
    const key = (data[i]! << 16) | (data[i + 1]! << 8) | data[i + 2]!;
    histogram.set(key, (histogram.get(key) ?? 0) + 1);
    counted++;
  }
  if (counted === 0) throw new PermanentError("source image has no opaque pixels");

  const clusters = quantize(histogram, { maxColors: colorCount });
  ctx.progress(90, "colours found");
  return {
    result: {
      colors: clusters.map((c) => formatColor(c.rgb, format)),
      percentages: percentages(
        clusters.map((c) => c.count),
        counted,
      ),
    },
  };
};

export default imageColors;
