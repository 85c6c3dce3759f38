// A job of a type as its definition (jobs/registry.ts) says to submit one: its route, a source of its
// media.source, where it writes (dest_key, or dest_prefix for a type that writes under one: entryKey)
// and its example's parameters. The tests that run a job of every type build their bodies here, so a
// new type needs no edit of theirs.
import { JOB_DEFINITIONS, type JobTypeDefinition, type MediaKind } from "../../core/jobs/types.js";

/** A source object per kind of media; a type whose source may be any kind reads `any`, else the image. */
export type Sources = Record<Exclude<MediaKind, "any">, string> & { any?: string };

export interface Submission {
  /** Its route under /api/v1/jobs/ (`video/transcode`). */
  path: string;
  /** The request body: source, destination, the example's parameters and the given ones. */
  body: Record<string, unknown>;
  /**
   * The object a client starts from: dest_key, or for a type that writes under a prefix its entry
   * (the master playlist); undefined for a type that writes no output.
   */
  output?: string;
}

/**
 * The submission of a job of `definition`'s type reading `sources` in `bucket` and writing to
 * `dest` there (its dest_key, or its dest_prefix), with the type's example parameters and then
 * `parameters` (which may replace or, given undefined, remove them).
 */
export function submission(
  definition: JobTypeDefinition,
  options: { bucket: string; sources: Sources; dest: string; parameters?: Record<string, unknown> },
): Submission {
  const { bucket, sources, dest } = options;
  const kind = definition.media.source;
  const parameters = { ...definition.example, ...options.parameters };
  const body: Record<string, unknown> = {
    source_bucket: bucket,
    source_key: kind === "any" ? (sources.any ?? sources.image) : sources[kind],
    ...parameters,
  };
  let output: string | undefined;
  if (definition.destinationsInParameters) {
    // Its steps write under the prefix (the pipeline): no one object a client starts from.
    body.dest_bucket = bucket;
    body.dest_prefix = dest;
  } else if (definition.media.output !== null) {
    body.dest_bucket = bucket;
    if (definition.entryKey) {
      body.dest_prefix = dest;
      output = definition.entryKey(dest, parameters);
    } else {
      body.dest_key = output = dest;
    }
  }
  return { path: definition.route.path.replace(/^\/jobs\//, ""), body, output };
}

/** The sources the real-node tests' job of every type reads (their fixtures put them there). */
export const EVERY_TYPE_SOURCES: Sources = {
  image: "in/photo.jpg",
  video: "in/clip.mp4",
  audio: "in/tone.wav",
};

/**
 * The `video` class requests 2 CPUs (kubernetes.resources, the chart's runner.resources), as
 * encoding whole videos needs on a real node; the test node has 2 CPUs in all, shared by the jobs of
 * every type at once (and the release's own pods), and a pod asking for all of them would wait for a
 * node until kubernetes.unschedulable_timeout fails its job. The real-node tests give those types
 * these requests instead; their limits stay the class's (ffmpeg's threads follow the limit).
 */
export const SMALL_VIDEO_REQUESTS: Record<string, { requests: { cpu: string; memory: string } }> =
  Object.fromEntries(
    JOB_DEFINITIONS.filter((d) => d.runner.resources === "video").map((d) => [
      d.name,
      { requests: { cpu: "250m", memory: "256Mi" } },
    ]),
  );
