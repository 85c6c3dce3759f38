// image_resize: the source scaled into a width × height box.
//
// Pipeline (one pass, libvips streams it): open and check → EXIF orientation applied → resize with
// `fit` → encode → write (to memory when the runner kept the source in memory). Resizing from a file lets sharp shrink JPEG and WebP while decoding
// (shrink-on-load), so a large photo is never fully decoded to make a thumbnail.
//
// fit (sharp's meanings): cover (default) fills the box and crops the overflow, centred;
// contain fits inside and pads to the box (transparent where the format has alpha, white for JPEG);
// fill stretches to the box; inside fits inside, no padding; outside covers the box, no cropping.
//
// No enlargement unless `enlarge: true`. For cover, contain and fill, a box the source is too small
// for is scaled down as a whole until no enlargement is needed, so the output keeps the requested
// aspect ratio (a 1200×400 cover box on a 600×600 source gives 600×200, not sharp's 600×400). For
// inside and outside sharp's withoutEnlargement already does exactly that.
//
// Output format: parameters.format, else the source's (GIF → PNG; TIFF, HEIC → PNG with alpha,
// else JPEG; see encode.ts). Neither side of the output may exceed limits.max_output_dimension.
import { withDefaults, type FIT_MODES } from "../../core/jobs/parameters.js";
import { PermanentError } from "../../runner/errors.js";
import { defaultOutputFormat, encode, type OutputFormat } from "../../runner/image/encode.js";
import { openImage } from "../../runner/image/open.js";
import { imageOutput, writeImage } from "../../runner/image/output.js";
import type { Processor } from "../../runner/processor.js";

type Fit = (typeof FIT_MODES)[number];

export const imageResize: Processor = async (ctx) => {
  const startedAt = performance.now();
  const parameters = withDefaults("image_resize", ctx.job.parameters);
  const { fit, enlarge, quality } = parameters;

  const source = await openImage(ctx.sourceBuffer ?? ctx.sourcePath, {
    maxInputPixels: ctx.limits.maxInputPixels,
    signal: ctx.signal,
  });
  ctx.progress(10, "source opened");
  ctx.signal.throwIfAborted();

  const box = resizeBox(source, parameters.width, parameters.height, fit, enlarge);
  const planned = plannedSize(source, box, fit, enlarge);
  const limit = ctx.limits.maxOutputDimension;
  if (planned.width > limit || planned.height > limit) {
    throw new PermanentError(
      `the output would be ${planned.width}x${planned.height} pixels; ` +
        `neither side may exceed limits.max_output_dimension (${limit})`,
    );
  }

  const format: OutputFormat = parameters.format ?? defaultOutputFormat(source);
  const pipeline = source
    .pipeline()
    .autoOrient()
    .resize({
      width: box.width,
      height: box.height,
      fit,
      position: "centre",
      withoutEnlargement: !enlarge,
      background: format === "jpeg" ? "#ffffff" : { r: 0, g: 0, b: 0, alpha: 0 },
    });
  // contain pads with transparency where the format can hold it, which adds an alpha channel.
  const hasAlpha = source.hasAlpha || (fit === "contain" && format !== "jpeg");
  const encoded = encode(pipeline, {
    format,
    quality,
    mode: "standard",
    hasAlpha,
    palette: source.isPalette,
  });

  ctx.progress(30, "resizing");
  const { info, data } = await writeImage(ctx, source, encoded, format, planned.width * planned.height);
  ctx.progress(90, "resized");
  return imageOutput(data, info, startedAt);
};

interface Size {
  width: number;
  height: number;
}

/**
 * The box handed to sharp. Without enlargement, a cover/contain/fill box that would need the
 * source scaled up is scaled down by that factor (floored, so the source is never scaled up).
 */
export function resizeBox(source: Size, width: number, height: number, fit: Fit, enlarge: boolean): Size {
  if (enlarge || fit === "inside" || fit === "outside") return { width, height };
  const sx = width / source.width;
  const sy = height / source.height;
  const scale = fit === "contain" ? Math.min(sx, sy) : Math.max(sx, sy);
  if (scale <= 1) return { width, height };
  return { width: Math.max(1, Math.floor(width / scale)), height: Math.max(1, Math.floor(height / scale)) };
}

/** The output size the box gives (to check limits before any work). */
function plannedSize(source: Size, box: Size, fit: Fit, enlarge: boolean): Size {
  if (fit !== "inside" && fit !== "outside") return box;
  const sx = box.width / source.width;
  const sy = box.height / source.height;
  let scale = fit === "inside" ? Math.min(sx, sy) : Math.max(sx, sy);
  if (!enlarge) scale = Math.min(scale, 1);
  return {
    width: Math.max(1, Math.round(source.width * scale)),
    height: Math.max(1, Math.round(source.height * scale)),
  };
}

export default imageResize;
