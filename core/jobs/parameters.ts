import { Value, type Static } from "../typebox.js";
import { JOB_DEFINITIONS, type DefinitionOf, type JobType } from "../../jobs/registry.js";
import { DEFAULT_BOUNDS, perBounds } from "./bounds.js";

// Job parameters per type, as each type declares them (jobs/<type>/definition.ts): names, rules and
// defaults of the interface, plus the decisions it leaves open. These schemas are the single source
// of truth for validation (API, batch entries), the defaults (the API's validator fills them in at
// submit, withDefaults in the runner), the types processors read, and the OpenAPI document. Bounds
// that come from the configuration (SchemaBounds) are parameters of the schemas: the API builds them
// from its configuration when it starts; PARAMETER_SCHEMAS are those of the default configuration.

export { IMAGE_FORMATS } from "./fields.js";
export { TIMESTAMP_PATTERN } from "./timestamp.js";
export { FIT_MODES } from "../../jobs/image_resize/definition.js";
export { WATERMARK_POSITIONS } from "../../jobs/image_watermark/definition.js";
export { COLOR_FORMATS } from "../../jobs/image_colors/definition.js";
export { THUMBNAIL_FORMATS } from "../../jobs/video_thumbnail/definition.js";
export {
  AUDIO_BITRATE_KBPS,
  AUDIO_FORMATS,
  AUDIO_SAMPLE_RATES,
  BITRATE_PATTERN,
  LOSSLESS_AUDIO_FORMATS,
} from "../../jobs/audio_convert/definition.js";

/** Each type's parameter schema, as its definition builds it. */
export type ParameterSchemas = { [T in JobType]: ReturnType<DefinitionOf<T>["parameters"]> };

/** Every job type's parameter schema, with the configuration's bounds. */
export const parameterSchemas = perBounds(
  (bounds) =>
    Object.fromEntries(JOB_DEFINITIONS.map((d) => [d.name, d.parameters(bounds)])) as ParameterSchemas,
);

/** The parameter schemas of the default configuration. */
export const PARAMETER_SCHEMAS = parameterSchemas(DEFAULT_BOUNDS);

/** Each job type's parameters as its processor reads them (withDefaults): defaulted fields present. */
export type JobParameters = { [T in JobType]: Static<ParameterSchemas[T]> };

/**
 * A job's parameters as its processor reads them: those recorded, with its schema's default for each
 * field they lack. The API records a submission's parameters with these defaults already in (its
 * validator applies the same schemas' defaults); a job recorded another way, or handed to a processor
 * directly, gets them here. Defaults do not depend on the configuration's bounds, so the schemas of
 * the default configuration serve. The record itself is left as it is.
 */
export function withDefaults<T extends JobType>(type: T, parameters: unknown): JobParameters[T] {
  return Value.Default(PARAMETER_SCHEMAS[type], structuredClone(parameters ?? {})) as JobParameters[T];
}

export type ImageResizeParameters = JobParameters["image_resize"];
export type ImageOptimizeParameters = JobParameters["image_optimize"];
export type ImageWatermarkParameters = JobParameters["image_watermark"];
export type ImageColorsParameters = JobParameters["image_colors"];
export type ImageAiKeywordsParameters = JobParameters["image_ai_keywords"];
export type VideoThumbnailParameters = JobParameters["video_thumbnail"];
export type AudioConvertParameters = JobParameters["audio_convert"];
export type VideoTranscodeParameters = JobParameters["video_transcode"];
export type AnalyzeParameters = JobParameters["analyze"];
