// image_optimize: the source re-encoded as small as its quality allows.
//
// Pipeline: open and check → EXIF orientation applied to the pixels (the picture looks right with
// or without its EXIF; a kept Orientation tag is reset to 1) → metadata kept unless strip_metadata
// → encode in `optimize` mode (encode.ts: mozjpeg, PNG palette quantisation, WebP effort 6, AVIF) in
// parameters.format or the source's → write.
//
// strip_metadata: true → no EXIF, ICC, XMP or IPTC in the output; pixels in another colour space are
// converted to sRGB first so they still look the same. false (default) → all of it is kept, the ICC
// profile included (the pixels then stay in that space).
//
// Never bigger: when the output is in the source's format and came out no smaller than the source,
// the source's bytes are the output, unchanged (the result then reports the source's displayed
// size). Not when strip_metadata asks for metadata the source carries to go: the request to remove
// it wins over the size.
import { withDefaults } from "../../core/jobs/parameters.js";
import { defaultOutputFormat, encode, type OutputFormat } from "../../runner/image/encode.js";
import { openImage } from "../../runner/image/open.js";
import { imageOutput, sourceAsOutput, writeImage } from "../../runner/image/output.js";
import type { Processor } from "../../runner/processor.js";

export const imageOptimize: Processor = async (ctx) => {
  const startedAt = performance.now();
  const parameters = withDefaults("image_optimize", ctx.job.parameters);
  const { quality, strip_metadata: strip } = parameters;

  const source = await openImage(ctx.sourceBuffer ?? ctx.sourcePath, {
    maxInputPixels: ctx.limits.maxInputPixels,
    signal: ctx.signal,
  });
  ctx.progress(10, "source opened");
  ctx.signal.throwIfAborted();

  const format: OutputFormat = parameters.format ?? defaultOutputFormat(source);
  let pipeline = source.pipeline().autoOrient();
  if (!strip) pipeline = pipeline.keepMetadata();
  pipeline = encode(pipeline, {
    format,
    quality,
    mode: "optimize",
    hasAlpha: source.hasAlpha,
    pixels: source.width * source.height,
  });

  ctx.progress(20, "encoding");
  const { info, data } = await writeImage(ctx, source, pipeline, format, source.width * source.height);
  ctx.progress(85, "encoded");

  const sourceMayStay = source.format === format && !(strip && source.hasMetadata);
  if (sourceMayStay && info.size >= source.bytes) {
    ctx.signal.throwIfAborted();
    const kept = await sourceAsOutput(source, data);
    ctx.logger.info(
      { source_bytes: source.bytes, encoded_bytes: info.size },
      "re-encoding would not make the image smaller; the source is the output",
    );
    ctx.progress(90, "source kept");
    return imageOutput(kept, { width: source.width, height: source.height, format }, startedAt);
  }
  ctx.logger.debug({ source_bytes: source.bytes, output_bytes: info.size }, "image optimized");
  ctx.progress(90, "optimized");
  return imageOutput(data, info, startedAt);
};

export default imageOptimize;
