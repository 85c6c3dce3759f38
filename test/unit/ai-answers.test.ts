import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { extractJson } from "../../core/ai/json-answer.js";
import { chooseProvider } from "../../core/ai/providers.js";
import { loadConfig, type Config } from "../../core/config/load.js";
import {
  bestKeywords,
  cleanKeyword,
  mergeKeywords,
  readKeywords,
  type ScoredKeyword,
} from "../../runner/ai/keywords.js";
import { languageName, transcriptionLanguage } from "../../runner/ai/prompts.js";
import { readAnalysis } from "../../jobs/analyze/processor.js";

describe("extractJson: the JSON in a model's answer", () => {
  const cases: Array<[string, string, unknown]> = [
    ["plain JSON", '{"a": 1}', { a: 1 }],
    ["prose around it", 'Sure! Here: {"a": [1, 2]} Hope that helps.', { a: [1, 2] }],
    ["a fence", 'Result:\n```json\n{"a": "x}"}\n```', { a: "x}" }],
    ["a fence without a language", "```\n[1, 2]\n```", [1, 2]],
    ["a reasoning block first", '<think>maybe {"wrong": true}</think>{"a": 1}', { a: 1 }],
    ["trailing commas and single quotes", "{'a': [1, 2,],}", { a: [1, 2] }],
    [
      "cut off at the token limit",
      'Here: {"keywords": [{"keyword": "cat", "confidence": 0.9}, {"keyword": "d',
      {
        keywords: [{ keyword: "cat", confidence: 0.9 }, { keyword: "d" }],
      },
    ],
    ["braces inside strings", '{"text": "a } and a { inside"}', { text: "a } and a { inside" }],
  ];
  for (const [name, answer, expected] of cases) {
    test(name, () => assert.deepEqual(extractJson(answer), expected));
  }
  test("no JSON at all: undefined, even where jsonrepair would make something of the prose", () => {
    for (const answer of [
      "I cannot help with that.",
      "",
      "Nope, no keywords here.",
      "42",
      '"just a string"',
    ]) {
      assert.equal(extractJson(answer), undefined, answer);
    }
  });
});

describe("keywords from a model's JSON", () => {
  const words = (found: ScoredKeyword[]) => found.map((k) => `${k.keyword}:${k.confidence}`);
  test("the asked shape and the common other ones", () => {
    assert.deepEqual(words(readKeywords({ keywords: [{ keyword: "Cat", confidence: 0.9 }] }, "en")), [
      "cat:0.9",
    ]);
    assert.deepEqual(words(readKeywords({ keywords: ["a", "b"], confidence_scores: [0.5, "40%"] }, "en")), [
      "a:0.5",
      "b:0.4",
    ]);
    assert.deepEqual(words(readKeywords({ keywords: { dog: 0.8, tree: 95 } }, "en")), [
      "dog:0.8",
      "tree:0.95",
    ]);
    assert.deepEqual(words(readKeywords([{ label: "Sky", score: "0.7" }], "en")), ["sky:0.7"]);
    assert.deepEqual(words(readKeywords({ sea: 0.6 }, "en")), ["sea:0.6"]);
  });
  test("entries without a usable confidence are left out", () => {
    assert.deepEqual(
      words(
        readKeywords(
          { keywords: ["a", { keyword: "b", confidence: 250 }, { keyword: "c", confidence: -1 }] },
          "en",
        ),
      ),
      [],
    );
  });
  test("cleaning: numbering, hashtags, quotes, spaces; case by language", () => {
    assert.equal(cleanKeyword("1. Golden  Retriever", "en"), "golden retriever");
    assert.equal(cleanKeyword("#Sunset", "en"), "sunset");
    assert.equal(cleanKeyword("“Beach”.", "en"), "beach");
    assert.equal(cleanKeyword("Hund", "de"), "Hund");
    assert.equal(cleanKeyword("Hund", "de-AT"), "Hund");
    assert.equal(cleanKeyword("İSTANBUL", "tr"), "istanbul");
    assert.equal(cleanKeyword("猫", "ja"), "猫");
    assert.equal(cleanKeyword("  ", "en"), undefined);
  });
  test("merged without duplicates (the higher confidence kept), best first, ties in order", () => {
    const all = new Map<string, ScoredKeyword>();
    mergeKeywords(
      all,
      [
        { keyword: "a", confidence: 0.5 },
        { keyword: "b", confidence: 0.9 },
        { keyword: "c", confidence: 0.5 },
      ],
      "en",
    );
    mergeKeywords(
      all,
      [
        { keyword: "a", confidence: 0.95 },
        { keyword: "d", confidence: 0.1 },
      ],
      "en",
    );
    assert.deepEqual(words(bestKeywords(all, 3)), ["a:0.95", "b:0.9", "c:0.5"]);
  });
});

describe("analysis answers", () => {
  test("JSON text and tags; other text fields; prose as it is", () => {
    assert.deepEqual(readAnalysis('{"text": "A cat.", "tags": ["cat", "#Cat", "", "pet"]}'), {
      text: "A cat.",
      tags: ["cat", "pet"],
    });
    assert.deepEqual(readAnalysis('```json\n{"description": "A dog."}\n```'), { text: "A dog.", tags: [] });
    assert.deepEqual(readAnalysis("<think>hmm</think>  It is a bird. "), { text: "It is a bird.", tags: [] });
    assert.deepEqual(readAnalysis(""), { text: "", tags: [] });
  });
});

describe("languages in prompts", () => {
  test("named in English with their code; ISO-639-1 for transcription", () => {
    assert.equal(languageName("en"), "English (en)");
    assert.equal(languageName("pt-BR"), "Brazilian Portuguese (pt-BR)");
    assert.equal(languageName("qaa"), "the language qaa (qaa)");
    assert.equal(transcriptionLanguage("de-AT"), "de");
    assert.equal(transcriptionLanguage("fil"), undefined);
  });
});

describe("AI provider configuration", () => {
  const load = (ai: Record<string, unknown>, env: Record<string, string> = {}): Config =>
    loadConfig({ env, file: "/dev/null", overrides: { ai } });

  test("AI_BASE_URL, AI_MODEL, AI_API_KEY define the provider named default (or AI_PROVIDER)", () => {
    const c = load({}, { AI_BASE_URL: "http://localhost:11434/v1/", AI_MODEL: "llava", AI_API_KEY: "k" });
    assert.deepEqual(c.ai.providers.default, {
      name: "default",
      baseUrl: "http://localhost:11434/v1",
      apiKey: "k",
      model: "llava",
      transcriptionModel: "whisper-1",
      structuredOutput: "prompt",
      apiKeySetting: "AI_API_KEY",
    });
    assert.equal(c.ai.defaultProvider, "default");
    const named = load({}, { AI_BASE_URL: "http://x/v1", AI_MODEL: "m", AI_PROVIDER: "ollama" });
    assert.deepEqual(Object.keys(named.ai.providers), ["ollama"]);
  });

  test("none configured: no default; jobs are told how to configure one", () => {
    const c = load({});
    assert.deepEqual(c.ai.providers, {});
    const choice = chooseProvider(c.ai);
    assert.equal(choice.ok, false);
    assert.match(!choice.ok ? choice.message : "", /set AI_BASE_URL, AI_MODEL and AI_API_KEY/);
  });

  test("named providers; the default is the only one, else must be named", () => {
    const one = load({ providers: { local: { base_url: "http://l/v1", model: "m" } } });
    assert.equal(one.ai.defaultProvider, "local");
    assert.equal(one.ai.providers.local!.apiKeySetting, "ai.providers.local.api_key");
    const two = {
      providers: { a: { base_url: "http://a/v1", model: "m" }, b: { base_url: "http://b/v1", model: "m" } },
    };
    assert.throws(
      () => load(two),
      /ai\.default_provider must name the provider of jobs that name none \(configured: a, b\)/,
    );
    assert.equal(load({ ...two, default_provider: "b" }).ai.defaultProvider, "b");
    assert.throws(
      () => load({ ...two, default_provider: "c" }),
      /ai\.default_provider: no provider named "c" \(configured: a, b\)/,
    );
    const choice = chooseProvider(load({ ...two, default_provider: "b" }).ai, "zzz");
    assert.equal(!choice.ok && choice.reason, "unknown");
  });

  test("incomplete or wrong settings are refused, naming the setting", () => {
    assert.throws(() => load({}, { AI_MODEL: "m" }), /AI_BASE_URL \(ai\.base_url\) is not set/);
    assert.throws(() => load({}, { AI_BASE_URL: "http://x/v1" }), /AI_MODEL \(ai\.model\) is not set/);
    assert.throws(() => load({}, { AI_BASE_URL: "ftp://x", AI_MODEL: "m" }), /must be an http or https URL/);
    assert.throws(() => load({ providers: { Bad: { base_url: "http://x", model: "m" } } }), /ai\.providers/);
    assert.throws(() => load({ providers: { x: { base_url: "http://x" } } }), /ai\.providers\.x\.model/);
    assert.throws(
      () =>
        load(
          { providers: { default: { base_url: "http://x", model: "m" } } },
          { AI_BASE_URL: "http://y", AI_MODEL: "m" },
        ),
      /ai\.providers\.default: the name is taken/,
    );
    assert.throws(
      () => load({}, { AI_STRUCTURED_OUTPUT: "xml", AI_BASE_URL: "http://y", AI_MODEL: "m" }),
      /structured_output/,
    );
    assert.throws(() => load({ retry_initial_delay: "10s", retry_max_delay: "1s" }), /ai\.retry_max_delay/);
  });
});
