import { Type } from "../../core/typebox.js";
import { defineJobType } from "../define.js";

export const definition = defineJobType({
  name: "image_metadata",
  route: { path: "/jobs/image/metadata", summary: "Read an image's metadata" },
  media: { source: "image", output: null },
  parameters: () => Type.Object({}, { additionalProperties: false }),
  example: {},
  result: {
    name: "MetadataResult",
    schema: Type.Object({
      width: Type.Integer({ description: "Width in pixels as displayed (EXIF orientation applied)" }),
      height: Type.Integer({ description: "Height in pixels as displayed (EXIF orientation applied)" }),
      format: Type.String({ description: "jpeg, png, webp, avif, heic, gif or tiff" }),
      size: Type.Integer({ description: "The source's size in bytes" }),
      orientation: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: 8,
          description: "EXIF orientation (1-8), when the image has one",
        }),
      ),
      color_space: Type.String({
        description: "The pixels' colour space as libvips names it: srgb, b-w, cmyk, rgb16, grey16, …",
      }),
      has_alpha: Type.Boolean({ description: "Whether the image has an alpha (transparency) channel" }),
      icc_profile: Type.Optional(
        Type.Object(
          {
            description: Type.Optional(
              Type.String({ description: "The profile's name, e.g. sRGB IEC61966-2.1" }),
            ),
            color_space: Type.Optional(
              Type.String({ description: "The profile's colour space: RGB, CMYK, GRAY, …" }),
            ),
            version: Type.Optional(Type.String({ description: "The ICC version of the profile, e.g. 4.3" })),
          },
          { description: "The embedded ICC profile, when there is one" },
        ),
      ),
      exif: Type.Optional(
        Type.Object(
          {
            make: Type.Optional(Type.String({ description: "Camera make" })),
            model: Type.Optional(Type.String({ description: "Camera model" })),
            date_taken: Type.Optional(
              Type.String({
                description:
                  "When the picture was taken (DateTimeOriginal, else DateTime): YYYY-MM-DDTHH:MM:SS, the camera's clock, with its offset when the image says it",
              }),
            ),
            gps: Type.Boolean({ description: "Whether the image holds a GPS position" }),
          },
          { description: "Fields of the EXIF block, when there is one" },
        ),
      ),
    }),
  },
  runner: { timeout: "2m", resources: "image", inMemorySource: true },
});
