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
// - WebP and AVIF: chosen with bench/encoders.ts (docs/performance.md, "Encoder settings"): encode
//   time at concurrency 2 on the 2-core machine, output size, and SSIM of the decoded output (Y, Cb
//   and Cr weighted 6:1:1, and luma alone) on a generated photo-like scene, 800×600 as image_resize
//   writes it and 1224×816 at full size as image_optimize does. "Size at equal SSIM" is the size
//   interpolated between qualities 50–80 (AVIF) or 60–85 (WebP) at the SSIM of the setting compared.
// - WebP `standard`: effort 4 (libwebp's default). Effort 3 measured the same size and time; 5 was
//   0.5–1 % smaller for 15–20 % more CPU; 6 2.5–3 % smaller for 2.1–2.6× the CPU (800×600 at q75:
//   108 against 42 ms per image); 2 was twice as fast but 10–14 % larger.
// - WebP `optimize`: effort 6 without smart subsampling. Smart subsampling cost 40–55 % more CPU
//   (1 megapixel at q75: 239 against 156 ms) for no smaller file at equal SSIM (against effort 4:
//   -0.4 % with it and -2.5 % without at 800×600, -3.1 % and -2.7 % at 1 megapixel) and a larger
//   one at equal luma SSIM.
// - AVIF `standard`: effort 1, 4:2:0: libvips passes libaom speed 9 - effort, so this is libaom
//   speed 8 with 4:2:0, imgproxy's default, at its throughput: 800×600 at q65, 107 ms of CPU and
//   18.0 images/s, against 399 ms and 4.8/s for the effort 3, 4:4:4 used before (whose output was
//   23 % smaller at equal SSIM, 6 % at equal luma SSIM). Effort 1 with 4:4:4 was 16 % smaller at
//   equal SSIM but 3 % larger at equal luma SSIM, at 15.9 images/s; effort 0 was 3× as fast but
//   9–16 % larger.
// - AVIF `optimize`: effort 4, 4:4:4 (sharp's default), up to 8 megapixels (effort 3 above). At 1 megapixel it was 10 % smaller at equal
//   SSIM than effort 3 (22 % against 14 % below effort 1, 4:2:0) for 4.4× the CPU (2.6 s against
//   0.6 s per megapixel at q65). Effort 5 gained 5 % more for 1.4× that again, 6 another 4 % for 1.8×
//   (6.8 s per megapixel: a 20-megapixel photo would outlast the 2-minute job timeout on one core).
//   At effort 4, 4:4:4 was 5.5 % smaller than 4:2:0 at equal SSIM (4:2:0 was 7 % smaller at equal
//   luma SSIM, which does not see what subsampling drops).
// - AVIF, both modes: libaom tuned for image quality (`tune: "iq"`), named here rather than left to
//   sharp's default (which is IQ with the libheif and libaom sharp bundles today). On six photographs
//   the SSIM tune, imgproxy's, took 15–18 % less encode CPU but was 9–11 % larger at equal
//   SSIMULACRA 2 (and 1–3 % smaller at equal SSIM, the score it optimises).
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
