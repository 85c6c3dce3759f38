// What the models are asked. Every prompt names the answer's language as "<Name> (<code>)" and the
// JSON shape wanted; the answers are read tolerantly (core/ai/json-answer.ts).

const LANGUAGE_NAMES = new Intl.DisplayNames(["en"], { type: "language", fallback: "code" });

/** "German (de)", "Brazilian Portuguese (pt-BR)"; the code alone when ICU does not know it. */
export function languageName(code: string): string {
  let name: string | undefined;
  try {
    name = LANGUAGE_NAMES.of(code);
  } catch {
    name = undefined;
  }
  return name && name.toLowerCase() !== code.toLowerCase()
    ? `${name} (${code})`
    : `the language ${code} (${code})`;
}

/** ISO-639-1 code for transcription APIs (they take `de`, not `de-AT`); undefined when there is none. */
export function transcriptionLanguage(code: string): string | undefined {
  const primary = code.split("-")[0]!.toLowerCase();
  return primary.length === 2 ? primary : undefined;
}

export const KEYWORDS_SCHEMA = {
  type: "object",
  properties: {
    keywords: {
      type: "array",
      items: {
        type: "object",
        properties: { keyword: { type: "string" }, confidence: { type: "number" } },
        required: ["keyword", "confidence"],
        additionalProperties: false,
      },
    },
  },
  required: ["keywords"],
  additionalProperties: false,
} as const;

export function keywordsSystemPrompt(): string {
  return (
    "You are an image tagging service. You look at one image and answer with JSON only, no prose, " +
    'in exactly this shape: {"keywords": [{"keyword": "<keyword>", "confidence": <number from 0 to 1>}]}.'
  );
}

export function keywordsPrompt(count: number, language: string): string {
  return (
    `List exactly ${count} different keywords that describe this image: its subjects, objects, setting, ` +
    `colours, style and mood. Write every keyword in ${languageName(language)}, each a single word or a ` +
    "short phrase, without numbering or hashtags. Give each a confidence from 0 to 1 of how clearly the " +
    "image shows it, and order them from the most to the least confident."
  );
}

export function keywordsFollowUp(count: number, have: string[], language: string, hadJson: boolean): string {
  const problem = hadJson
    ? `That gave ${have.length} usable keywords with a confidence, and ${count} are needed.`
    : "That answer was not the JSON asked for.";
  const known = have.length > 0 ? ` Keep these and add new, different ones: ${have.join(", ")}.` : "";
  return (
    `${problem}${known} Answer again with exactly ${count} different keywords in ${languageName(language)}, ` +
    'each with its confidence, as JSON only: {"keywords": [{"keyword": "<keyword>", "confidence": <0 to 1>}]}.'
  );
}

export const ANALYSIS_SCHEMA = {
  type: "object",
  properties: { text: { type: "string" }, tags: { type: "array", items: { type: "string" } } },
  required: ["text", "tags"],
  additionalProperties: false,
} as const;

export function analysisSystemPrompt(language: string): string {
  return (
    "You analyse media for a media processing service. Answer the request about the media you are given. " +
    `Write in ${languageName(language)}. Answer with JSON only, in this shape: ` +
    '{"text": "<your answer>", "tags": ["<short tag>", ...]} with 3 to 10 tags that describe the media.'
  );
}

export type MediaKind = "image" | "video" | "audio";

export const DEFAULT_ANALYSIS_PROMPTS: Record<MediaKind, string> = {
  image: "Describe this image: what it shows, its setting and notable details, and any text in it.",
  video: "Describe this video: what it shows and what happens in it.",
  audio: "Summarize this recording: what it is and what is said in it.",
};
