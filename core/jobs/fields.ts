// Pieces of the job types' schemas that several types share (jobs/<type>/definition.ts): pure, with
// no import of the configuration.
import { Type } from "../typebox.js";
import type { SchemaBounds } from "./bounds.js";
import { ERROR_MESSAGE } from "./patterns.js";

export const IMAGE_FORMATS = ["jpeg", "png", "webp", "avif"] as const;

/** Output pixels: 1 to limits.max_output_dimension. */
export const Dimension = (bounds: SchemaBounds, description: string) =>
  Type.Integer({
    minimum: 1,
    maximum: bounds.maxOutputDimension,
    description: `${description}; at most ${bounds.maxOutputDimension} (limits.max_output_dimension)`,
    [ERROR_MESSAGE]: {
      maximum: `must be at most ${bounds.maxOutputDimension} pixels (limits.max_output_dimension)`,
    },
  });

/** A BCP 47 language code, `en` by default. */
export const Language = (description: string) =>
  Type.String({ pattern: "^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*$", default: "en", description });

/** Width and height in pixels, in results. */
export const Dimensions = {
  width: Type.Integer(),
  height: Type.Integer(),
};

/** The result of the types that write an image. */
export const ImageOutputResult = Type.Object({
  output_url: Type.String(),
  file_size: Type.Integer(),
  duration: Type.Number({ description: "Processing time in seconds" }),
  metadata: Type.Object({ ...Dimensions, format: Type.String() }),
});
