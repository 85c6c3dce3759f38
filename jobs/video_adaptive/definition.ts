import { Type } from "../../core/typebox.js";
import { Enum } from "../../core/jobs/enum.js";
import { ERROR_MESSAGE, integerRange } from "../../core/jobs/patterns.js";
import { defineJobType } from "../define.js";

export { prefixOfEntry } from "../define.js";

export const LADDER_CODECS = ["h264", "h265", "av1"] as const;
export const LADDER_FORMATS = ["hls", "dash"] as const;

export const PRESETS = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow"] as const;

/** Renditions a ladder may have. */
export const MAX_RENDITIONS = 6;
/** A rendition's video bitrate, kbit/s. */
export const LADDER_BITRATE_KBPS = [100, 50_000] as const;
/** A rendition's height: even (4:2:0), 144 up to the limit of the output's dimensions. */
export const MIN_RENDITION_HEIGHT = 144;

/**
 * The names of what the ladder's manifests are, under the job's dest_prefix. The job's record keeps
 * `dest_key` as the master playlist's key: the one object a client starts from (GET
 * /jobs/{id}/output and /links, the search by dest_prefix, output_url).
 */
export const MASTER_PLAYLIST = "master.m3u8";
export const DASH_MANIFEST = "manifest.mpd";

/**
 * The key a ladder under `prefix` is recorded with (dest_key): its master playlist, or its DASH
 * manifest when it has no HLS. One trailing slash or none: the same ladder.
 */
export function entryKeyOf(prefix: string, formats: readonly string[] | undefined): string {
  const entry = !formats || formats.includes("hls") ? MASTER_PLAYLIST : DASH_MANIFEST;
  return `${prefix.replace(/\/+$/, "")}/${entry}`;
}

const Rendition = (maxDimension: number) =>
  Type.Object(
    {
      height: Type.Integer({
        minimum: MIN_RENDITION_HEIGHT,
        maximum: maxDimension,
        multipleOf: 2,
        description: `Pixels, even; the width follows the source's aspect ratio; at most the source's height and ${maxDimension} (limits.max_output_dimension)`,
      }),
      video_bitrate: Type.String({
        pattern: `^${integerRange(...LADDER_BITRATE_KBPS)}k$`,
        description: `Target video bitrate such as 2800k, ${LADDER_BITRATE_KBPS[0]}k to ${LADDER_BITRATE_KBPS[1]}k`,
        [ERROR_MESSAGE]: `must be a bitrate from ${LADDER_BITRATE_KBPS[0]}k to ${LADDER_BITRATE_KBPS[1]}k, such as 2800k; got {value}`,
      }),
    },
    { additionalProperties: false },
  );

export const definition = defineJobType({
  name: "video_adaptive",
  route: {
    path: "/jobs/video/adaptive",
    summary: "Encode a video into an adaptive-streaming ladder (HLS and DASH)",
  },
  media: { source: "video", output: "video" },
  entryKey: (prefix, parameters) => entryKeyOf(prefix, parameters.formats as string[] | undefined),
  parameters: (bounds) =>
    Type.Object(
      {
        renditions: Type.Optional(
          Type.Array(Rendition(bounds.maxOutputDimension), {
            minItems: 1,
            maxItems: MAX_RENDITIONS,
            description: `1 to ${MAX_RENDITIONS} renditions of distinct heights; absent: 1080, 720, 480 and 360 at most the source's height (the source's own height when it is below 360)`,
          }),
        ),
        video_codec: Enum(LADDER_CODECS, { default: "h264", description: "Video codec of every rendition" }),
        preset: Enum(PRESETS, {
          default: "veryfast",
          description:
            "Encoder speed against size, as x264 and x265 name it (AV1: the SVT-AV1 preset of that speed)",
        }),
        segment_seconds: Type.Integer({
          minimum: 1,
          maximum: 20,
          default: 4,
          description:
            "Segment length in seconds; every rendition has a keyframe at each segment's start, at the same times",
        }),
        formats: Type.Array(Enum(LADDER_FORMATS), {
          minItems: 1,
          maxItems: 2,
          uniqueItems: true,
          default: ["hls"],
          description:
            "Manifests to write: an HLS master playlist, a DASH manifest, or both; both reference one set of CMAF (fragmented MP4) segments",
        }),
        audio_only_rendition: Type.Boolean({
          default: false,
          description:
            "Add an audio-only (AAC) variant to the HLS master playlist; the source must hold audio. The source's audio is otherwise kept as one AAC track shared by the renditions",
        }),
      },
      { additionalProperties: false },
    ),
  example: { preset: "ultrafast" },
  result: {
    name: "AdaptiveResult",
    schema: Type.Object({
      master_url: Type.Optional(
        Type.String({ description: "The HLS master playlist, when `formats` has hls" }),
      ),
      dash_url: Type.Optional(Type.String({ description: "The DASH manifest, when `formats` has dash" })),
      renditions: Type.Array(
        Type.Object({
          width: Type.Integer(),
          height: Type.Integer(),
          bandwidth: Type.Integer({ description: "Peak bits per second, as the master playlist says" }),
          codecs: Type.String({ description: "RFC 6381 codecs of the variant, audio included" }),
          playlist_url: Type.String(),
        }),
      ),
      audio: Type.Optional(
        Type.Object({ codecs: Type.String(), bandwidth: Type.Integer(), playlist_url: Type.String() }),
      ),
      duration: Type.Number({ description: "Seconds of video" }),
    }),
  },
  runner: { timeout: "2h", resources: "video", inMemorySource: false },
  check: (parameters) => {
    const renditions = (parameters.renditions ?? []) as Array<{ height: number }>;
    const heights = renditions.map((r) => r.height);
    const twice = heights.find((h, i) => heights.indexOf(h) !== i);
    return twice === undefined ? undefined : `renditions: heights must be distinct; ${twice} is given twice`;
  },
});
