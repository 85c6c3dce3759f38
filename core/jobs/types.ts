// The job types of the interface, as the registry (jobs/registry.ts) declares them: each type is a
// folder of jobs/, and has its own queue of the same name.
import { JOB_DEFINITIONS, type JobType } from "../../jobs/registry.js";
import type { MediaKind } from "../../jobs/define.js";

export * from "./states.js";
export { JOB_DEFINITIONS, definitionOf, type DefinitionOf } from "../../jobs/registry.js";
export { prefixOfEntry, type JobTypeDefinition } from "../../jobs/define.js";
/** Where a pipeline's step writes its one file (the runner writes it there; the API reads it back). */
export { stepOutput, type PipelineParameters } from "../../jobs/pipeline/graph.js";
export { STEP_NAME_PATTERN } from "../../jobs/pipeline/definition.js";
/** media_probe's result, which runner/av/streams.ts makes for the other ffmpeg processors too. */
export type { ProbeResult, ProbeStream } from "../../jobs/media_probe/definition.js";
export type { JobType, MediaKind };

export const JOB_TYPES: readonly JobType[] = JOB_DEFINITIONS.map((definition) => definition.name);

/** Types that write an output object, and so need dest_bucket and dest_key. */
export const WRITES_OUTPUT: Readonly<Record<JobType, boolean>> = Object.fromEntries(
  JOB_DEFINITIONS.map((d) => [d.name, d.media.output !== null]),
) as Record<JobType, boolean>;

/** Types that write many objects under a `dest_prefix` (given instead of dest_key). */
export const WRITES_UNDER_PREFIX: Readonly<Record<JobType, boolean>> = Object.fromEntries(
  JOB_DEFINITIONS.map((d) => [d.name, "entryKey" in d && d.entryKey !== undefined]),
) as Record<JobType, boolean>;

/** Types whose parts name where they write (the pipeline): dest_bucket and dest_prefix optional. */
export const DESTINATIONS_IN_PARAMETERS: Readonly<Record<JobType, boolean>> = Object.fromEntries(
  JOB_DEFINITIONS.map((d) => [
    d.name,
    "destinationsInParameters" in d && d.destinationsInParameters === true,
  ]),
) as Record<JobType, boolean>;

/**
 * What each type's source and output are (null: the type writes no output file): what a preview
 * (GET /jobs/{id}/preview) can be made of, and what the dashboard shows them as.
 */
export const JOB_MEDIA: Readonly<Record<JobType, { source: MediaKind; output: MediaKind | null }>> =
  Object.fromEntries(JOB_DEFINITIONS.map((d) => [d.name, d.media])) as Record<
    JobType,
    { source: MediaKind; output: MediaKind | null }
  >;

/** A job's place in its queue: higher runs first; equal priorities keep submission order. */
export const PRIORITY = { min: -50, max: 50, default: 0 } as const;
