import { Type, type Static, type TObject } from "@sinclair/typebox";
import type { JobType } from "./types.js";
import { Enum } from "./enum.js";

// Job parameters per type: names, rules and defaults of the interface, plus the decisions it leaves
// open. These schemas are the single source of truth for validation (API, batch entries),
// the defaults the runner applies, and the OpenAPI document.

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

/** `HH:MM:SS`, `MM:SS` (each with optional fraction) or a number of seconds. */
export const TIMESTAMP_PATTERN =
  "^(?:\\d+:[0-5]?\\d:[0-5]?\\d(?:\\.\\d+)?|\\d+:[0-5]?\\d(?:\\.\\d+)?|\\d+(?:\\.\\d+)?)$";

export const ImageResizeParameters = Type.Object(
  {
    width: Type.Integer({ minimum: 1, description: "Target width in pixels" }),
    height: Type.Integer({ minimum: 1, description: "Target height in pixels" }),
    format: Type.Optional(Enum(IMAGE_FORMATS, { description: "Output format; default: the source's" })),
    quality: Type.Integer({ minimum: 1, maximum: 100, default: 85 }),
    fit: Enum(FIT_MODES, { default: "cover", description: "How the image fits the box" }),
    enlarge: Type.Boolean({ default: false, description: "Allow upscaling beyond the source size" }),
  },
  { additionalProperties: false },
);

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
  { additionalProperties: false },
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

export const VideoThumbnailParameters = Type.Object(
  {
    timestamp: Type.Union([Type.String({ pattern: TIMESTAMP_PATTERN }), Type.Number({ minimum: 0 })], {
      default: "00:00:01",
      description: "HH:MM:SS, MM:SS or a number of seconds",
    }),
    width: Type.Optional(Type.Integer({ minimum: 1, description: "Pixels; aspect ratio is kept" })),
    format: Enum(THUMBNAIL_FORMATS, { default: "jpeg" }),
  },
  { additionalProperties: false },
);

export const AudioConvertParameters = Type.Object(
  {
    format: Enum(AUDIO_FORMATS),
    bitrate: Type.Optional(
      Type.String({
        pattern: "^[1-9]\\d{0,3}k$",
        description:
          "Target bitrate such as 128k: mp3 8k-320k, aac and m4a 8k-512k, opus 6k-512k, ogg 8k-500k; not accepted for flac and wav",
      }),
    ),
  },
  { additionalProperties: false },
);

export const AnalyzeParameters = Type.Object(
  {
    prompt: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 4000,
        description:
          "What to ask about the media; default: a description (images, video) or a summary (audio)",
      }),
    ),
    provider: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: "A configured AI provider by name (ai.providers); default: ai.default_provider",
      }),
    ),
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

export const PARAMETER_SCHEMAS: Readonly<Record<JobType, TObject>> = {
  image_resize: ImageResizeParameters,
  image_optimize: ImageOptimizeParameters,
  image_watermark: ImageWatermarkParameters,
  image_colors: ImageColorsParameters,
  image_ai_keywords: ImageAiKeywordsParameters,
  video_thumbnail: VideoThumbnailParameters,
  audio_convert: AudioConvertParameters,
  analyze: AnalyzeParameters,
};

export type ImageResizeParameters = Static<typeof ImageResizeParameters>;
export type ImageOptimizeParameters = Static<typeof ImageOptimizeParameters>;
export type ImageWatermarkParameters = Static<typeof ImageWatermarkParameters>;
export type ImageColorsParameters = Static<typeof ImageColorsParameters>;
export type ImageAiKeywordsParameters = Static<typeof ImageAiKeywordsParameters>;
export type VideoThumbnailParameters = Static<typeof VideoThumbnailParameters>;
export type AudioConvertParameters = Static<typeof AudioConvertParameters>;
export type AnalyzeParameters = Static<typeof AnalyzeParameters>;

/**
 * Rules that span several fields, which JSON Schema cannot say clearly. Returns the first broken
 * rule as a message, or undefined.
 */
export function checkParameterRules(type: JobType, parameters: Record<string, unknown>): string | undefined {
  if (type === "image_watermark") {
    const text = parameters.watermark_text !== undefined;
    const image = parameters.watermark_image !== undefined;
    if (text === image) {
      return text
        ? "watermark_text and watermark_image are mutually exclusive: give one of them"
        : "one of watermark_text or watermark_image is required";
    }
  }
  if (type === "audio_convert" && parameters.bitrate !== undefined) {
    if (LOSSLESS_AUDIO_FORMATS.includes(parameters.format as string)) {
      return `bitrate is not accepted for ${String(parameters.format)}: it is a lossless or uncompressed format`;
    }
    const range = AUDIO_BITRATE_KBPS[parameters.format as string];
    const kbps = Number.parseInt(String(parameters.bitrate), 10);
    if (range && !(kbps >= range[0] && kbps <= range[1])) {
      return `bitrate ${String(parameters.bitrate)} is out of range for ${String(parameters.format)}: ${range[0]}k to ${range[1]}k`;
    }
  }
  return undefined;
}
