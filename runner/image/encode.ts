// Output formats of the image jobs: which one a job writes, and how each is encoded.
//
// Two modes. `standard` (resize, watermark) favours speed at a good size; `optimize` (the optimize
// job, whose whole point is the smallest file) spends more CPU where it pays:
// - JPEG: `optimize` uses all of mozjpeg (trellis quantisation, optimised progressive scans):
//   ~13 % smaller than libjpeg at the same quality, but ~18× slower (6 s for 12 megapixels on 2
//   cores). `standard` uses libjpeg-turbo's defaults: mozjpeg's tables and deringing alone made
//   files ~2.5 % smaller at 3× the encode time (48.6 ms against 16.0 ms for 800×600), which was
//   the largest single cost of a resize job (the resize benchmark, docs/performance.md).
// - PNG: lossless with adaptive row filters in `standard` (filters matter more than the zlib level:
//   a tenth of the size of unfiltered output on smooth photos), kept as a palette image when the
//   source was one. `optimize` quantises to a palette (libimagequant, as pngquant/TinyPNG do) with
//   `quality` as the lowest acceptable quality, at zlib level 9.
// - WebP: effort 4 (libwebp's default) in `standard`, 6 (its slowest) with smart subsampling in
//   `optimize`; both are still well under a second per megapixel.
// - AVIF: effort 3 in both. libaom gets 5–7 times slower from effort 4 up (24–28 s for 3
//   megapixels on 2 cores, against ~4 s at 3) for files only ~5–10 % smaller. Even so, AVIF is the
//   slow format: count ~15 s per 12 megapixels.
import type { Sharp } from "sharp";
import type { IMAGE_FORMATS } from "../../core/jobs/parameters.js";
import type { SourceImage } from "./open.js";

export type OutputFormat = (typeof IMAGE_FORMATS)[number];
export type EncodeMode = "standard" | "optimize";

export const CONTENT_TYPES: Readonly<Record<OutputFormat, string>> = {
  jpeg: "image/jpeg",
  png: "image/png",
  webp: "image/webp",
  avif: "image/avif",
};

export const EXTENSIONS: Readonly<Record<OutputFormat, string>> = {
  jpeg: ".jpg",
  png: ".png",
  webp: ".webp",
  avif: ".avif",
};

/**
 * The source's own format when we can write it. Sources we only read: GIF becomes PNG (graphics
 * with few colours, which PNG keeps losslessly; libvips decodes every GIF with alpha anyway); TIFF
 * and HEIC become PNG when they have an alpha channel, to keep it, and JPEG otherwise. An animated
 * GIF or WebP gives its first frame.
 */
export function defaultOutputFormat(source: Pick<SourceImage, "format" | "hasAlpha">): OutputFormat {
  switch (source.format) {
    case "jpeg":
    case "png":
    case "webp":
    case "avif":
      return source.format;
    case "gif":
      return "png";
    default:
      return source.hasAlpha ? "png" : "jpeg";
  }
}

export interface EncodeOptions {
  format: OutputFormat;
  /** 1–100; lossy formats (and the PNG palette of `optimize`) use it. */
  quality: number;
  mode: EncodeMode;
  /** The image being encoded has an alpha channel (JPEG then gets a white background). */
  hasAlpha: boolean;
  /** The source was a palette image: a `standard` PNG stays one. */
  palette?: boolean;
}

/** Adds the output format and its options to a pipeline. */
export function encode(pipeline: Sharp, options: EncodeOptions): Sharp {
  const { quality, mode } = options;
  switch (options.format) {
    case "jpeg":
      // JPEG has no alpha: transparent areas become white, as they look on a web page, rather
      // than libvips' black.
      if (options.hasAlpha) pipeline = pipeline.flatten({ background: "#ffffff" });
      return mode === "optimize" ? pipeline.jpeg({ quality, mozjpeg: true }) : pipeline.jpeg({ quality });
    case "png":
      return mode === "optimize"
        ? pipeline.png({ palette: true, quality, effort: 10, compressionLevel: 9 })
        : pipeline.png({ compressionLevel: 6, adaptiveFiltering: true, palette: options.palette === true });
    case "webp":
      return mode === "optimize"
        ? pipeline.webp({ quality, effort: 6, smartSubsample: true })
        : pipeline.webp({ quality, effort: 4 });
    case "avif":
      return pipeline.avif({ quality, effort: 3 });
  }
}

/** The format name of a written file as the job result gives it (libvips says `heif` for AVIF). */
export function resultFormatName(sharpFormat: string): string {
  return sharpFormat === "heif" ? "avif" : sharpFormat;
}
