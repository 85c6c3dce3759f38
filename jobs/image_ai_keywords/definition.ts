import { Type } from "../../core/typebox.js";
import { Language } from "../../core/jobs/fields.js";
import { defineJobType } from "../define.js";

const parameters = Type.Object(
  {
    keyword_count: Type.Integer({ minimum: 10, maximum: 20, default: 15 }),
    language: Language("Language code (BCP 47) of the keywords"),
  },
  { additionalProperties: false },
);

export const definition = defineJobType({
  name: "image_ai_keywords",
  route: { path: "/jobs/image/ai/keywords", summary: "Generate keywords for an image with AI" },
  media: { source: "image", output: null },
  parameters: () => parameters,
  example: {},
  result: {
    name: "KeywordsResult",
    schema: Type.Object({
      keywords: Type.Array(Type.String(), {
        description: "keyword_count distinct keywords, most confident first",
      }),
      confidence_scores: Type.Array(Type.Number({ minimum: 0, maximum: 1 }), {
        description: "Each keyword's confidence (0-1), same order, never increasing",
      }),
    }),
  },
  runner: { timeout: "5m", resources: "ai", inMemorySource: true, ai: true },
});
