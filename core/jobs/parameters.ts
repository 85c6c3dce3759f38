import { Type, Value, type Static, type TObject, type TSchema } from "../typebox.js";
import type { JobType } from "./types.js";
import { DEFAULT_BOUNDS, ERROR_MESSAGE, integerRange, perBounds, type SchemaBounds } from "./bounds.js";
import { Enum } from "./enum.js";
import { MAX_TIMESTAMP_SECONDS, TIMESTAMP_PATTERN } from "./timestamp.js";

// Job parameters per type: names, rules and defaults of the interface, plus the decisions it leaves
// open. These schemas are the single source of truth for validation (API, batch entries), the
// defaults (the API's validator fills them in at submit, withDefaults in the runner), the types
// processors read, and the OpenAPI document. A field with a default is never wrapped in
// Type.Optional: TypeBox then lists it as required, so its Static type has it, as it is once the
// default is applied. Bounds that come from the configuration (SchemaBounds) are parameters of the
// schemas: the API builds them from its configuration when it starts; PARAMETER_SCHEMAS are those
// of the default configuration.

export const IMAGE_FORMATS = ["jpeg", "png", "webp", "avif"] as const;
export const FIT_MODES = ["cover", "contain", "fill", "inside", "outside"] as const;
export const WATERMARK_POSITIONS = [
  "top-left",
  "top-right",
  "bottom-left",
  "bottom-right",
  "center",
] as const;
export const COLOR_FORMATS = ["hex", "rgb", "hsl"] as const;
export const THUMBNAIL_FORMATS = ["jpeg", "png", "webp"] as const;
export const AUDIO_FORMATS = ["mp3", "aac", "opus", "ogg", "flac", "wav", "m4a"] as const;
/** Formats without a bitrate: lossless or uncompressed. */
export const LOSSLESS_AUDIO_FORMATS: readonly string[] = ["flac", "wav"];
/**
 * The bitrates (kbit/s) each lossy format's encoder can produce, whatever the source: MPEG-1 Layer
 * III tops out at 320k (LAME clamps anything above to it), libopus refuses more than 512k, ffmpeg's
 * AAC encoder clamps above 512k, libvorbis cannot set up above 500k. Within a range, what a given
 * source allows (Vorbis at a low sample rate) is the runner's to find out.
 */
export const AUDIO_BITRATE_KBPS: Readonly<Record<string, readonly [number, number]>> = {
  mp3: [8, 320],
  aac: [8, 512],
  m4a: [8, 512],
  opus: [6, 512],
  ogg: [8, 500],
};

export { TIMESTAMP_PATTERN };

/** The form of a bitrate; the range each format takes is checked per format (audioBitrateRules). */
export const BITRATE_PATTERN = "^[1-9][0-9]{0,3}k$";

/** Per lossy format: its bitrate must lie in the encoder's range; lossless formats take none. */
function audioBitrateRules(): TSchema[] {
  const lossy = Object.entries(AUDIO_BITRATE_KBPS).map(([format, [min, max]]) => ({
    if: { properties: { format: { const: format } }, required: ["format"] },
    then: {
      properties: {
        bitrate: {
          pattern: `^${integerRange(min, max)}k$`,
          [ERROR_MESSAGE]: `{value} is out of range for ${format}: ${min}k to ${max}k`,
        },
      },
    },
  }));
  const lossless = LOSSLESS_AUDIO_FORMATS.map((format) => ({
    if: { properties: { format: { const: format } }, required: ["format"] },
    then: {
      properties: {
        bitrate: {
          not: {},
          [ERROR_MESSAGE]: `is not accepted for ${format}: it is a lossless or uncompressed format`,
        },
      },
    },
  }));
  return [...lossy, ...lossless] as unknown as TSchema[];
}

/** Output pixels: 1 to limits.max_output_dimension. */
const Dimension = (bounds: SchemaBounds, description: string) =>
  Type.Integer({
    minimum: 1,
    maximum: bounds.maxOutputDimension,
    description: `${description}; at most ${bounds.maxOutputDimension} (limits.max_output_dimension)`,
    [ERROR_MESSAGE]: {
      maximum: `must be at most ${bounds.maxOutputDimension} pixels (limits.max_output_dimension)`,
    },
  });

export const imageResizeParameters = (bounds: SchemaBounds) =>
  Type.Object(
    {
      width: Dimension(bounds, "Target width in pixels"),
      height: Dimension(bounds, "Target height in pixels"),
      format: Type.Optional(Enum(IMAGE_FORMATS, { description: "Output format; default: the source's" })),
      quality: Type.Integer({ minimum: 1, maximum: 100, default: 85 }),
      fit: Enum(FIT_MODES, { default: "cover", description: "How the image fits the box" }),
      enlarge: Type.Boolean({ default: false, description: "Allow upscaling beyond the source size" }),
    },
    { additionalProperties: false },
  );
export const ImageResizeParameters = imageResizeParameters(DEFAULT_BOUNDS);

export const ImageOptimizeParameters = Type.Object(
  {
    format: Type.Optional(Enum(IMAGE_FORMATS, { description: "Output format; default: the source's" })),
    quality: Type.Integer({ minimum: 1, maximum: 100, default: 80 }),
    strip_metadata: Type.Boolean({ default: false, description: "Remove EXIF, ICC and XMP metadata" }),
  },
  { additionalProperties: false },
);

export const ImageWatermarkParameters = Type.Object(
  {
    watermark_text: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 500,
        description: "Text overlay; exclusive with watermark_image",
      }),
    ),
    watermark_image: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1024,
        description: "Storage key of a watermark image in source_bucket; exclusive with watermark_text",
      }),
    ),
    position: Enum(WATERMARK_POSITIONS, { default: "bottom-right" }),
    opacity: Type.Integer({ minimum: 0, maximum: 100, default: 100 }),
    font_size: Type.Optional(Type.Integer({ minimum: 4, maximum: 1000, description: "Text size in pixels" })),
    color: Type.String({
      pattern: "^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$",
      default: "#ffffff",
      description: "Text colour",
    }),
  },
  {
    additionalProperties: false,
    description: "Exactly one of watermark_text and watermark_image",
    // One of the two, not both: said in the schema, so the document says it too.
    anyOf: [{ required: ["watermark_text"] }, { required: ["watermark_image"] }],
    // Checked after anyOf, so it fails only when both are given (no `not`, which generators handle
    // poorly).
    oneOf: [{ required: ["watermark_text"] }, { required: ["watermark_image"] }],
    [ERROR_MESSAGE]: {
      anyOf: "one of watermark_text or watermark_image is required",
      oneOf: "watermark_text and watermark_image are mutually exclusive: give one of them",
    },
  },
);

export const ImageColorsParameters = Type.Object(
  {
    color_count: Type.Integer({ minimum: 3, maximum: 10, default: 5 }),
    format: Enum(COLOR_FORMATS, { default: "hex" }),
  },
  { additionalProperties: false },
);

const Language = (description: string) =>
  Type.String({ pattern: "^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*$", default: "en", description });

export const ImageAiKeywordsParameters = Type.Object(
  {
    keyword_count: Type.Integer({ minimum: 10, maximum: 20, default: 15 }),
    language: Language("Language code (BCP 47) of the keywords"),
  },
  { additionalProperties: false },
);

const MAX_TIMESTAMP = `${MAX_TIMESTAMP_SECONDS / 3600}:00:00 (${MAX_TIMESTAMP_SECONDS} seconds)`;

export const videoThumbnailParameters = (bounds: SchemaBounds) =>
  Type.Object(
    {
      timestamp: Type.Union(
        [
          Type.String({ pattern: TIMESTAMP_PATTERN }),
          Type.Number({ minimum: 0, maximum: MAX_TIMESTAMP_SECONDS }),
        ],
        {
          default: "00:00:01",
          description: `HH:MM:SS, MM:SS or a number of seconds (a JSON number or a string), at most ${MAX_TIMESTAMP}`,
          [ERROR_MESSAGE]: {
            anyOf: `must be HH:MM:SS, MM:SS or a number of seconds, at most ${MAX_TIMESTAMP}; got {value}`,
          },
        },
      ),
      width: Type.Optional(Dimension(bounds, "Pixels; aspect ratio is kept")),
      format: Enum(THUMBNAIL_FORMATS, { default: "jpeg" }),
    },
    { additionalProperties: false },
  );
export const VideoThumbnailParameters = videoThumbnailParameters(DEFAULT_BOUNDS);

export const AudioConvertParameters = Type.Object(
  {
    format: Enum(AUDIO_FORMATS),
    bitrate: Type.Optional(
      Type.String({
        pattern: BITRATE_PATTERN,
        description:
          "Target bitrate such as 128k: mp3 8k-320k, aac and m4a 8k-512k, opus 6k-512k, ogg 8k-500k; not accepted for flac and wav",
      }),
    ),
  },
  { additionalProperties: false, allOf: audioBitrateRules() },
);

/** analyze's `provider`: one of the configured providers' names (none configured: no value is). */
const Provider = (bounds: SchemaBounds) => {
  const description = "A configured AI provider by name (ai.providers); default: ai.default_provider";
  return Type.Optional(
    bounds.aiProviders.length > 0
      ? Enum(bounds.aiProviders, {
          description,
          [ERROR_MESSAGE]: `must name a configured AI provider (${bounds.aiProviders.join(", ")}); got {value}`,
        })
      : Type.String({
          not: {},
          description: `${description}. No provider is configured: analyze jobs cannot name one`,
          [ERROR_MESSAGE]: "names no configured AI provider: none is configured",
        }),
  );
};

export const analyzeParameters = (bounds: SchemaBounds) =>
  Type.Object(
    {
      prompt: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 4000,
          description:
            "What to ask about the media; default: a description (images, video) or a summary (audio)",
        }),
      ),
      provider: Provider(bounds),
      max_frames: Type.Integer({
        minimum: 1,
        maximum: 32,
        default: 8,
        description: "Frames sampled from a video",
      }),
      language: Language("Language of the answer"),
    },
    { additionalProperties: false },
  );
export const AnalyzeParameters = analyzeParameters(DEFAULT_BOUNDS);

/** Every job type's parameter schema, with the configuration's bounds. */
export const parameterSchemas = perBounds(
  (bounds) =>
    ({
      image_resize: imageResizeParameters(bounds),
      image_optimize: ImageOptimizeParameters,
      image_watermark: ImageWatermarkParameters,
      image_colors: ImageColorsParameters,
      image_ai_keywords: ImageAiKeywordsParameters,
      video_thumbnail: videoThumbnailParameters(bounds),
      audio_convert: AudioConvertParameters,
      analyze: analyzeParameters(bounds),
    }) as const satisfies Readonly<Record<JobType, TObject>>,
);

/** The parameter schemas of the default configuration. */
export const PARAMETER_SCHEMAS = parameterSchemas(DEFAULT_BOUNDS);

/** Each job type's parameters as its processor reads them (withDefaults): defaulted fields present. */
export type JobParameters = { [T in JobType]: Static<(typeof PARAMETER_SCHEMAS)[T]> };

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
export type AnalyzeParameters = JobParameters["analyze"];
