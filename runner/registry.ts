import type { JobType } from "../core/jobs/types.js";
import type { Processor } from "./processor.js";

// Processors are loaded on first use, so a runner for an image job never loads ffmpeg's wrapper
// and the other way round: a runner starts faster when it loads less.
const LOADERS: Record<JobType, () => Promise<Processor>> = {
  image_resize: async () => (await import("./processors/image-resize.js")).imageResize,
  image_optimize: async () => (await import("./processors/image-optimize.js")).imageOptimize,
  image_watermark: async () => (await import("./processors/image-watermark.js")).imageWatermark,
  image_colors: async () => (await import("./processors/image-colors.js")).imageColors,
  video_thumbnail: async () => (await import("./processors/video-thumbnail.js")).videoThumbnail,
  audio_convert: async () => (await import("./processors/audio-convert.js")).audioConvert,
  image_ai_keywords: async () => (await import("./processors/image-ai-keywords.js")).imageAiKeywords,
  analyze: async () => (await import("./processors/analyze.js")).analyze,
};

/**
 * The types whose processors read the source only through openImage (a file or its bytes): a small
 * source of theirs is kept in memory (limits.in_memory_source_bytes). The others hand a file to
 * ffmpeg and ffprobe.
 */
export const IN_MEMORY_TYPES: ReadonlySet<JobType> = new Set<JobType>([
  "image_resize",
  "image_optimize",
  "image_watermark",
  "image_colors",
  "image_ai_keywords",
]);

export function loadProcessor(type: JobType): Promise<Processor> {
  return LOADERS[type]();
}
