// Models asked for JSON often answer with more than JSON: prose around it, a ```json fence, a
// reasoning block (<think>…</think>), trailing commas, single quotes, or an object cut off at the
// token limit. This finds the JSON value in such an answer; jsonrepair mends what is broken in it.
import { jsonrepair } from "jsonrepair";

/** The answer without reasoning blocks (<think>…</think>) some models put first. */
export function stripReasoning(answer: string): string {
  return answer.replace(/<think>[\s\S]*?<\/think>/gi, "").trim();
}

/** The first JSON object (or array) in a model's answer, or undefined when there is none. */
export function extractJson(answer: string): unknown {
  const text = stripReasoning(answer);
  const fences = [...text.matchAll(/```(?:json|JSON)?\s*\n?([\s\S]*?)```/g)].map((m) => m[1]!.trim());
  // Balanced {…} or […] spans, from each opening bracket in turn; else from the first one to the
  // end (an answer cut short).
  const spans: string[] = [];
  for (let start = firstOpening(text, 0); start >= 0; start = firstOpening(text, start + 1)) {
    const end = matchingClose(text, start);
    if (end < 0) {
      // Never closed: what follows is inside it, so its inner parts are no answer of their own.
      spans.push(text.slice(start));
      break;
    }
    spans.push(text.slice(start, end + 1));
  }
  // Valid JSON first, anywhere; only then mended JSON, and never the prose itself (jsonrepair would
  // make a structure of a sentence).
  for (const candidate of [text, ...fences, ...spans]) {
    const value = parseStrict(candidate);
    if (isStructured(value)) return value;
  }
  for (const candidate of [...fences, ...spans]) {
    const value = parseRepaired(candidate);
    if (isStructured(value)) return value;
  }
  return undefined;
}

function parseStrict(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function parseRepaired(text: string): unknown {
  try {
    return JSON.parse(jsonrepair(text));
  } catch {
    return undefined;
  }
}

function isStructured(value: unknown): boolean {
  return typeof value === "object" && value !== null;
}

function firstOpening(text: string, from: number): number {
  for (let i = from; i < text.length; i++) if (text[i] === "{" || text[i] === "[") return i;
  return -1;
}

/** The index of the bracket closing the one at `start`, skipping strings; -1 if it is never closed. */
function matchingClose(text: string, start: number): number {
  const stack: string[] = [];
  let quote: string | undefined;
  for (let i = start; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === "\\") i++;
      else if (c === quote) quote = undefined;
      continue;
    }
    if (c === '"') quote = c;
    else if (c === "{") stack.push("}");
    else if (c === "[") stack.push("]");
    else if (c === "}" || c === "]") {
      if (stack.pop() !== c) return -1;
      if (stack.length === 0) return i;
    }
  }
  return -1;
}
