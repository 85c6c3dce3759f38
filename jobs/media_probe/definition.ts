import { Type, type Static } from "../../core/typebox.js";
import { Enum } from "../../core/jobs/enum.js";
import { defineJobType } from "../define.js";

const Stream = Type.Object({
  index: Type.Integer({ description: "The stream's index in the file" }),
  kind: Enum(["video", "audio", "subtitle", "data"] as const, {
    description: "What the stream carries (attachments such as fonts are data)",
  }),
  codec: Type.Optional(
    Type.String({ description: "ffprobe's codec name: h264, hevc, vp9, av1, aac, opus, …" }),
  ),
  profile: Type.Optional(Type.String({ description: "The codec's profile: High, Main 10, LC, …" })),
  width: Type.Optional(Type.Integer({ description: "video: coded width in pixels, before rotation" })),
  height: Type.Optional(Type.Integer({ description: "video: coded height in pixels, before rotation" })),
  display_aspect_ratio: Type.Optional(Type.String({ description: "video: the shape shown, e.g. 16:9" })),
  rotation: Type.Optional(
    Type.Integer({
      description:
        "video: degrees clockwise a player turns the picture (0, 90, 180, 270), from the display matrix or the older rotate tag",
    }),
  ),
  frame_rate: Type.Optional(
    Type.Number({ description: "video: frames per second, average (30000/1001 → 29.97)" }),
  ),
  pixel_format: Type.Optional(Type.String({ description: "video: yuv420p, yuv420p10le, …" })),
  bit_depth: Type.Optional(
    Type.Integer({ description: "Bits per sample: from the stream, else its pixel format (video)" }),
  ),
  color_transfer: Type.Optional(
    Type.String({
      description: "video: transfer characteristics: bt709, smpte2084 (PQ), arib-std-b67 (HLG), …",
    }),
  ),
  channels: Type.Optional(Type.Integer({ description: "audio: channel count" })),
  channel_layout: Type.Optional(Type.String({ description: "audio: mono, stereo, 5.1, …" })),
  sample_rate: Type.Optional(Type.Integer({ description: "audio: samples per second" })),
  language: Type.Optional(
    Type.String({ description: "The stream's language tag (eng, fra, …), unless undetermined" }),
  ),
  bit_rate: Type.Optional(Type.Integer({ description: "Bits per second, when the file says" })),
});

/** What media_probe answers: the file, and each of its streams. */
export const ProbeResult = Type.Object({
  container: Type.String({
    description:
      "ffprobe's name for the container's format: mov,mp4,m4a,3gp,3g2,mj2, matroska,webm, mp3, wav, …",
  }),
  duration: Type.Optional(Type.Number({ description: "Seconds, when the file says" })),
  size: Type.Optional(Type.Integer({ description: "The source's size in bytes" })),
  bit_rate: Type.Optional(Type.Integer({ description: "Bits per second over the whole file" })),
  streams: Type.Array(Stream, {
    description: "Every stream, in the file's order; a fact the file does not give is left out",
  }),
});
export type ProbeResult = Static<typeof ProbeResult>;
export type ProbeStream = Static<typeof Stream>;

export const definition = defineJobType({
  name: "media_probe",
  route: { path: "/jobs/media/probe", summary: "Read what a video or audio file holds" },
  media: { source: "any", output: null },
  parameters: () => Type.Object({}, { additionalProperties: false }),
  example: {},
  result: { name: "ProbeResult", schema: ProbeResult },
  runner: { timeout: "2m", resources: "media", inMemorySource: false },
});
