// The job types of the interface. Each type has its own queue of the same name.
export const JOB_TYPES = [
  "image_resize",
  "image_optimize",
  "image_watermark",
  "image_colors",
  "image_ai_keywords",
  "video_thumbnail",
  "audio_convert",
  "analyze",
] as const;
export type JobType = (typeof JOB_TYPES)[number];

export const JOB_STATUSES = ["pending", "processing", "completed", "failed"] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/**
 * What a person reads of a job (the extension field `state`): its status, except that a failed job
 * that was cancelled (by request, or by its fail_fast batch) is `cancelled`.
 */
export const JOB_STATES = [...JOB_STATUSES, "cancelled"] as const;
export type JobState = (typeof JOB_STATES)[number];
/** The states that are not a status of their own: each has an index of its own (lib.lua end_job). */
export const ENDED_STATES = ["failed", "cancelled"] as const;

export const BATCH_STATUSES = ["queued", "processing", "completed", "failed", "partial"] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];

/** Types that write an output object, and so need dest_bucket and dest_key. */
export const WRITES_OUTPUT: Readonly<Record<JobType, boolean>> = {
  image_resize: true,
  image_optimize: true,
  image_watermark: true,
  image_colors: false,
  image_ai_keywords: false,
  video_thumbnail: true,
  audio_convert: true,
  analyze: false,
};

/** What a file is: an image, a video, audio, or (an analyze job's source) any of them. */
export type MediaKind = "image" | "video" | "audio" | "any";

/**
 * What each type's source and output are (null: the type writes no output file): what a preview
 * (GET /jobs/{id}/preview) can be made of, and what the dashboard shows them as.
 */
export const JOB_MEDIA: Readonly<Record<JobType, { source: MediaKind; output: MediaKind | null }>> = {
  image_resize: { source: "image", output: "image" },
  image_optimize: { source: "image", output: "image" },
  image_watermark: { source: "image", output: "image" },
  image_colors: { source: "image", output: null },
  image_ai_keywords: { source: "image", output: null },
  video_thumbnail: { source: "video", output: "image" },
  audio_convert: { source: "audio", output: "audio" },
  analyze: { source: "any", output: null },
};

/**
 * Where a job runs: `job` its own run (a Kubernetes Job, or a local runner), `pool` a warm pool
 * worker, `auto` the pool when the job fits it (see executor.pool).
 */
export const EXECUTION_CLASSES = ["job", "pool", "auto"] as const;
export type ExecutionClass = (typeof EXECUTION_CLASSES)[number];
