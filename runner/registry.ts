import type { JobType } from "../core/jobs/types.js";
import { PermanentError } from "./errors.js";
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
  image_ai_keywords: async () => aiNotConfigured,
  analyze: async () => aiNotConfigured,
};

const aiNotConfigured: Processor = async ({ job }) => {
  throw new PermanentError(
    `${job.type} needs an AI provider, and none is configured: set AI_BASE_URL, AI_API_KEY and AI_MODEL`,
  );
};

export function loadProcessor(type: JobType): Promise<Processor> {
  return LOADERS[type]();
}
