import { Type } from "../../core/typebox.js";
import { ImageOutputResult } from "../../core/jobs/fields.js";
import { Enum } from "../../core/jobs/enum.js";
import { ERROR_MESSAGE } from "../../core/jobs/patterns.js";
import { defineJobType } from "../define.js";

export const WATERMARK_POSITIONS = [
  "top-left",
  "top-right",
  "bottom-left",
  "bottom-right",
  "center",
] as const;

const parameters = Type.Object(
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

export const definition = defineJobType({
  name: "image_watermark",
  route: { path: "/jobs/image/watermark", summary: "Watermark an image with text or an image" },
  media: { source: "image", output: "image" },
  parameters: () => parameters,
  example: { watermark_text: "mark" },
  result: { name: "ImageOutputResult", schema: ImageOutputResult },
  runner: { timeout: "2m", resources: "image", inMemorySource: true },
});
