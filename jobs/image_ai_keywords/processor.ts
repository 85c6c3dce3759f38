// image_ai_keywords: keywords of an image from the configured AI provider, with confidences.
//
// Pipeline: open and check the image (pixel limit) → JPEG data URL downscaled to ai.max_image_side →
// one chat completion asking for exactly keyword_count keywords in the job's language, as JSON →
// read tolerantly (keywords.ts) → if fewer than keyword_count usable ones (duplicates, no
// confidence, no JSON), ask again in the same conversation, up to MAX_REQUESTS in all → the
// keyword_count most confident, de-duplicated, most confident first (so confidence_scores never
// increase). A provider that never gives enough fails the job, saying what it gave.
import { withDefaults } from "../../core/jobs/parameters.js";
import type { ChatMessage } from "../../core/ai/client.js";
import { extractJson } from "../../core/ai/json-answer.js";
import { PermanentError } from "../../runner/errors.js";
import { openImage } from "../../runner/image/open.js";
import type { Processor } from "../../runner/processor.js";
import { bestKeywords, mergeKeywords, readKeywords, type ScoredKeyword } from "../../runner/ai/keywords.js";
import { imageDataUrl } from "../../runner/ai/media-input.js";
import { askProvider, providerClient, responseFormatFor } from "../../runner/ai/provider.js";
import {
  KEYWORDS_SCHEMA,
  keywordsFollowUp,
  keywordsPrompt,
  keywordsSystemPrompt,
} from "../../runner/ai/prompts.js";

/** Requests per job: the first and up to two follow-ups. */
export const MAX_REQUESTS = 3;

export const imageAiKeywords: Processor = async (ctx) => {
  const { keyword_count: count, language } = withDefaults("image_ai_keywords", ctx.job.parameters);
  const client = providerClient(ctx);
  const { provider } = client;

  const source = await openImage(ctx.sourceBuffer ?? ctx.sourcePath, {
    maxInputPixels: ctx.limits.maxInputPixels,
    signal: ctx.signal,
  });
  const image = await imageDataUrl(source, ctx.config.ai.maxImageSide);
  ctx.progress(20, "image prepared");

  const responseFormat = responseFormatFor(provider, "keywords", KEYWORDS_SCHEMA);
  const messages: ChatMessage[] = [
    { role: "system", content: keywordsSystemPrompt() },
    {
      role: "user",
      content: [
        { type: "text", text: keywordsPrompt(count, language) },
        { type: "image_url", image_url: { url: image } },
      ],
    },
  ];
  const found = new Map<string, ScoredKeyword>();
  let lastAnswer = "";
  let sawJson = false;
  for (let request = 1; request <= MAX_REQUESTS; request++) {
    const answer = await askProvider(() =>
      client.chat({ messages, temperature: 0.2, responseFormat }, ctx.signal),
    );
    lastAnswer = answer.content;
    const json = extractJson(answer.content);
    sawJson ||= json !== undefined;
    mergeKeywords(found, json === undefined ? [] : readKeywords(json, language), language);
    ctx.progress(20 + (70 * request) / MAX_REQUESTS, `${found.size} keywords`);
    if (found.size >= count) break;
    if (request < MAX_REQUESTS) {
      const have = bestKeywords(found, count).map((k) => k.keyword);
      messages.push(
        { role: "assistant", content: answer.content },
        { role: "user", content: keywordsFollowUp(count, have, language, json !== undefined) },
      );
      ctx.logger.info(
        { provider: provider.name, keywords: found.size, wanted: count, request },
        "AI answer had too few usable keywords; asking again",
      );
    }
  }
  if (found.size < count) {
    const said = JSON.stringify(lastAnswer.length > 160 ? `${lastAnswer.slice(0, 159)}…` : lastAnswer);
    throw new PermanentError(
      sawJson
        ? `AI provider "${provider.name}" (model ${provider.model}) gave ${found.size} usable keywords (distinct, with a confidence) of the ${count} asked, in ${MAX_REQUESTS} requests; its last answer: ${said}`
        : `AI provider "${provider.name}" (model ${provider.model}) did not answer with the JSON asked for, in ${MAX_REQUESTS} requests; its last answer: ${said}`,
    );
  }
  const best = bestKeywords(found, count);
  return {
    result: { keywords: best.map((k) => k.keyword), confidence_scores: best.map((k) => k.confidence) },
  };
};

export default imageAiKeywords;
