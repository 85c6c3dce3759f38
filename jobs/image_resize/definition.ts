import { Type } from "../../core/typebox.js";
import { Dimension, IMAGE_FORMATS, ImageOutputResult } from "../../core/jobs/fields.js";
import { Enum } from "../../core/jobs/enum.js";
import { defineJobType } from "../define.js";

export const FIT_MODES = ["cover", "contain", "fill", "inside", "outside"] as const;

export const definition = defineJobType({
  name: "image_resize",
  route: { path: "/jobs/image/resize", summary: "Resize an image" },
  media: { source: "image", output: "image" },
  parameters: (bounds) =>
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
    ),
  example: { width: 50, height: 50 },
  result: { name: "ImageOutputResult", schema: ImageOutputResult },
  runner: { timeout: "2m", resources: "image", inMemorySource: true },
});
