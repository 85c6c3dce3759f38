import { Type, type TSchema } from "../../core/typebox.js";
import { Enum } from "../../core/jobs/enum.js";
import { ERROR_MESSAGE, integerRange } from "../../core/jobs/patterns.js";
import { defineJobType } from "../define.js";

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

/** The sample rates (Hz) each encoder takes, where it takes only some (Opus runs at 48 kHz and divisions). */
export const AUDIO_SAMPLE_RATES: Readonly<Record<"mp3" | "aac" | "opus", readonly number[]>> = {
  mp3: [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000],
  aac: [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000],
  opus: [48000, 24000, 16000, 12000, 8000],
};

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

const parameters = Type.Object(
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

export const definition = defineJobType({
  name: "audio_convert",
  route: { path: "/jobs/audio/convert", summary: "Convert audio to another format" },
  media: { source: "audio", output: "audio" },
  parameters: () => parameters,
  example: { format: "mp3" },
  result: {
    name: "AudioResult",
    schema: Type.Object({
      output_url: Type.String(),
      file_size: Type.Integer(),
      duration: Type.Number({ description: "Seconds of audio" }),
      metadata: Type.Object({
        format: Type.String(),
        codec: Type.String(),
        bitrate: Type.Optional(Type.Integer()),
        sample_rate: Type.Integer(),
        channels: Type.Integer(),
      }),
    }),
  },
  runner: { timeout: "30m", resources: "media", inMemorySource: false },
});
