// image_metadata: what an image is, from its header alone (no pixel is decoded): its size as
// displayed, format, size in bytes, EXIF orientation, colour space, alpha; its ICC profile's name
// (read with icc) and a few EXIF fields (read with exif-reader): the camera, when the picture was
// taken, whether it holds a GPS position. No output file.
//
// A profile or an EXIF block that cannot be read is left out of the result, with a warning in the
// log: what the header says is still the answer, and a bad block in a good image is common.
import exifReader from "exif-reader";
import { parse as parseIcc } from "icc";
import { openImage } from "../../runner/image/open.js";
import type { Processor } from "../../runner/processor.js";

export const imageMetadata: Processor = async (ctx) => {
  const source = await openImage(ctx.sourceBuffer ?? ctx.sourcePath, {
    maxInputPixels: ctx.limits.maxInputPixels,
    signal: ctx.signal,
  });
  const { metadata } = source;
  const warn = (what: string, err: unknown) =>
    ctx.logger.warn({ job_id: ctx.job.id, err: (err as Error).message }, `${what} is unreadable, left out`);
  return {
    result: {
      width: source.width,
      height: source.height,
      format: source.format,
      size: source.bytes,
      ...(metadata.orientation !== undefined ? { orientation: metadata.orientation } : {}),
      color_space: metadata.space,
      has_alpha: source.hasAlpha,
      ...(metadata.icc ? readProfile(metadata.icc, warn) : {}),
      ...(metadata.exif ? readExif(metadata.exif, warn) : {}),
    },
  };
};

type Warn = (what: string, err: unknown) => void;

/** The ICC profile's name, colour space and version. */
function readProfile(icc: Buffer, warn: Warn): { icc_profile?: Record<string, string> } {
  try {
    const profile = parseIcc(icc);
    return {
      icc_profile: defined({
        description: profile.description?.trim(),
        color_space: profile.colorSpace?.trim(),
        version: profile.version,
      }),
    };
  } catch (err) {
    warn("the ICC profile", err);
    return {};
  }
}

/** The fields of the EXIF block the result names. */
function readExif(exif: Buffer, warn: Warn): { exif?: Record<string, unknown> } {
  try {
    const tags = exifReader(exif);
    const image = tags.Image ?? {};
    const photo = tags.Photo ?? {};
    const taken = photo.DateTimeOriginal ?? image.DateTime;
    const offset = photo.OffsetTimeOriginal ?? photo.OffsetTime;
    return {
      exif: {
        ...defined({ make: text(image.Make), model: text(image.Model) }),
        ...(taken instanceof Date && !Number.isNaN(taken.getTime())
          ? {
              date_taken: `${taken.toISOString().slice(0, 19)}${typeof offset === "string" ? offset.trim() : ""}`,
            }
          : {}),
        gps: Object.keys(tags.GPSInfo ?? {}).some((key) => /^GPS(Latitude|Longitude)$/.test(key)),
      },
    };
  } catch (err) {
    warn("the EXIF block", err);
    return {};
  }
}

/** A text tag, trimmed of the padding cameras leave (NULs, spaces); undefined when empty. */
function text(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  // eslint-disable-next-line no-control-regex
  const trimmed = value.replace(/[\u0000\s]+$/, "").trim();
  return trimmed || undefined;
}

/** The object without its undefined fields. */
function defined<T extends Record<string, unknown>>(fields: T): Partial<T> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export default imageMetadata;
