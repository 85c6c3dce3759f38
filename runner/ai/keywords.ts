// Keywords out of a model's JSON, whatever reasonable shape it took: {"keywords": [{keyword,
// confidence}]} as asked, or a list of strings with a parallel confidence_scores, a {word: score}
// map, {tags: [...]}, {label, score} items, confidences in percent or as strings. Then: cleaned,
// lower-cased (languages whose spelling needs capitals keep them), de-duplicated, and ordered by
// confidence.

export interface ScoredKeyword {
  keyword: string;
  confidence: number;
}

// German and Luxembourgish capitalise every noun: lower-casing "Hund" misspells it.
const CASE_KEEPING = new Set(["de", "lb"]);

const WORD_FIELDS = ["keyword", "word", "tag", "label", "name", "text", "term"];
const SCORE_FIELDS = ["confidence", "score", "probability", "relevance", "weight"];

/** The keywords with a usable confidence that the answer holds, in the answer's order. */
export function readKeywords(answer: unknown, language: string): ScoredKeyword[] {
  const entries = rawEntries(answer);
  const out: ScoredKeyword[] = [];
  for (const [word, score] of entries) {
    const keyword = typeof word === "string" ? cleanKeyword(word, language) : undefined;
    const confidence = readConfidence(score);
    if (keyword !== undefined && confidence !== undefined) out.push({ keyword, confidence });
  }
  return out;
}

function rawEntries(answer: unknown): Array<[unknown, unknown]> {
  if (Array.isArray(answer)) return answer.map(entry);
  if (typeof answer !== "object" || answer === null) return [];
  const o = answer as Record<string, unknown>;
  const list = o.keywords ?? o.tags ?? o.labels ?? o.results;
  if (Array.isArray(list)) {
    const scores = o.confidence_scores ?? o.confidences ?? o.scores;
    if (Array.isArray(scores)) return list.map((w, i) => [w, scores[i]]);
    return list.map(entry);
  }
  if (typeof list === "object" && list !== null) return Object.entries(list);
  // A bare {word: score} map.
  const pairs = Object.entries(o);
  return pairs.every(([, v]) => typeof v === "number") ? pairs : [];
}

function entry(item: unknown): [unknown, unknown] {
  if (typeof item !== "object" || item === null) return [item, undefined];
  const o = item as Record<string, unknown>;
  const word = WORD_FIELDS.map((f) => o[f]).find((v) => typeof v === "string");
  const score = SCORE_FIELDS.map((f) => o[f]).find((v) => v !== undefined);
  return [word, score];
}

/** 0–1; a percentage (1 < x ≤ 100) is scaled; anything else is not a confidence. */
function readConfidence(value: unknown): number | undefined {
  const n = typeof value === "string" ? Number(value.trim().replace(/%$/, "")) : value;
  if (typeof n !== "number" || !Number.isFinite(n) || n < 0) return undefined;
  if (n <= 1) return n;
  if (n <= 100) return n / 100;
  return undefined;
}

export function cleanKeyword(text: string, language: string): string | undefined {
  let k = text
    .normalize("NFC")
    .replace(/^[\s\d.)\]-]*(?=\p{L})/u, "") // "1. cat", "- cat"
    .replace(/^[#"'“”‘’«»\s]+|["'“”‘’«»\s.,;:!]+$/gu, "")
    .replace(/\s+/g, " ")
    .trim();
  if (!CASE_KEEPING.has(language.split("-")[0]!.toLowerCase())) k = k.toLocaleLowerCase(language);
  return k.length > 0 && k.length <= 100 ? k : undefined;
}

/**
 * Merges keywords into `into`, case-insensitively: the first spelling wins, the higher confidence
 * is kept.
 */
export function mergeKeywords(
  into: Map<string, ScoredKeyword>,
  found: ScoredKeyword[],
  language: string,
): void {
  for (const k of found) {
    const key = k.keyword.toLocaleLowerCase(language);
    const known = into.get(key);
    if (!known) into.set(key, { ...k });
    else known.confidence = Math.max(known.confidence, k.confidence);
  }
}

/** The best `count`, most confident first; ties keep the order they came in (the sort is stable). */
export function bestKeywords(all: Map<string, ScoredKeyword>, count: number): ScoredKeyword[] {
  return [...all.values()]
    .sort((a, b) => b.confidence - a.confidence)
    .slice(0, count)
    .map((k) => ({ keyword: k.keyword, confidence: Math.round(k.confidence * 10_000) / 10_000 }));
}
