import { Type, type TSchema } from "../../core/typebox.js";
import { Dimension } from "../../core/jobs/fields.js";
import { Enum } from "../../core/jobs/enum.js";
import { CROSS_FIELD_RULE, ERROR_MESSAGE, integerRange } from "../../core/jobs/patterns.js";
import { MAX_TIMESTAMP_SECONDS } from "../../core/jobs/timestamp.js";
import { AUDIO_BITRATE_KBPS, AUDIO_SAMPLE_RATES } from "../audio_convert/definition.js";
import { defineJobType } from "../define.js";

export const VIDEO_CONTAINERS = ["mp4", "webm", "mkv", "mov"] as const;
export const VIDEO_CODECS = ["h264", "h265", "vp9", "av1", "copy"] as const;
export const TRANSCODE_AUDIO_CODECS = ["aac", "opus", "mp3", "copy", "none"] as const;
export const VIDEO_PRESETS = ["fast", "medium", "slow"] as const;
export const PIXEL_FORMATS = ["yuv420p", "yuv420p10le"] as const;

type Container = (typeof VIDEO_CONTAINERS)[number];
type EncodedVideo = Exclude<(typeof VIDEO_CODECS)[number], "copy">;
type EncodedAudio = Exclude<(typeof TRANSCODE_AUDIO_CODECS)[number], "copy" | "none">;

/**
 * The containers each encoded codec can go in, as ffmpeg's muxers take them: WebM holds VP9 and AV1
 * with Opus only; MOV (QuickTime) holds H.264 and H.265 with AAC and MP3 (its muxer refuses VP9,
 * AV1 and Opus); MP4 holds all four video codecs (VP9 and AV1 by their ISO-BMFF bindings) and all
 * three audio codecs; Matroska holds everything. A copied stream is checked against the source's
 * codec when the job runs.
 */
export const CONTAINERS_OF: Readonly<Record<EncodedVideo | EncodedAudio, readonly Container[]>> = {
  h264: ["mp4", "mkv", "mov"],
  h265: ["mp4", "mkv", "mov"],
  vp9: ["mp4", "webm", "mkv"],
  av1: ["mp4", "webm", "mkv"],
  aac: ["mp4", "mkv", "mov"],
  opus: ["mp4", "webm", "mkv"],
  mp3: ["mp4", "mkv", "mov"],
};

/** The CRF range of each encoder (libx264, libx265: 0–51; libvpx-vp9: 0–63; libsvtav1: 1–63). */
export const CRF_RANGE: Readonly<Record<EncodedVideo, readonly [number, number]>> = {
  h264: [0, 51],
  h265: [0, 51],
  vp9: [0, 63],
  av1: [1, 63],
};

/** Codecs that encode yuv420p10le (H.264 at 10 bits, High 10, plays almost nowhere). */
export const TEN_BIT_CODECS: readonly EncodedVideo[] = ["h265", "vp9", "av1"];

/** A video bitrate: kbit/s, 16k to 200000k. */
const VIDEO_BITRATE = { min: 16, max: 200_000 };

/** The defaults, which the rules below apply when a field is absent (ajv fills defaults in after them). */
const DEFAULT_VIDEO_CODEC = "h264";
const DEFAULT_AUDIO_CODEC = "aac";

const list = (values: readonly (string | number)[]) =>
  values.length === 1 ? String(values[0]) : `${values.slice(0, -1).join(", ")} or ${String(values.at(-1))}`;

/**
 * `if` a field has a value (or, for its default, is absent), `then` `properties` hold. A field's
 * default must be matched when absent: ajv fills defaults in only after these rules run.
 */
function when(
  field: string,
  value: string,
  isDefault: boolean,
  properties: Record<string, unknown>,
): TSchema {
  return {
    if: { properties: { [field]: { const: value } }, ...(isDefault ? {} : { required: [field] }) },
    then: { properties },
    [CROSS_FIELD_RULE]: true,
  } as unknown as TSchema;
}

const refused = (message: string) => ({ not: {}, [ERROR_MESSAGE]: message });

function rules(): TSchema[] {
  const out: TSchema[] = [];
  // The container must hold the codecs.
  for (const codec of ["h264", "h265", "vp9", "av1"] as const) {
    const containers = CONTAINERS_OF[codec];
    const isDefault = codec === DEFAULT_VIDEO_CODEC;
    out.push(
      when("video_codec", codec, isDefault, {
        container: {
          enum: containers,
          [ERROR_MESSAGE]: `{value} cannot hold ${codec} video (video_codec${isDefault ? ", h264 by default" : ""}): ${codec} goes in ${list(containers)}`,
        },
      }),
    );
  }
  for (const codec of ["aac", "opus", "mp3"] as const) {
    const containers = CONTAINERS_OF[codec];
    const isDefault = codec === DEFAULT_AUDIO_CODEC;
    out.push(
      when("audio_codec", codec, isDefault, {
        container: {
          enum: containers,
          [ERROR_MESSAGE]: `{value} cannot hold ${codec} audio (audio_codec${isDefault ? ", aac by default" : ""}): ${codec} goes in ${list(containers)}; or set audio_codec none`,
        },
      }),
    );
  }
  // crf or video_bitrate, not both.
  out.push({
    [CROSS_FIELD_RULE]: true,
    if: { required: ["crf"] },
    then: {
      properties: {
        video_bitrate: refused(
          "cannot be given with crf: crf asks for a quality, video_bitrate for a size; give one of them",
        ),
      },
    },
  } as unknown as TSchema);
  // Each encoder's CRF range.
  for (const [codec, [min, max]] of Object.entries(CRF_RANGE)) {
    out.push(
      when("video_codec", codec, codec === DEFAULT_VIDEO_CODEC, {
        crf: {
          minimum: min,
          maximum: max,
          [ERROR_MESSAGE]: `{value} is out of range for ${codec}: ${min} to ${max}`,
        },
      }),
    );
  }
  // 10-bit output only where the codec takes it.
  out.push(
    when("video_codec", "h264", true, {
      pixel_format: {
        const: "yuv420p",
        [ERROR_MESSAGE]: `{value} is not accepted with h264 (video_codec, h264 by default): 10-bit output needs ${list(TEN_BIT_CODECS)}`,
      },
    }),
  );
  // A copied video stream is not encoded: nothing of the encoding applies.
  const copied = "is not accepted with video_codec copy: the video stream is copied as it is";
  out.push(
    when("video_codec", "copy", false, {
      ...Object.fromEntries(
        ["width", "height", "crf", "video_bitrate", "max_bitrate", "fps"].map((f) => [f, refused(copied)]),
      ),
      pixel_format: { const: "yuv420p", [ERROR_MESSAGE]: `{value} ${copied}` },
    }),
  );
  for (const codec of ["copy", "none"] as const) {
    const why =
      codec === "copy"
        ? "is not accepted with audio_codec copy: the audio stream is copied as it is"
        : "is not accepted with audio_codec none: the output has no audio";
    out.push(
      when(
        "audio_codec",
        codec,
        false,
        Object.fromEntries(
          ["audio_bitrate", "audio_channels", "audio_sample_rate"].map((f) => [f, refused(why)]),
        ),
      ),
    );
  }
  // Each audio encoder's bitrates, sample rates and channels.
  for (const codec of ["aac", "opus", "mp3"] as const) {
    const [min, max] = AUDIO_BITRATE_KBPS[codec]!;
    const rates = AUDIO_SAMPLE_RATES[codec];
    out.push(
      when("audio_codec", codec, codec === DEFAULT_AUDIO_CODEC, {
        audio_bitrate: {
          pattern: `^${integerRange(min, max)}k$`,
          [ERROR_MESSAGE]: `{value} is out of range for ${codec}: ${min}k to ${max}k`,
        },
        audio_sample_rate: {
          enum: rates,
          [ERROR_MESSAGE]: `{value} is not a sample rate ${codec} takes: ${list(rates)}`,
        },
        ...(codec === "mp3"
          ? { audio_channels: { maximum: 2, [ERROR_MESSAGE]: "{value} is more than mp3 takes: 1 or 2" } }
          : {}),
      }),
    );
  }
  return out;
}

const VIDEO_BITRATE_PATTERN = `^${integerRange(VIDEO_BITRATE.min, VIDEO_BITRATE.max)}k$`;
const VideoBitrate = (description: string) =>
  Type.String({
    pattern: VIDEO_BITRATE_PATTERN,
    description: `${description}, in kbit/s: ${VIDEO_BITRATE.min}k to ${VIDEO_BITRATE.max}k`,
    [ERROR_MESSAGE]: `must be a bitrate in kbit/s such as 2500k, ${VIDEO_BITRATE.min}k to ${VIDEO_BITRATE.max}k; got {value}`,
  });

const MAX_SECONDS = `${MAX_TIMESTAMP_SECONDS / 3600} hours`;

export const definition = defineJobType({
  name: "video_transcode",
  route: { path: "/jobs/video/transcode", summary: "Transcode a video to another codec, size or container" },
  media: { source: "video", output: "video" },
  parameters: (bounds) =>
    Type.Object(
      {
        container: Enum(VIDEO_CONTAINERS, {
          default: "mp4",
          description:
            "mp4 (the index first, so it plays while downloading), webm, mkv or mov; what each holds: mp4 h264, h265, vp9, av1 with aac, opus, mp3; webm vp9, av1 with opus; mov h264, h265 with aac, mp3; mkv all",
        }),
        video_codec: Enum(VIDEO_CODECS, {
          default: "h264",
          description:
            "h264 (libx264), h265 (libx265; tagged hvc1 in mp4 and mov, as Apple's players want), vp9 (libvpx-vp9), av1 (libsvtav1), or copy: the source's video stream as it is",
        }),
        width: Type.Optional(
          Dimension(bounds, "The video fits inside width×height, aspect kept, even sides; never enlarged"),
        ),
        height: Type.Optional(
          Dimension(bounds, "The video fits inside width×height, aspect kept, even sides; never enlarged"),
        ),
        crf: Type.Optional(
          Type.Integer({
            minimum: 0,
            maximum: 63,
            description:
              "Constant quality, lower is better: h264 and h265 0-51, vp9 0-63, av1 1-63. Without crf or video_bitrate: h264 23, h265 28, vp9 33, av1 35. Exclusive with video_bitrate",
          }),
        ),
        video_bitrate: Type.Optional(VideoBitrate("Average video bitrate such as 2500k; exclusive with crf")),
        max_bitrate: Type.Optional(
          VideoBitrate("Peak video bitrate (with crf: a capped quality; with video_bitrate: its ceiling)"),
        ),
        preset: Enum(VIDEO_PRESETS, {
          default: "medium",
          description:
            "Encoding speed against size: fast, medium or slow (x264/x265 veryfast, medium, slow; vp9 cpu-used 4, 2, 1; av1 preset 10, 8, 6)",
        }),
        fps: Type.Optional(
          Type.Number({
            minimum: 1,
            maximum: 240,
            description:
              "Frame rate cap: a faster video is brought down to it; a slower one is kept as it is",
          }),
        ),
        pixel_format: Enum(PIXEL_FORMATS, {
          default: "yuv420p",
          description:
            "yuv420p (8 bits: 10-bit sources are converted) or yuv420p10le (10 bits: h265, vp9 and av1 only)",
        }),
        audio_codec: Enum(TRANSCODE_AUDIO_CODECS, {
          default: "aac",
          description:
            "aac, opus (libopus), mp3 (libmp3lame), copy (the source's audio as it is) or none (no audio)",
        }),
        audio_bitrate: Type.Optional(
          Type.String({
            pattern: "^[1-9][0-9]{0,3}k$",
            description:
              "Audio bitrate such as 128k: aac 8k-512k, opus 6k-512k, mp3 8k-320k. Default: aac 192k, opus 96k, mp3 192k",
          }),
        ),
        audio_channels: Type.Optional(
          Type.Integer({
            minimum: 1,
            maximum: 8,
            description: "Channels: 1 to 8 (mp3 1 or 2); default the source's",
          }),
        ),
        audio_sample_rate: Type.Optional(
          Type.Integer({
            minimum: 8000,
            maximum: 96000,
            description:
              "Hz; default the source's when the encoder takes it, else 48000 (mp3 44100): opus 48000, 24000, 16000, 12000, 8000",
          }),
        ),
        start: Type.Optional(
          Type.Number({
            minimum: 0,
            maximum: MAX_TIMESTAMP_SECONDS,
            description: `Seconds into the source where the output begins (at most ${MAX_SECONDS}); with video_codec copy, the keyframe before it`,
          }),
        ),
        duration: Type.Optional(
          Type.Number({
            minimum: 0.001,
            maximum: MAX_TIMESTAMP_SECONDS,
            description: "Seconds of the source to keep (at least 0.001), from start; default to the end",
          }),
        ),
      },
      { additionalProperties: false, allOf: rules() },
    ),
  example: { preset: "fast" },
  result: {
    name: "TranscodeResult",
    schema: Type.Object({
      output_url: Type.String(),
      file_size: Type.Integer(),
      duration: Type.Number({ description: "Seconds of video, read from the written file" }),
      width: Type.Integer({ description: "Width as displayed" }),
      height: Type.Integer({ description: "Height as displayed" }),
      video_codec: Type.String({ description: "As ffprobe names it: h264, hevc, vp9, av1, …" }),
      audio_codec: Type.Optional(Type.String({ description: "Absent when the output has no audio" })),
      bitrate: Type.Optional(Type.Integer({ description: "Bits per second, the whole file's average" })),
      frame_rate: Type.Number({ description: "Frames per second" }),
    }),
  },
  runner: { timeout: "2h", resources: "video", inMemorySource: false },
});
