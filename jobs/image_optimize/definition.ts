import { Type } from "../../core/typebox.js";
import { IMAGE_FORMATS, ImageOutputResult } from "../../core/jobs/fields.js";
import { Enum } from "../../core/jobs/enum.js";
import { defineJobType } from "../define.js";

const parameters = Type.Object(
  {
    format: Type.Optional(Enum(IMAGE_FORMATS, { description: "Output format; default: the source's" })),
    quality: Type.Integer({ minimum: 1, maximum: 100, default: 80 }),
    strip_metadata: Type.Boolean({ default: false, description: "Remove EXIF, ICC and XMP metadata" }),
  },
  { additionalProperties: false },
);

export const definition = defineJobType({
  name: "image_optimize",
  route: { path: "/jobs/image/optimize", summary: "Optimize (recompress) an image" },
  media: { source: "image", output: "image" },
  parameters: () => parameters,
  example: {},
  result: { name: "ImageOutputResult", schema: ImageOutputResult },
  runner: { timeout: "2m", resources: "image", inMemorySource: true },
});
