import { Type } from "../../core/typebox.js";
import { Enum } from "../../core/jobs/enum.js";
import { defineJobType } from "../define.js";

export const COLOR_FORMATS = ["hex", "rgb", "hsl"] as const;

const parameters = Type.Object(
  {
    color_count: Type.Integer({ minimum: 3, maximum: 10, default: 5 }),
    format: Enum(COLOR_FORMATS, { default: "hex" }),
  },
  { additionalProperties: false },
);

export const definition = defineJobType({
  name: "image_colors",
  route: { path: "/jobs/image/colors", summary: "Extract the dominant colours of an image" },
  media: { source: "image", output: null },
  parameters: () => parameters,
  example: {},
  result: {
    name: "ColorsResult",
    schema: Type.Object({ colors: Type.Array(Type.String()), percentages: Type.Array(Type.Number()) }),
  },
  runner: { timeout: "2m", resources: "image", inMemorySource: true },
});
