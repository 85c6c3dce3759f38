// Opens an image with sharp the safe way, for every image processor.
//
// Order: the file must exist (a missing file is the runner's problem, not the input's, so it stays
// transient) → the header only (sharp's metadata(): cheap, no pixel decoding) → refuse what is not
// a raster format we process and anything over limits.max_input_pixels, before a single pixel is
// decoded → hand out pipelines with the same safe options.
//
// Safe options: `limitInputPixels` repeats our own check inside libvips; `failOn: "error"` aborts on
// corrupt or truncated pixel data but tolerates the harmless warnings real cameras and editors
// produce (sharp's own default, "warning", rejects many such photos); `sequentialRead` streams the
// source top to bottom in small strips, and libvips switches to random access by itself where an
// operation needs it (a 90° EXIF rotation).
//
// Errors: a header sharp cannot read, an unknown format, a declared size over the limit →
// PermanentError. Corrupt pixel data only shows while decoding, in the middle of a pipeline; run()
// then decodes the image once more on its own, and only when that fails too is the input to blame
// (PermanentError "… is not a decodable image: …"). Anything else (disk full, out of memory)
// stays transient.
import { stat } from "node:fs/promises";
import type { Metadata, Sharp, SharpOptions } from "sharp";
import { describeError, PermanentError } from "../errors.js";
import { sharp } from "./settings.js";

/** Source formats the image jobs accept, as named here (sharp calls both AVIF and HEIC `heif`). */
export type SourceFormat = "jpeg" | "png" | "webp" | "avif" | "heic" | "gif" | "tiff";

/** sharp's format names of the raster formats we decode. */
export const DECODED_FORMATS: ReadonlySet<string> = new Set(["jpeg", "png", "webp", "heif", "gif", "tiff"]);

export interface OpenOptions {
  maxInputPixels: number;
  /** The image's name at the start of a "not decodable" message. Default `source`. */
  label?: string;
  /** The image's name at the start of the pixel-limit message. Default `source image`. */
  imageLabel?: string;
  /** When aborted, a failing pipeline is not examined further. */
  signal?: AbortSignal;
}

/** An opened, checked image: its header facts and a factory of pipelines reading it. */
export class SourceImage {
  /** Width as displayed, EXIF orientation applied. */
  readonly width: number;
  /** Height as displayed, EXIF orientation applied. */
  readonly height: number;
  readonly format: SourceFormat;
  readonly hasAlpha: boolean;
  /** A palette (indexed-colour) image, e.g. a PNG8. */
  readonly isPalette: boolean;
  /** EXIF, ICC, XMP or IPTC present. */
  readonly hasMetadata: boolean;

  constructor(
    readonly path: string,
    readonly bytes: number,
    readonly metadata: Metadata,
    private readonly options: SharpOptions,
    private readonly label: string,
    private readonly signal?: AbortSignal,
  ) {
    this.width = metadata.autoOrient?.width ?? metadata.width;
    this.height = metadata.autoOrient?.height ?? metadata.height;
    this.format = sourceFormat(metadata);
    this.hasAlpha = metadata.hasAlpha;
    this.isPalette = metadata.isPalette;
    this.hasMetadata = Boolean(metadata.exif ?? metadata.icc ?? metadata.xmp ?? metadata.iptc);
  }

  /** A new pipeline on the image, with the safe options. Multi-page sources give their first page. */
  pipeline(): Sharp {
    return sharp(this.path, this.options);
  }

  /**
   * Runs work that decodes this image. When it fails, finds out whether the image itself is at
   * fault (PermanentError) or something else is (the original error, transient).
   */
  async run<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (err instanceof PermanentError || this.signal?.aborted) throw err;
      const reason = await this.decodeFailure();
      if (reason !== undefined) throw new PermanentError(`${this.label} is not a decodable image: ${reason}`);
      throw err;
    }
  }

  /** Decodes every pixel once, keeping nothing; the reason it fails, or undefined. */
  private async decodeFailure(): Promise<string | undefined> {
    try {
      await this.pipeline().stats();
      return undefined;
    } catch (err) {
      return decodeReason(err);
    }
  }
}

/** Opens and checks an image file. Throws PermanentError for input that can never be processed. */
export async function openImage(path: string, options: OpenOptions): Promise<SourceImage> {
  const label = options.label ?? "source";
  const imageLabel = options.imageLabel ?? "source image";
  const { size } = await stat(path); // ENOENT: not the input's fault, stays transient
  if (size === 0) throw new PermanentError(`${label} is not a decodable image: the file is empty`);

  const sharpOptions: SharpOptions = {
    failOn: "error",
    limitInputPixels: options.maxInputPixels,
    sequentialRead: true,
  };
  let metadata: Metadata;
  try {
    // Only the header is read here, so sharp's own pixel limit is lifted for this call: the check
    // below then names the image's size instead of sharp's bare "exceeds pixel limit".
    metadata = await sharp(path, { ...sharpOptions, limitInputPixels: false }).metadata();
  } catch (err) {
    throw new PermanentError(`${label} is not a decodable image: ${decodeReason(err)}`);
  }
  if (!DECODED_FORMATS.has(metadata.format)) {
    throw new PermanentError(
      `${label} is a ${String(metadata.format)} file, which is not supported: ` +
        "give a JPEG, PNG, WebP, AVIF, HEIC, GIF or TIFF image",
    );
  }
  const pixels = metadata.width * metadata.height;
  if (!(pixels > 0)) throw new PermanentError(`${label} is not a decodable image: it declares no pixels`);
  if (pixels > options.maxInputPixels) {
    throw new PermanentError(
      `${imageLabel} has ${pixels} pixels (${metadata.width}x${metadata.height}), ` +
        `more than limits.max_input_pixels (${options.maxInputPixels})`,
    );
  }
  return new SourceImage(path, size, metadata, sharpOptions, label, options.signal);
}

function sourceFormat(metadata: Metadata): SourceFormat {
  if (metadata.format === "heif") return metadata.compression === "av1" ? "avif" : "heic";
  return metadata.format as SourceFormat;
}

/** sharp's reason, as one readable line. */
function decodeReason(err: unknown): string {
  const line = describeError(err);
  if (/unsupported image format/i.test(line)) return "not a known image format";
  return line.replace(/^Input file (?:contains |has )?/i, "").replace(/[.:]+$/, "");
}
