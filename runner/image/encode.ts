// Output formats of the image jobs: which one a job writes, and how each is encoded.
//
// Two modes. `standard` (resize, watermark) favours speed at a good size; `optimize` (the optimize
// job, whose point is the smallest file) spends more CPU where it pays:
// - JPEG: libjpeg-turbo's defaults; `optimize`: all of mozjpeg (trellis quantisation, optimised
//   progressive scans).
// - PNG: lossless with adaptive row filters, kept a palette image when the source was one;
//   `optimize`: quantised to a palette (libimagequant) with `quality` the lowest acceptable, zlib 9.
// - WebP: effort 4; `optimize`: effort 6 without smart subsampling.
// - AVIF: effort 1 with 4:2:0 (libaom speed 8, imgproxy's default); `optimize`: effort 4 with 4:4:4
//   (effort 3 above 8 megapixels). Both name libaom's tune, `iq`, rather than take sharp's default.
// The figures each choice rests on (bench/encoders.ts): docs/performance.md#encoder-settings.
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
  /** The pixels written (width × height), when known: bounds how much effort an encoder may spend. */
  pixels?: number;
}

/**
 * The most pixels AVIF `optimize` spends effort 4 on: 2.6 s of CPU per megapixel (effort 3: 0.6 s)
 * keeps an 8-megapixel image near 20 s; a larger one gets effort 3, so that a 50-megapixel photo
 * stays around 30 s instead of outlasting a two-minute job timeout.
 */
export const AVIF_OPTIMIZE_FULL_EFFORT_MAX_PIXELS = 8_000_000;

/** AVIF's effort, chroma subsampling and libaom tune for a mode and an image of `pixels` (see the top). */
export function avifSettings(
  mode: EncodeMode,
  pixels = Infinity,
): { effort: number; chromaSubsampling: "4:2:0" | "4:4:4"; tune: "iq" } {
  const tune = "iq";
  if (mode === "standard") return { effort: 1, chromaSubsampling: "4:2:0", tune };
  return { effort: pixels <= AVIF_OPTIMIZE_FULL_EFFORT_MAX_PIXELS ? 4 : 3, chromaSubsampling: "4:4:4", tune };
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
        ? pipeline.webp({ quality, effort: 6 })
        : pipeline.webp({ quality, effort: 4 });
    case "avif":
      return pipeline.avif({ quality, ...avifSettings(mode, options.pixels) });
  }
}

/** The format name of a written file as the job result gives it (libvips says `heif` for AVIF). */
export function resultFormatName(sharpFormat: string): string {
  return sharpFormat === "heif" ? "avif" : sharpFormat;
}
