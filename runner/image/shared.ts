// One decode for several image steps of a pipeline that read the same input: the input is opened
// and checked once (openImage), decoded once to raw pixels, auto-oriented and shrunk on load to the
// largest size any of its readers needs, and each reader's openImage reads those pixels
// (open.ts, decodedImage) instead of decoding the file again. Only the types whose output depends
// on the pixels alone share it: image_resize, image_watermark (which needs the full size) and
// image_colors. image_optimize and image_metadata read the encoded file itself (its metadata, its
// own bytes when a re-encode would be larger), so they are not given the pixels.
import type { ProcessContext } from "../processor.js";
import { decodedImage, openImage } from "./open.js";

/** A reader of a pipeline's input: which input (undefined: the source), its type and parameters. */
export interface ImageReader {
  input: string | undefined;
  type: string;
  parameters: Record<string, unknown> | undefined;
}

/** The share of the input's size each type needs: 1 the whole, 0 next to nothing. */
function needed(reader: ImageReader, width: number, height: number): number | undefined {
  if (reader.type === "image_watermark") return 1;
  if (reader.type === "image_colors") return 0;
  if (reader.type !== "image_resize") return undefined;
  const p = reader.parameters ?? {};
  const w = Number(p.width) / width;
  const h = Number(p.height) / height;
  return Number.isFinite(w) && Number.isFinite(h) ? Math.max(w, h) : 1;
}

/**
 * Decodes, once each, the inputs that two or more sharing readers read; the map goes from an input
 * (undefined: the source) to its pixels, a Buffer openImage knows as decoded. Nothing for an input
 * with one reader, or with a reader that must read the file.
 */
export async function sharedDecodes(
  readers: ImageReader[],
  inputOf: (input: string | undefined) => string | Buffer,
  ctx: Pick<ProcessContext, "limits" | "signal" | "logger">,
): Promise<Map<string | undefined, Buffer>> {
  const byInput = new Map<string | undefined, ImageReader[]>();
  for (const reader of readers) byInput.set(reader.input, [...(byInput.get(reader.input) ?? []), reader]);
  const shared = new Map<string | undefined, Buffer>();
  for (const [input, group] of byInput) {
    if (group.length < 2 || group.some((r) => needed(r, 1, 1) === undefined)) continue;
    const source = await openImage(inputOf(input), {
      maxInputPixels: ctx.limits.maxInputPixels,
      signal: ctx.signal,
    });
    const share = Math.min(1, Math.max(...group.map((r) => needed(r, source.width, source.height)!)));
    const width = Math.max(1, Math.ceil(source.width * share));
    const height = Math.max(1, Math.ceil(source.height * share));
    let pipeline = source.pipeline().autoOrient();
    if (share < 1) pipeline = pipeline.resize({ width, height, fit: "fill" });
    const { data, info } = await source.run(() => pipeline.raw().toBuffer({ resolveWithObject: true }));
    shared.set(input, decodedImage(data, info, source));
    ctx.logger.debug(
      { input: input ?? "source", readers: group.length, width: info.width, height: info.height },
      "pipeline: one decode shared by its image steps",
    );
  }
  return shared;
}
