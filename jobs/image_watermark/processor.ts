// image_watermark: a text or an image laid over the source at a corner or the centre.
//
// Pipeline: open and check the source → make the overlay as RGBA pixels (text.ts renders text;
// a watermark image is fetched from the source bucket, checked like a source, oriented and scaled)
// → opacity applied to the overlay's alpha → composited over the EXIF-oriented source → encoded in
// the source's format (GIF, TIFF, HEIC → PNG or JPEG as in encode.ts) at quality 90 → write. The
// output has the source's displayed size.
//
// Placement: a margin of 2 % of the image's shorter side (at least 1 px when there is room) from
// the edges of the chosen corner; `center` centres it. The overlay never exceeds the image inside
// that margin: bigger text wraps or shrinks, a bigger image is scaled down.
//
// Text: font_size defaults to 5 % of the shorter side (at least 10 px).
// Image: at most 25 % of the image's width (scaled down, never up, aspect kept); its own
// transparency is kept and multiplied by the opacity.
//
// opacity 0 composites nothing: the output is the source re-encoded.
import {
  withDefaults,
  type ImageWatermarkParameters,
  type WATERMARK_POSITIONS,
} from "../../core/jobs/parameters.js";
import { PermanentError } from "../../runner/errors.js";
import { defaultOutputFormat, encode, type OutputFormat } from "../../runner/image/encode.js";
import { openImage, type SourceImage } from "../../runner/image/open.js";
import { imageOutput, writeImage } from "../../runner/image/output.js";
import { sharp } from "../../runner/image/settings.js";
import { renderText, type RgbaImage } from "../../runner/image/text.js";
import type { ProcessContext, Processor } from "../../runner/processor.js";

type Position = (typeof WATERMARK_POSITIONS)[number];

/** Quality of the re-encoded image: watermarking should not visibly cost quality. */
const OUTPUT_QUALITY = 90;
/** Largest watermark image width, as a share of the image's width. */
const MAX_IMAGE_SHARE = 0.25;
const MARGIN_SHARE = 0.02;
const FONT_SIZE_SHARE = 0.05;
const MIN_FONT_SIZE = 10;

export const imageWatermark: Processor = async (ctx) => {
  const startedAt = performance.now();
  const parameters = withDefaults("image_watermark", ctx.job.parameters);
  const { position, opacity } = parameters;
  if ((parameters.watermark_text === undefined) === (parameters.watermark_image === undefined)) {
    throw new PermanentError("give exactly one of watermark_text and watermark_image");
  }

  const source = await openImage(ctx.sourceBuffer ?? ctx.sourcePath, {
    maxInputPixels: ctx.limits.maxInputPixels,
    signal: ctx.signal,
  });
  ctx.progress(10, "source opened");
  ctx.signal.throwIfAborted();

  const { width, height } = source;
  const shorter = Math.min(width, height);
  const margin = Math.min(Math.max(1, Math.round(shorter * MARGIN_SHARE)), Math.floor((shorter - 1) / 2));
  const room = { width: width - 2 * margin, height: height - 2 * margin };

  let pipeline = source.pipeline().autoOrient();
  if (opacity > 0) {
    const overlay =
      parameters.watermark_text !== undefined
        ? await textOverlay(ctx, parameters, parameters.watermark_text, position, shorter, room)
        : await imageOverlay(ctx, parameters.watermark_image!, width, room);
    ctx.progress(40, "watermark ready");
    ctx.signal.throwIfAborted();
    applyOpacity(overlay, opacity);
    const { left, top } = place(position, { width, height }, overlay, margin);
    pipeline = pipeline.composite([
      {
        input: overlay.data,
        raw: { width: overlay.width, height: overlay.height, channels: 4 },
        left,
        top,
      },
    ]);
    // Compositing adds an alpha channel; an opaque source stays opaque (and as small).
    if (!source.hasAlpha) pipeline = pipeline.removeAlpha();
  }

  const format: OutputFormat = defaultOutputFormat(source);
  pipeline = encode(pipeline, {
    format,
    quality: OUTPUT_QUALITY,
    mode: "standard",
    hasAlpha: source.hasAlpha,
    palette: source.isPalette,
  });
  ctx.progress(50, "compositing");
  const { info, data } = await writeImage(ctx, source, pipeline, format, width * height);
  ctx.progress(90, "watermarked");
  return imageOutput(data, info, startedAt);
};

interface Size {
  width: number;
  height: number;
}

async function textOverlay(
  ctx: ProcessContext,
  parameters: ImageWatermarkParameters,
  text: string,
  position: Position,
  shorter: number,
  room: Size,
): Promise<RgbaImage> {
  // Control characters are not valid in Pango's markup (XML); they draw nothing anyway.
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, "");
  if (clean.trim() === "") throw new PermanentError("watermark_text has no visible characters");
  const fontSize = parameters.font_size ?? Math.max(MIN_FONT_SIZE, Math.round(shorter * FONT_SIZE_SHARE));
  const rendered = await renderText({
    text: clean,
    fontSize,
    color: parameters.color,
    maxWidth: room.width,
    maxHeight: room.height,
    // Wrapped lines hug the side the text sits at.
    align: position.endsWith("right") ? "right" : position === "center" ? "centre" : "left",
    logger: ctx.logger,
  });
  return fitInto(rendered, room);
}

async function imageOverlay(
  ctx: ProcessContext,
  key: string,
  baseWidth: number,
  room: Size,
): Promise<RgbaImage> {
  const bucket = ctx.job.source_bucket;
  const name = `watermark image s3://${bucket}/${key}`;
  const path = await ctx.fetchObject(bucket, key);
  ctx.signal.throwIfAborted();
  const mark: SourceImage = await openImage(path, {
    maxInputPixels: ctx.limits.maxInputPixels,
    label: name,
    imageLabel: name,
    signal: ctx.signal,
  });
  const maxWidth = Math.max(1, Math.min(room.width, Math.floor(baseWidth * MAX_IMAGE_SHARE)));
  const { data, info } = await mark.run(() =>
    mark
      .pipeline()
      .autoOrient()
      .resize({ width: maxWidth, height: Math.max(1, room.height), fit: "inside", withoutEnlargement: true })
      .toColourspace("srgb")
      .ensureAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true }),
  );
  return { data, width: info.width, height: info.height };
}

/** Scales an overlay down (never up) to fit `room`; rendered text can overshoot its box a little. */
async function fitInto(image: RgbaImage, room: Size): Promise<RgbaImage> {
  if (image.width <= room.width && image.height <= room.height) return image;
  const { data, info } = await sharp(image.data, {
    raw: { width: image.width, height: image.height, channels: 4 },
  })
    .resize({ width: Math.max(1, room.width), height: Math.max(1, room.height), fit: "inside" })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

/** Multiplies the alpha channel by opacity/100, in place. */
export function applyOpacity(image: RgbaImage, opacity: number): void {
  if (opacity >= 100) return;
  const factor = opacity / 100;
  const { data } = image;
  for (let i = 3; i < data.length; i += 4) data[i] = Math.round(data[i]! * factor);
}

/** Top-left corner of the overlay for a position. */
export function place(
  position: Position,
  base: Size,
  overlay: Size,
  margin: number,
): { left: number; top: number } {
  const right = Math.max(0, base.width - overlay.width - margin);
  const bottom = Math.max(0, base.height - overlay.height - margin);
  switch (position) {
    case "top-left":
      return { left: margin, top: margin };
    case "top-right":
      return { left: right, top: margin };
    case "bottom-left":
      return { left: margin, top: bottom };
    case "bottom-right":
      return { left: right, top: bottom };
    case "center":
      return {
        left: Math.max(0, Math.floor((base.width - overlay.width) / 2)),
        top: Math.max(0, Math.floor((base.height - overlay.height) / 2)),
      };
  }
}

export default imageWatermark;
