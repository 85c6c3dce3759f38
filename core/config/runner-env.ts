// The environment variables a runner reads, in one place: core/config/load.ts maps them onto the
// configuration (ENV_OVERRIDES) and the Kubernetes executor sets them on runner pods, which get no
// configuration file. Constants only, so that the manifest builder imports nothing else of core.

export const RUNNER_ENV = {
  redisUrl: "REDIS_URL",
  redisKeyPrefix: "REDIS_KEY_PREFIX",
  s3Endpoint: "S3_ENDPOINT",
  s3Region: "S3_REGION",
  s3ForcePathStyle: "S3_FORCE_PATH_STYLE",
  s3PublicBaseUrl: "S3_PUBLIC_BASE_URL",
  s3AccessKeyId: "S3_ACCESS_KEY_ID",
  s3SecretAccessKey: "S3_SECRET_ACCESS_KEY",
  aiBaseUrl: "AI_BASE_URL",
  aiModel: "AI_MODEL",
  aiApiKey: "AI_API_KEY",
  /** ai.name: the name of the provider AI_BASE_URL defines. */
  aiProvider: "AI_PROVIDER",
  aiTranscriptionModel: "AI_TRANSCRIPTION_MODEL",
  aiStructuredOutput: "AI_STRUCTURED_OUTPUT",
  aiTimeout: "AI_TIMEOUT",
  aiMaxAttempts: "AI_MAX_ATTEMPTS",
  aiRetryInitialDelay: "AI_RETRY_INITIAL_DELAY",
  aiRetryMaxDelay: "AI_RETRY_MAX_DELAY",
  aiMaxImageSide: "AI_MAX_IMAGE_SIDE",
  aiTranscriptionSegment: "AI_TRANSCRIPTION_SEGMENT",
  logLevel: "LOG_LEVEL",
  scratchDir: "SCRATCH_DIR",
  /** limits.max_source_bytes */
  maxSourceBytes: "MAX_SOURCE_BYTES",
  /** limits.in_memory_source_bytes */
  inMemorySourceBytes: "IN_MEMORY_SOURCE_BYTES",
  /** limits.max_input_pixels */
  maxInputPixels: "MAX_INPUT_PIXELS",
  /** limits.max_output_dimension */
  maxOutputDimension: "MAX_OUTPUT_DIMENSION",
  /**
   * Not a configuration setting: the deadline, in whole seconds, that the executor gave this run
   * (the job's time, as its Kubernetes Job has it; the Job's activeDeadlineSeconds adds the longest
   * wait for a node). When set, `runner --job` uses it, from its start, instead of the job's
   * timeout_seconds or executor.timeouts.<type>.
   */
  jobTimeoutSeconds: "JOB_TIMEOUT_SECONDS",
  /** Read by Node and by ffmpeg/libvips for their temporary files, not by the configuration. */
  tmpdir: "TMPDIR",
  /** Where the runner writes why a job did not complete (Kubernetes reads it into the pod status). */
  terminationMessagePath: "TERMINATION_MESSAGE_PATH",
  /**
   * Not a configuration setting: Node's command-line flags, read by the image's `media-service`
   * command (Dockerfile) and put before the script; a runner Job's pod gets RUNNER_NODE_FLAGS in it.
   */
  nodeFlags: "MEDIA_SERVICE_NODE_FLAGS",
} as const;

/**
 * The environment every runner process starts with, whoever starts it (the local executor's
 * `runner --serve` processes, a Kubernetes Job's container), over what it inherits unless the
 * operator set the variable, for glibc's malloc:
 *
 * - 2 arenas instead of 8 per core, which lowered the peak RSS of a 50-megapixel resize by ~3 MiB;
 * - blocks of 64 KiB and more mapped on their own (MALLOC_MMAP_THRESHOLD_), and so handed back to
 *   the system when freed. A download's bytes arrive as 64 KiB buffers (a socket read, and the HTTP
 *   parser's copy of the body in it), garbage once written to the scratch file; freed inside
 *   malloc's heap they stayed in the process's RSS (~7 MiB more at the peak of that resize).
 *
 * docs/performance.md, "Peak RSS through the stack".
 */
export const RUNNER_PROCESS_ENV: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: "2",
  MALLOC_MMAP_THRESHOLD_: "65536",
};

/**
 * V8 flags every runner process starts with, whoever starts it (the local executor's and the pool's
 * `runner --serve` processes through fork(), a runner Job's container through RUNNER_ENV.nodeFlags).
 * Node refuses them in NODE_OPTIONS, so they are command-line flags.
 *
 * A runner moves megabytes through short-lived buffers (the source's bytes as the socket delivers
 * them, the source in memory, the output), memory outside V8's heap that V8 answers with full
 * garbage collections: one every few jobs of a 2 MB source, each longer than the job's own
 * JavaScript. With external memory counted in the heap's global limit and an initial old space of
 * 96 MB, those buffers are freed by the cheap young-generation collections instead, and a 2 MB GET
 * through the AWS SDK costs the runner 3.1 ms of CPU instead of 5.9 (`npm run bench -- get`;
 * docs/performance.md, "The runner against imgproxy"). The price: a warm runner process holds its
 * garbage longer, ~100 MiB more after a few hundred jobs.
 *
 * And three for the peak RSS of a runner (docs/performance.md, "Peak RSS through the stack"):
 * a young generation of 1 MB semi-spaces, collected often, so the buffers a download leaves behind
 * are freed while it runs instead of piling up until the job's end (V8 lets the semi-spaces grow to
 * 16 MB); no optimizing compiler above Sparkplug (--max-opt=1): a runner's JavaScript is glue
 * around sharp, ffmpeg and the object store, and Maglev and TurboFan cost ~8 MiB of code pages and
 * compiled code before its first job; and `gc()`, which the runner calls once when it has started
 * (runner/main.ts): the garbage of loading its modules is not collected by itself before the job,
 * with the old space's initial size above; and for a young-generation collection every MiB of a
 * download to a file (runner/object-io.ts), whose buffers no allocation of JavaScript would free.
 */
export const RUNNER_NODE_FLAGS: readonly string[] = [
  "--external-memory-accounted-in-global-limit",
  "--initial-old-space-size=96",
  "--max-semi-space-size=1",
  "--max-opt=1",
  "--expose-gc",
];
