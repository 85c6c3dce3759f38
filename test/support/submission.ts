// A job of a type as its definition (jobs/registry.ts) says to submit one: its route, a source of its
// media.source, where it writes (dest_key, or dest_prefix for a type that writes under one: entryKey)
// and its example's parameters. The tests that run a job of every type build their bodies here, so a
// new type needs no edit of theirs.
import type { JobTypeDefinition, MediaKind } from "../../core/jobs/types.js";

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
  if (definition.media.output !== null) {
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
