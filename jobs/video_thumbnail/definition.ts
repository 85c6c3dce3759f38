import { Type } from "../../core/typebox.js";
import { Dimension, Dimensions } from "../../core/jobs/fields.js";
import { Enum } from "../../core/jobs/enum.js";
import { ERROR_MESSAGE } from "../../core/jobs/patterns.js";
import { MAX_TIMESTAMP_SECONDS, TIMESTAMP_PATTERN } from "../../core/jobs/timestamp.js";
import { defineJobType } from "../define.js";

export const THUMBNAIL_FORMATS = ["jpeg", "png", "webp"] as const;

const MAX_TIMESTAMP = `${MAX_TIMESTAMP_SECONDS / 3600}:00:00 (${MAX_TIMESTAMP_SECONDS} seconds)`;

export const definition = defineJobType({
  name: "video_thumbnail",
  route: { path: "/jobs/video/thumbnail", summary: "Extract a thumbnail from a video" },
  media: { source: "video", output: "image" },
  parameters: (bounds) =>
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
    ),
  example: { timestamp: "00:00:01" },
  result: {
    name: "ThumbnailResult",
    schema: Type.Object({
      output_url: Type.String(),
      file_size: Type.Integer(),
      timestamp: Type.String(),
      metadata: Type.Object(Dimensions),
    }),
  },
  runner: { timeout: "5m", resources: "media", inMemorySource: false },
});
