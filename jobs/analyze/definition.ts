import { Type } from "../../core/typebox.js";
import type { SchemaBounds } from "../../core/jobs/bounds.js";
import { Language } from "../../core/jobs/fields.js";
import { Enum } from "../../core/jobs/enum.js";
import { ERROR_MESSAGE } from "../../core/jobs/patterns.js";
import { defineJobType } from "../define.js";

/** analyze's `provider`: one of the configured providers' names (none configured: no value is). */
const Provider = (bounds: SchemaBounds) => {
  const description = "A configured AI provider by name (ai.providers); default: ai.default_provider";
  return Type.Optional(
    bounds.aiProviders.length > 0
      ? Enum(bounds.aiProviders, {
          description,
          [ERROR_MESSAGE]: `must name a configured AI provider (${bounds.aiProviders.join(", ")}); got {value}`,
        })
      : Type.String({
          not: {},
          description: `${description}. No provider is configured: analyze jobs cannot name one`,
          [ERROR_MESSAGE]: "names no configured AI provider: none is configured",
        }),
  );
};

export const definition = defineJobType({
  name: "analyze",
  route: { path: "/jobs/analyze", summary: "Analyze media with an AI provider" },
  media: { source: "any", output: null },
  parameters: (bounds) =>
    Type.Object(
      {
        prompt: Type.Optional(
          Type.String({
            minLength: 1,
            maxLength: 4000,
            description:
              "What to ask about the media; default: a description (images, video) or a summary (audio)",
          }),
        ),
        provider: Provider(bounds),
        max_frames: Type.Integer({
          minimum: 1,
          maximum: 32,
          default: 8,
          description: "Frames sampled from a video",
        }),
        language: Language("Language of the answer"),
      },
      { additionalProperties: false },
    ),
  example: {},
  result: {
    name: "AnalyzeResult",
    schema: Type.Object({
      provider: Type.String({ description: "The provider's configured name" }),
      model: Type.String({ description: "The model that answered, as the provider names it" }),
      text: Type.String({ description: "The model's answer to the prompt" }),
      tags: Type.Optional(Type.Array(Type.String(), { description: "Short tags describing the media" })),
      transcript: Type.Optional(
        Type.String({ description: "Audio: the transcription the answer is based on" }),
      ),
    }),
  },
  runner: { timeout: "10m", resources: "ai", inMemorySource: false, ai: true },
});
