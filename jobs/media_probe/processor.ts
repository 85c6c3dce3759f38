// media_probe: what a video or audio file holds, from ffprobe (headers only, nothing is decoded):
// its container, duration, size and bit rate, and each stream's facts (../../runner/av/streams.ts
// normalises ffprobe's answer; a fact the file does not give is left out). No output file.
//
// The source is checked as every ffmpeg job checks it (probeMedia): empty, unreadable, text, a
// playlist, or without a video or audio stream fails permanently, with ffprobe's reason.
import { stat } from "node:fs/promises";
import { probeMedia } from "../../runner/av/probe.js";
import { summarizeProbe } from "../../runner/av/streams.js";
import type { Processor } from "../../runner/processor.js";

export const mediaProbe: Processor = async (ctx) => {
  ctx.progress(0, "reading the media");
  const info = await probeMedia(ctx.sourcePath, {
    signal: ctx.signal,
    maxInputPixels: ctx.limits.maxInputPixels,
  });
  const { size } = await stat(ctx.sourcePath);
  return { result: { ...summarizeProbe(info.raw, size) } };
};

export default mediaProbe;
