// analyze: media sent to the configured AI provider with a prompt; the model's answer as text and
// tags.
//
// What the source is decides what is sent (sharp reads the header first, then ffprobe):
// - an image: one JPEG data URL, downscaled to ai.max_image_side;
// - a video: max_frames frames sampled evenly (media-input.ts), in order, with their times;
// - audio: transcribed in segments of ai.transcription_segment (POST /audio/transcriptions), then
//   the transcript is sent with the prompt; the result carries the transcript too.
// The prompt defaults to a description (or summary) of the media. The model is asked for JSON
// {text, tags}; a model that answers in prose gets its prose as `text` and no tags, since prose is a
// valid answer to a prompt. An empty answer fails the job.
import { mkdir, readFile, stat } from "node:fs/promises";
import { basename, join } from "node:path";
import { withDefaults } from "../../core/jobs/parameters.js";
import type { ChatMessage, ContentPart } from "../../core/ai/client.js";
import { extractJson, stripReasoning } from "../../core/ai/json-answer.js";
import { PermanentError } from "../../runner/errors.js";
import { DECODED_FORMATS, openImage } from "../../runner/image/open.js";
import { sharp } from "../../runner/image/settings.js";
import {
  checkAudio,
  checkVideo,
  NOT_MEDIA_FORMATS,
  probeFile,
  ProbeError,
  REFERENCE_FORMATS,
  type MediaInfo,
} from "../../runner/av/probe.js";
import { formatTimestamp } from "../../runner/av/timestamp.js";
import type { Processor, ProcessContext } from "../../runner/processor.js";
import { audioSegments, imageDataUrl, sampleFrames } from "../../runner/ai/media-input.js";
import { askProvider, providerClient, responseFormatFor } from "../../runner/ai/provider.js";
import {
  ANALYSIS_SCHEMA,
  analysisSystemPrompt,
  DEFAULT_ANALYSIS_PROMPTS,
  transcriptionLanguage,
  type MediaKind,
} from "../../runner/ai/prompts.js";

const MAX_TAGS = 20;

export const analyze: Processor = async (ctx) => {
  const parameters = withDefaults("analyze", ctx.job.parameters);
  const { language } = parameters;
  const client = providerClient(ctx);
  const { provider } = client;
  const media = await mediaKind(ctx);
  const prompt = parameters.prompt ?? DEFAULT_ANALYSIS_PROMPTS[media.kind];
  const maxSide = ctx.config.ai.maxImageSide;

  let content: ContentPart[];
  let transcript: string | undefined;
  if (media.kind === "image") {
    const source = await openImage(ctx.sourcePath, {
      maxInputPixels: ctx.limits.maxInputPixels,
      signal: ctx.signal,
    });
    const url = await imageDataUrl(source, maxSide);
    content = [
      { type: "text", text: prompt },
      { type: "image_url", image_url: { url } },
    ];
    ctx.progress(30, "image prepared");
  } else if (media.kind === "video") {
    const { info } = media;
    const count = parameters.max_frames;
    const dir = join(ctx.scratchDir, "frames");
    await mkdir(dir, { recursive: true });
    const frames = await sampleFrames(ctx.sourcePath, info, {
      count,
      maxSide,
      maxPixels: ctx.limits.maxInputPixels,
      dir,
      signal: ctx.signal,
      onFrame: (done) => ctx.progress(5 + (35 * done) / count, `${done} of ${count} frames`),
    });
    const length = info.duration ? ` of ${formatTimestamp(info.duration)}` : "";
    const times = frames.map((f) => formatTimestamp(f.time)).join(", ");
    content = [
      {
        type: "text",
        text: `These are ${frames.length} frames sampled evenly from a video${length}, in order, at ${times}.\n\n${prompt}`,
      },
      ...frames.map((f): ContentPart => ({ type: "image_url", image_url: { url: f.url } })),
    ];
  } else {
    transcript = await transcribe(ctx, client, media.info, language);
    content = [
      {
        type: "text",
        text: `Transcript of the recording:\n"""\n${transcript || "(no speech)"}\n"""\n\n${prompt}`,
      },
    ];
  }

  const responseFormat = responseFormatFor(provider, "analysis", ANALYSIS_SCHEMA);
  const messages: ChatMessage[] = [
    { role: "system", content: analysisSystemPrompt(language) },
    { role: "user", content },
  ];
  ctx.progress(70, "asking the model");
  const answer = await askProvider(() => client.chat({ messages, responseFormat }, ctx.signal));
  const { text, tags } = readAnalysis(answer.content);
  if (!text) {
    throw new PermanentError(
      `AI provider "${provider.name}" (model ${answer.model}) answered with an empty message`,
    );
  }
  return {
    result: {
      provider: provider.name,
      model: answer.model,
      text,
      ...(tags.length > 0 ? { tags } : {}),
      ...(transcript !== undefined ? { transcript } : {}),
    },
  };
};

/** Image if sharp reads its header as a format we decode; else what ffprobe finds in it. */
async function mediaKind(
  ctx: ProcessContext,
): Promise<{ kind: "image" } | { kind: Exclude<MediaKind, "image">; info: MediaInfo }> {
  const format = await sharp(ctx.sourcePath, { limitInputPixels: false })
    .metadata()
    .then((m) => m.format as string)
    .catch(() => undefined);
  if (format && DECODED_FORMATS.has(format)) return { kind: "image" };
  const neither = "source is not an image, a video or audio";
  if ((await stat(ctx.sourcePath)).size === 0) throw new PermanentError(`${neither}: the file is empty`);
  let info: MediaInfo;
  try {
    info = await probeFile(ctx.sourcePath, { signal: ctx.signal });
  } catch (err) {
    if (err instanceof ProbeError) throw new PermanentError(`${neither} that can be decoded: ${err.reason}`);
    throw err;
  }
  if (NOT_MEDIA_FORMATS.has(info.formatName) || REFERENCE_FORMATS.has(info.formatName)) {
    throw new PermanentError(`${neither} (ffprobe reads it as ${info.formatName})`);
  }
  await checkVideo(ctx.sourcePath, info, { signal: ctx.signal, maxInputPixels: ctx.limits.maxInputPixels });
  if (info.video) return { kind: "video", info };
  if (info.audio) {
    await checkAudio(ctx.sourcePath, info);
    return { kind: "audio", info };
  }
  throw new PermanentError(`${neither}: it holds no image, video or audio stream`);
}

async function transcribe(
  ctx: ProcessContext,
  client: ReturnType<typeof providerClient>,
  info: MediaInfo,
  language: string,
): Promise<string> {
  const dir = join(ctx.scratchDir, "segments");
  await mkdir(dir, { recursive: true });
  const segments = await audioSegments(ctx.sourcePath, info, {
    segmentSeconds: Math.round(ctx.config.ai.transcriptionSegmentMs / 1000),
    dir,
    signal: ctx.signal,
    onProgress: (f) => ctx.progress(5 + 15 * f, "audio prepared"),
  });
  const code = transcriptionLanguage(language);
  const parts: string[] = [];
  for (const [i, segment] of segments.entries()) {
    const data = await readFile(segment);
    const text = await askProvider(() =>
      client.transcribe(
        { data, filename: basename(segment), contentType: "audio/mpeg", ...(code ? { language: code } : {}) },
        ctx.signal,
      ),
    );
    if (text) parts.push(text);
    ctx.progress(
      20 + (45 * (i + 1)) / segments.length,
      `${i + 1} of ${segments.length} audio segments transcribed`,
    );
  }
  return parts.join(" ");
}

/** {text, tags} from the answer's JSON; prose as it is. */
export function readAnalysis(content: string): { text: string; tags: string[] } {
  const json = extractJson(content) as Record<string, unknown> | undefined;
  if (json && !Array.isArray(json)) {
    const text = ["text", "answer", "description", "summary", "response"]
      .map((f) => json[f])
      .find((v): v is string => typeof v === "string" && v.trim().length > 0);
    if (text !== undefined) return { text: text.trim(), tags: readTags(json.tags ?? json.keywords) };
  }
  return { text: stripReasoning(content), tags: [] };
}

function readTags(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  const seen = new Set<string>();
  const tags: string[] = [];
  for (const item of value) {
    const tag = typeof item === "string" ? item.replace(/^#/, "").replace(/\s+/g, " ").trim() : "";
    if (!tag || tag.length > 100 || seen.has(tag.toLowerCase())) continue;
    seen.add(tag.toLowerCase());
    tags.push(tag);
    if (tags.length === MAX_TAGS) break;
  }
  return tags;
}

export default analyze;
