// AI jobs (image_ai_keywords, analyze) through the whole local stack (API, store, local executor,
// runner processes, embedded S3-protocol store, sharp, ffmpeg) against a local OpenAI-compatible
// provider that checks what it receives (test/support/ai-provider.ts).
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, beforeEach, describe, test } from "node:test";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import type { Job } from "../../core/jobs/records.js";
import { TestAiProvider } from "../support/ai-provider.js";
import { startTestStack, type TestStack } from "../support/api.js";
import { finished, submit } from "../support/jobs.js";
import { makeAudio, makeVideo, removeMediaDirs } from "../support/av.js";
import { makeImage } from "../support/media.js";

async function put(stack: TestStack, key: string, body: Buffer) {
  await stack.services.s3.send(new PutObjectCommand({ Bucket: stack.bucket, Key: key, Body: body }));
}

async function run(stack: TestStack, path: string, body: Record<string, unknown>): Promise<Job> {
  return finished(stack, await submit(stack, path, { source_bucket: stack.bucket, ...body }));
}

interface Keywords {
  keywords: string[];
  confidence_scores: number[];
}

function assertKeywordsShape(result: Keywords, count: number): void {
  assert.equal(result.keywords.length, count);
  assert.equal(result.confidence_scores.length, count);
  assert.equal(new Set(result.keywords.map((k) => k.toLowerCase())).size, count, "keywords are unique");
  for (const [i, score] of result.confidence_scores.entries()) {
    assert.ok(score >= 0 && score <= 1, `score ${score}`);
    if (i > 0) assert.ok(score <= result.confidence_scores[i - 1]!, "scores never increase");
  }
}

const RED = { width: 2000, height: 1500, background: "#d02010", format: "jpeg" as const };
const KEY = "sk-local-secret-key-0123456789";

describe("AI jobs with a configured provider", () => {
  let provider: TestAiProvider;
  let second: TestAiProvider;
  let stack: TestStack;
  before(async () => {
    provider = await TestAiProvider.start({ apiKey: KEY, model: "vision-test", maxImageSide: 512 });
    second = await TestAiProvider.start({ apiKey: "sk-second", model: "second-model" });
    stack = await startTestStack({
      executor: true,
      config: {
        executor: { max_attempts: 1 },
        ai: {
          base_url: provider.baseUrl,
          api_key: KEY,
          model: "vision-test",
          transcription_model: "whisper-test",
          max_image_side: 512,
          // Far above any answer's time, under load too: the provider checks what it receives before
          // it answers (an ffprobe of each upload, a decode of each image), which took over a second
          // at a load average of 10-20, and a request given up is sent again (max_attempts), seen by
          // the provider as one more upload, or answered by the script's next step. The timeout
          // itself is tested on a stack of its own (below).
          timeout: "30s",
          max_attempts: 3,
          retry_initial_delay: "20ms",
          retry_max_delay: "100ms",
          transcription_segment: "10s",
          providers: {
            second: {
              base_url: second.baseUrl,
              api_key: "sk-second",
              model: "second-model",
              structured_output: "json_schema",
            },
          },
        },
      },
    });
    await put(stack, "in/red.jpg", await makeImage(RED));
  });
  beforeEach(() => {
    provider.reset();
    second.reset();
  });
  after(async () => {
    await stack?.close();
    await provider?.close();
    await second?.close();
    removeMediaDirs();
  });

  test("image_ai_keywords: 15 English keywords by default, from the image the provider was sent", async () => {
    const job = await run(stack, "image/ai/keywords", { source_key: "in/red.jpg" });
    assert.equal(job.status, "completed", job.error);
    const result = job.result as unknown as Keywords;
    assertKeywordsShape(result, 15);
    assert.equal(result.keywords[0], "red", "the top keyword names the image's colour");
    assert.ok(result.keywords.every((k) => k === k.toLowerCase()));
    assert.deepEqual(provider.problems, []);

    const [request, ...more] = provider.to("/chat/completions");
    assert.equal(more.length, 0);
    assert.equal(request!.json!.model, "vision-test");
    assert.equal(request!.headers.authorization, `Bearer ${KEY}`);
    const messages = request!.json!.messages as Array<{ role: string }>;
    assert.deepEqual(
      messages.map((m) => m.role),
      ["system", "user"],
    );
    assert.match(request!.text!, /exactly 15 different keywords/);
    assert.match(request!.text!, /in English \(en\)/);
    assert.equal(request!.images.length, 1);
    // 2000x1500 downscaled to ai.max_image_side, aspect kept, as a JPEG.
    assert.deepEqual(request!.images[0], { format: "jpeg", width: 512, height: 384, colour: "red" });
    assert.equal(
      request!.json!.response_format,
      undefined,
      "structured_output prompt sends no response_format",
    );
  });

  test("image_ai_keywords: keyword_count and language; German keeps its capitalised nouns", async () => {
    const job = await run(stack, "image/ai/keywords", {
      source_key: "in/red.jpg",
      keyword_count: 20,
      language: "de",
    });
    assert.equal(job.status, "completed", job.error);
    const result = job.result as unknown as Keywords;
    assertKeywordsShape(result, 20);
    assert.equal(result.keywords[0], "Rot");
    assert.ok(result.keywords.includes("Hintergrund") && result.keywords.includes("einfach"));
    assert.match(provider.to("/chat/completions")[0]!.text!, /in German \(de\)/);
    assert.deepEqual(provider.problems, []);
  });

  test("image_ai_keywords: JSON wrapped in prose and a fence, in another shape, is read", async () => {
    const words = [
      "sunset",
      "Beach",
      "beach",
      "ocean",
      "sky",
      "sand",
      "palm",
      "wave",
      "cloud",
      "horizon",
      "water",
      "summer",
    ];
    provider.script({
      content:
        "<think>The user wants keywords.</think>Sure! Here they are:\n```json\n" +
        JSON.stringify({ keywords: words, confidence_scores: words.map((_, i) => `${95 - i * 5}%`) }) +
        "\n```\nLet me know if you need more.",
    });
    const job = await run(stack, "image/ai/keywords", { source_key: "in/red.jpg", keyword_count: 10 });
    assert.equal(job.status, "completed", job.error);
    const result = job.result as unknown as Keywords;
    assertKeywordsShape(result, 10);
    assert.deepEqual(result.keywords.slice(0, 4), ["sunset", "beach", "ocean", "sky"]);
    assert.deepEqual(result.confidence_scores.slice(0, 3), [0.95, 0.9, 0.8]);
  });

  test("image_ai_keywords: too few keywords → asked again in the same conversation", async () => {
    provider.script({
      content: JSON.stringify({
        keywords: ["one", "two", "two", "three"].map((keyword) => ({ keyword, confidence: 0.5 })),
      }),
    });
    const job = await run(stack, "image/ai/keywords", { source_key: "in/red.jpg", keyword_count: 12 });
    assert.equal(job.status, "completed", job.error);
    assertKeywordsShape(job.result as unknown as Keywords, 12);
    const requests = provider.to("/chat/completions");
    assert.equal(requests.length, 2);
    const followUp = requests[1]!.json!.messages as Array<{ role: string; content: unknown }>;
    assert.deepEqual(
      followUp.map((m) => m.role),
      ["system", "user", "assistant", "user"],
    );
    assert.match(String(followUp[3]!.content), /3 usable keywords.*12 are needed.*one, two, three/s);
  });

  test("image_ai_keywords: garbage every time fails the job, quoting the answer", async () => {
    provider.script(
      { content: "I am sorry, I cannot describe images." },
      { content: "Still no." },
      { content: "Nope, no keywords here." },
    );
    const job = await run(stack, "image/ai/keywords", { source_key: "in/red.jpg" });
    assert.equal(job.status, "failed");
    assert.match(
      job.error!,
      /AI provider "default" \(model vision-test\) did not answer with the JSON asked for, in 3 requests; its last answer: "Nope, no keywords here\."/,
    );
  });

  test("429 with Retry-After and a 500 are retried; the job completes", async () => {
    provider.script(
      { status: 429, headers: { "retry-after": "0" }, body: { error: { message: "Rate limit reached" } } },
      { status: 500, body: { error: { message: "The server had an error" } } },
    );
    const job = await run(stack, "image/ai/keywords", { source_key: "in/red.jpg" });
    assert.equal(job.status, "completed", job.error);
    assert.deepEqual(
      provider.to("/chat/completions").map((r) => r.status),
      [429, 500, 200],
    );
  });

  test("a provider busy past max_attempts fails the job with its last status and message", async () => {
    const busy = { status: 503, body: { error: { message: "Overloaded" } } };
    provider.script(busy, busy, busy);
    const job = await run(stack, "image/ai/keywords", { source_key: "in/red.jpg" });
    assert.equal(job.status, "failed");
    assert.match(job.error!, /AI provider "default" returned 503: Overloaded \(3 attempts\)/);
  });

  test("a slow answer within ai.timeout completes", async () => {
    provider.script({
      delayMs: 300,
      content: JSON.stringify(Array.from({ length: 10 }, (_, i) => ({ word: `w${i}`, score: 0.9 }))),
    });
    const slow = await run(stack, "image/ai/keywords", { source_key: "in/red.jpg", keyword_count: 10 });
    assert.equal(slow.status, "completed", slow.error);
  });

  test("a 200 whose body is not JSON fails at once, naming the base URL to check", async () => {
    provider.script({ status: 200, body: "<html><body>Welcome to nginx!</body></html>" });
    const job = await run(stack, "image/ai/keywords", { source_key: "in/red.jpg" });
    assert.equal(job.status, "failed");
    assert.match(
      job.error!,
      /answered with a body that is not JSON \("<html><body>Welcome to nginx!.*check the base URL http:\/\/127\.0\.0\.1:\d+\/v1/,
    );
    assert.equal(provider.to("/chat/completions").length, 1, "not retried");
  });

  test("analyze an image: text and tags from the provider's JSON, provider and model named", async () => {
    const job = await run(stack, "analyze", { source_key: "in/red.jpg", prompt: "What colour dominates?" });
    assert.equal(job.status, "completed", job.error);
    assert.deepEqual(job.result, {
      provider: "default",
      model: "vision-test",
      text: "An image, mostly red",
      tags: ["red", "still"],
    });
    const [request] = provider.to("/chat/completions");
    assert.match(request!.text!, /What colour dominates\?/);
    assert.equal(request!.images.length, 1);
    assert.deepEqual(provider.problems, []);
  });

  test("analyze a video: max_frames frames sampled evenly, downscaled, in order", async () => {
    const video = await makeVideo({ durationSeconds: 4, width: 1280, height: 720, audio: true });
    await put(stack, "in/clip.mp4", await readFile(video));
    const job = await run(stack, "analyze", { source_key: "in/clip.mp4", max_frames: 4 });
    assert.equal(job.status, "completed", job.error);
    const result = job.result as { text: string; tags: string[]; transcript?: string };
    assert.match(result.text, /^A video of 4 frames/);
    assert.equal(result.transcript, undefined);
    const [request] = provider.to("/chat/completions");
    assert.equal(request!.images.length, 4);
    for (const image of request!.images) assert.deepEqual([image.width, image.height], [512, 288]);
    assert.match(
      request!.text!,
      /4 frames sampled evenly from a video of 00:00:04, in order, at 00:00:00\.500, 00:00:01\.500, 00:00:02\.500, 00:00:03\.500/,
    );
    assert.deepEqual(provider.problems, []);
  });

  test("analyze audio: transcribed in segments (language as ISO-639-1), then analysed", async () => {
    const audio = await makeAudio({ durationSeconds: 25, format: "flac" });
    await put(stack, "in/talk.flac", await readFile(audio));
    const job = await run(stack, "analyze", { source_key: "in/talk.flac", language: "de-AT" });
    assert.equal(job.status, "completed", job.error);
    const uploads = provider.to("/audio/transcriptions");
    assert.equal(uploads.length, 3, "25 s in segments of 10 s");
    for (const upload of uploads) {
      assert.equal(upload.form!.fields.model, "whisper-test");
      assert.equal(upload.form!.fields.language, "de");
      assert.equal(upload.form!.file!.type, "audio/mpeg");
    }
    const seconds = uploads.map((u) => Math.round(u.form!.file!.seconds!));
    assert.deepEqual(seconds, [10, 10, 5]);
    const result = job.result as { text: string; transcript: string; provider: string };
    assert.equal(
      result.transcript,
      uploads
        .map((u) => `A recording of ${u.form!.file!.seconds!.toFixed(1)} seconds of a steady tone.`)
        .join(" "),
    );
    assert.match(result.text, /^Auf Deutsch: A recording: A recording of/);
    assert.match(provider.to("/chat/completions")[0]!.text!, /in Austrian German \(de-AT\)/);
    assert.deepEqual(provider.problems, []);
  });

  test("analyze with a named provider uses it, with its structured output setting", async () => {
    const job = await run(stack, "analyze", { source_key: "in/red.jpg", provider: "second" });
    assert.equal(job.status, "completed", job.error);
    assert.equal((job.result as { provider: string }).provider, "second");
    assert.equal((job.result as { model: string }).model, "second-model");
    assert.equal(provider.requests.length, 0);
    const [request] = second.to("/chat/completions");
    assert.equal((request!.json!.response_format as { type: string }).type, "json_schema");
    assert.deepEqual(second.problems, []);
  });

  test("analyze naming an unknown provider is refused at submit", async () => {
    const res = await stack.request("/api/v1/jobs/analyze", {
      method: "POST",
      json: { source_bucket: stack.bucket, source_key: "in/red.jpg", provider: "nope" },
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: string };
    assert.match(body.error, /^provider must name a configured AI provider \(default, second\); got nope$/);
  });

  test("analyze of a file that is no media fails clearly", async () => {
    await put(stack, "in/notes.txt", Buffer.from("just some text\n".repeat(50)));
    const job = await run(stack, "analyze", { source_key: "in/notes.txt" });
    assert.equal(job.status, "failed");
    assert.match(job.error!, /^source is not an image, a video or audio/);
    assert.equal(provider.requests.length, 0);
  });

  test("/health probes the providers (AI is optional: healthy)", async () => {
    const res = await stack.request("/health");
    const body = (await res.json()) as { status: string; dependencies: Record<string, { status: string }> };
    assert.equal(body.dependencies.ai_provider!.status, "healthy");
    assert.equal(body.status, "healthy");
    assert.equal(provider.to("/models").length, 1);
    assert.equal(second.to("/models").length, 1);
  });
});

describe("AI jobs with a misconfigured, unreachable or missing provider", () => {
  let provider: TestAiProvider;
  const stacks: TestStack[] = [];
  before(async () => {
    provider = await TestAiProvider.start({ apiKey: "sk-right" });
  });
  after(async () => {
    for (const s of stacks) await s.close();
    await provider?.close();
  });
  const stackWith = async (ai: Record<string, unknown> | undefined) => {
    const stack = await startTestStack({
      executor: true,
      config: { executor: { max_attempts: 1 }, ...(ai ? { ai } : {}) },
    });
    stacks.push(stack);
    await put(stack, "in/red.jpg", await makeImage(RED));
    return stack;
  };

  test("a wrong key fails with the setting to check, and the key is in no error or log", async () => {
    const wrong = "sk-wrong-key-9876543210";
    const stack = await stackWith({
      base_url: provider.baseUrl,
      api_key: wrong,
      model: "vision-test",
      retry_initial_delay: "10ms",
    });
    const job = await run(stack, "image/ai/keywords", { source_key: "in/red.jpg" });
    assert.equal(job.status, "failed");
    assert.match(
      job.error!,
      /^AI provider "default" returned 401: check AI_API_KEY: Incorrect API key provided/,
    );
    assert.ok(!job.error!.includes(wrong));
    assert.equal(provider.to("/chat/completions").length, 1, "a 401 is not retried");
    assert.ok(!JSON.stringify(stack.logs).includes(wrong));
    const health = (await (await stack.request("/health")).json()) as {
      status: string;
      dependencies: Record<string, { status: string; error?: string }>;
    };
    assert.equal(health.dependencies.ai_provider!.status, "unhealthy");
    assert.match(health.dependencies.ai_provider!.error!, /returned 401: check AI_API_KEY/);
    assert.equal(health.status, "degraded", "the AI provider is not critical");
  });

  test("an unknown model fails naming the model and the base URL", async () => {
    const stack = await stackWith({
      base_url: provider.baseUrl,
      api_key: "sk-right",
      model: "no-such-model",
    });
    const job = await run(stack, "analyze", { source_key: "in/red.jpg" });
    assert.equal(job.status, "failed");
    assert.match(
      job.error!,
      /returned 404 for POST \/chat\/completions: check the model "no-such-model" and the base URL http:\/\/127\.0\.0\.1:\d+\/v1: The model `no-such-model` does not exist/,
    );
  });

  test("a provider that is down fails the job saying it cannot be reached", async () => {
    const down = await TestAiProvider.start();
    const url = down.baseUrl;
    await down.close();
    const stack = await stackWith({
      base_url: url,
      model: "m",
      max_attempts: 2,
      retry_initial_delay: "10ms",
    });
    const job = await run(stack, "image/ai/keywords", { source_key: "in/red.jpg" });
    assert.equal(job.status, "failed");
    assert.match(
      job.error!,
      new RegExp(
        `AI provider "default" cannot be reached at ${url.replace(/[./]/g, "\\$&")}: ECONNREFUSED \\(2 attempts\\)`,
      ),
    );
  });

  test("without a provider: jobs fail saying how to configure one; /health says not_configured, healthy", async () => {
    const stack = await stackWith(undefined);
    for (const [path, type] of [
      ["image/ai/keywords", "image_ai_keywords"],
      ["analyze", "analyze"],
    ] as const) {
      const job = await run(stack, path, { source_key: "in/red.jpg" });
      assert.equal(job.status, "failed");
      assert.equal(
        job.error,
        `${type} needs an AI provider: no AI provider is configured: set AI_BASE_URL, AI_MODEL and AI_API_KEY (or ai.providers in the configuration file)`,
      );
    }
    const health = (await (await stack.request("/health")).json()) as {
      status: string;
      dependencies: Record<string, { status: string }>;
    };
    assert.equal(health.dependencies.ai_provider!.status, "not_configured");
    assert.equal(health.status, "healthy");
    const ready = await stack.request("/health/ready");
    assert.equal(ready.status, 200);
  });

  test("an answer slower than ai.timeout is given up, each attempt", async () => {
    const stack = await stackWith({
      base_url: provider.baseUrl,
      api_key: "sk-right",
      model: "vision-test",
      timeout: "1s",
      max_attempts: 3,
      retry_initial_delay: "20ms",
      retry_max_delay: "100ms",
    });
    provider.reset();
    provider.script({ delayMs: 3000 }, { delayMs: 3000 }, { delayMs: 3000 });
    const job = await run(stack, "image/ai/keywords", { source_key: "in/red.jpg" });
    assert.equal(job.status, "failed");
    assert.match(job.error!, /AI provider "default" did not answer within 1 s \(3 attempts\)/);
    assert.equal(provider.to("/chat/completions").length, 3);
  });
});
