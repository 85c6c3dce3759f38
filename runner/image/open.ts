// Opens an image with sharp the safe way, for every image processor.
//
// The source is a file or its bytes in memory (a small source the runner kept in memory).
//
// Order: the file must exist (a missing file is the runner's problem, not the input's, so it stays
// transient) → the header only (sharp's metadata(): cheap, no pixel decoding) → refuse what is not
// a raster format we process, anything over limits.max_input_pixels, and a JPEG whose declared size
// cannot fit in its file (jpeg.ts), before a single pixel is decoded → hand out pipelines with the
// same safe options.
//
// Safe options: `limitInputPixels` repeats our own check inside libvips; `failOn: "error"` aborts on
// corrupt or truncated pixel data but tolerates the harmless warnings real cameras and editors
// produce (sharp's own default, "warning", rejects many such photos); `sequentialRead` streams the
// source top to bottom in small strips, and libvips switches to random access by itself where an
// operation needs it (a 90° EXIF rotation).
//
// Lost data is never harmless, though: libjpeg fills the blocks of a JPEG whose data ends early
// (the file cut short, or a scan shorter than its frame says) with grey and only warns ("Corrupt
// JPEG data: premature end of data segment"). Every pipeline's libvips warnings are kept, and work
// that met one of these (LOST_DATA) fails as if decoding had failed.
//
// Errors: a header sharp cannot read, an unknown format, a declared size over the limit →
// PermanentError. Corrupt pixel data only shows while decoding, in the middle of a pipeline; when
// the error itself does not say data was lost, run() decodes the image once more on its own, and
// only when that fails too (or warns of lost data) is the input to blame (PermanentError "… is
// truncated or corrupt: …"). Anything else (disk full, out of memory) stays transient.
//
// libvips keeps one error buffer for the whole process, and sharp clears it after every operation:
// when decodes fail at the same time in one process (a pipeline's steps on one corrupt source, two
// jobs of a runner), an error can reach sharp with its message cleared by another thread. sharp's
// stats() then reports success for an image that did not decode; its output operations report
// "Unknown error". So the check decode is an output operation (the bottom row of pixels, which a
// sequential read reaches only by decoding every row above it), and the checks run one at a time.
import { stat } from "node:fs/promises";
import type { Metadata, Sharp, SharpOptions } from "sharp";
import { describeError, PermanentError } from "../errors.js";
import { minimumCodedBytes, readJpegFrame } from "./jpeg.js";
import { sharp } from "./settings.js";

/** Source formats the image jobs accept, as named here (sharp calls both AVIF and HEIC `heif`). */
export type SourceFormat = "jpeg" | "png" | "webp" | "avif" | "heic" | "gif" | "tiff";

/** sharp's format names of the raster formats we decode. */
export const DECODED_FORMATS: ReadonlySet<string> = new Set(["jpeg", "png", "webp", "heif", "gif", "tiff"]);

export interface OpenOptions {
  maxInputPixels: number;
  /** The image's name at the start of a "not decodable" message. Default `source`. */
  label?: string;
  /**
   * The image's name at the start of the pixel-limit and "truncated or corrupt" messages. Default
   * `source image`.
   */
  imageLabel?: string;
  /** When aborted, a failing pipeline is not examined further. */
  signal?: AbortSignal;
}

// libvips warnings that mean pixels were made up: data lost at the end of a segment or of the
// file, codes that do not decode. Not "N extraneous bytes before marker" or a bad ICC marker, which
// cost no pixel (and which many cameras produce).
const LOST_DATA = [
  /premature end/i,
  /Corrupt JPEG data: (?!\d+ extraneous bytes|bad ICC marker)/i,
  /Invalid SOS parameters/i,
  /Inconsistent progression sequence/i,
  /not enough (image )?data/i,
];
// libvips' own summaries of the warnings before them.
const SUMMARY = [
  /^\S+: read gave \d+ warnings?$/i,
  /^read gave \d+ warnings?$/i,
  /^error in tile \d+ x \d+$/i,
];

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
  /** libvips warnings of this image's pipelines, since the last run() began. */
  private warnings: string[] = [];

  constructor(
    /** The image's file, or its bytes. */
    readonly input: string | Buffer,
    readonly bytes: number,
    readonly metadata: Metadata,
    private readonly options: SharpOptions,
    private readonly imageLabel: string,
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
    const pipeline = sharp(this.input, this.options);
    pipeline.on("warning", (warning: unknown) => this.warnings.push(String(warning).trim()));
    return pipeline;
  }

  /**
   * Runs work that decodes this image. When it fails, or its decoding warned of lost data, finds
   * out whether the image itself is at fault (PermanentError) or something else is (the original
   * error, transient).
   */
  async run<T>(work: () => Promise<T>): Promise<T> {
    this.warnings = [];
    let result: T;
    try {
      result = await work();
    } catch (err) {
      if (err instanceof PermanentError || this.signal?.aborted) throw err;
      const reason =
        lostData(this.warnings) ??
        lostData(errorLines(err)) ??
        (await oneAtATime(() => this.decodeFailure()));
      if (reason !== undefined) throw this.corrupt(reason);
      throw err;
    }
    const lost = lostData(this.warnings);
    if (lost !== undefined) throw this.corrupt(lost);
    return result;
  }

  /** Decodes every pixel once, keeping nothing; the reason it fails or loses data, or undefined. */
  private async decodeFailure(): Promise<string | undefined> {
    this.warnings = [];
    const { width, height } = this.metadata; // as stored: pipeline() does not orient
    try {
      await this.pipeline()
        .extract({ left: 0, top: height - 1, width, height: 1 })
        .raw()
        .toBuffer();
      return lostData(this.warnings);
    } catch (err) {
      // "Unknown error": the message was cleared by another thread (see the error buffer, above).
      const reason = /^unknown error$/i.test(describeError(err))
        ? "its pixel data does not decode"
        : decodeReason(err, this.input);
      // libpng's "read error" says nothing; the warning before it says what was wrong.
      const detail = this.warnings.find((w) => !SUMMARY.some((re) => re.test(w)));
      return lostData(this.warnings) ?? (detail ? `${reason} (${shortReason(detail)})` : reason);
    }
  }

  private corrupt(reason: string): PermanentError {
    return new PermanentError(`${this.imageLabel} is truncated or corrupt: ${reason}`);
  }
}

/** Pixels decoded once for several readers (shared.ts): their layout, and the image they came from. */
const DECODED = new WeakMap<
  Buffer,
  { raw: { width: number; height: number; channels: 1 | 2 | 3 | 4 }; from: SourceImage }
>();

/**
 * Marks raw pixels (auto-oriented, perhaps shrunk) of `from` as an image openImage opens: it then
 * reads the pixels as they are, with `from`'s format and facts, and decodes nothing again.
 */
export function decodedImage(
  pixels: Buffer,
  info: { width: number; height: number; channels: number },
  from: SourceImage,
): Buffer {
  const raw = { width: info.width, height: info.height, channels: info.channels as 1 | 2 | 3 | 4 };
  DECODED.set(pixels, { raw, from });
  return pixels;
}

/**
 * Opens and checks an image, a file or its bytes. Throws PermanentError for input that can never be
 * processed.
 */
export async function openImage(input: string | Buffer, options: OpenOptions): Promise<SourceImage> {
  const label = options.label ?? "source";
  const imageLabel = options.imageLabel ?? "source image";
  const decoded = Buffer.isBuffer(input) ? DECODED.get(input) : undefined;
  if (decoded) {
    const { raw, from } = decoded;
    // Already checked and oriented: the facts of the image it came from, at the pixels' size.
    const metadata = { ...from.metadata, width: raw.width, height: raw.height, orientation: undefined };
    delete (metadata as { autoOrient?: unknown }).autoOrient;
    const sharpOptions: SharpOptions = { raw, limitInputPixels: options.maxInputPixels };
    return new SourceImage(input, from.bytes, metadata, sharpOptions, imageLabel, options.signal);
  }
  // ENOENT: not the input's fault, stays transient
  const size = Buffer.isBuffer(input) ? input.length : (await stat(input)).size;
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
    metadata = await sharp(input, { ...sharpOptions, limitInputPixels: false }).metadata();
  } catch (err) {
    throw new PermanentError(`${label} is not a decodable image: ${decodeReason(err, input)}`);
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
  if (metadata.format === "jpeg") await checkJpegSize(input, size, imageLabel);
  return new SourceImage(input, size, metadata, sharpOptions, imageLabel, options.signal);
}

/**
 * A JPEG whose frame cannot fit in its file is refused before decoding: libjpeg would fill the
 * missing blocks with grey, for as many pixels as the header claims.
 */
async function checkJpegSize(input: string | Buffer, size: number, imageLabel: string): Promise<void> {
  const frame = await readJpegFrame(input);
  const least = frame && minimumCodedBytes(frame);
  if (least === undefined || size >= least) return;
  throw new PermanentError(
    `${imageLabel} is truncated or corrupt: its header declares ${frame!.width}x${frame!.height} pixels, ` +
      `which take at least ${formatBytes(least)} of JPEG data, but the file holds ${formatBytes(size)}`,
  );
}

function sourceFormat(metadata: Metadata): SourceFormat {
  if (metadata.format === "heif") return metadata.compression === "av1" ? "avif" : "heic";
  return metadata.format as SourceFormat;
}

let checking: Promise<unknown> = Promise.resolve();

/** Runs `check` after the checks before it have ended (see the error buffer, above). */
function oneAtATime<T>(check: () => Promise<T>): Promise<T> {
  const result = checking.then(check, check);
  checking = result.catch(() => undefined);
  return result;
}

function errorLines(err: unknown): string[] {
  return (err instanceof Error ? err.message : String(err)).split("\n");
}

/** The first warning that says pixels were lost, without libvips' loader prefix. */
function lostData(warnings: string[]): string | undefined {
  const line = warnings.find((w) => !SUMMARY.some((re) => re.test(w)) && LOST_DATA.some((re) => re.test(w)));
  return line === undefined ? undefined : shortReason(line);
}

/** sharp's reason, as one readable line, without the file's path. */
function decodeReason(err: unknown, input: string | Buffer): string {
  const line = describeError(err);
  if (/unsupported image format/i.test(line)) return "not a known image format";
  if (Buffer.isBuffer(input)) return shortReason(line);
  return shortReason(line.split(`${input}: `).join("").split(input).join("the file"));
}

function shortReason(line: string): string {
  return line
    .replace(/^Input (?:file|buffer) (?:contains |has )?/i, "")
    .replace(/^(?:Vips\w*|\w+load(?:_buffer)?): /i, "")
    .replace(/[.:\s]+$/, "");
}

function formatBytes(bytes: number): string {
  if (bytes < 10 * 1024) return `${bytes} bytes`;
  if (bytes < 10 * 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${Math.round(bytes / (1024 * 1024))} MB`;
}
