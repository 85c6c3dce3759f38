import { shown } from "../core/text.js";
import type { FastifyInstance } from "fastify";

// With the u flag a proper surrogate pair is one code point, so this finds lone surrogates only.
const LONE_SURROGATE = /\p{Cs}/u;

/** How deep a request body may nest: a batch with job parameters needs 5 levels. */
export const MAX_BODY_DEPTH = 32;

/**
 * What no JSON body may hold, whichever route it is for (single jobs, batch entries, anything
 * added later): values nested deeper than MAX_BODY_DEPTH (recursive code downstream would run out
 * of stack), numbers beyond a double (1e309 parses to Infinity), and text that is not Unicode (a
 * lone UTF-16 surrogate, which no store or object name can hold). Returns the problem, naming the
 * field, or undefined. Iterative: it never recurses, however deep the input.
 */
export function bodyProblem(body: unknown): string | undefined {
  // Each entry knows its parent and its key; a path is spelled out only for the message.
  const stack: Entry[] = [{ value: body, parent: undefined, key: "", depth: 0 }];
  while (stack.length > 0) {
    const entry = stack.pop()!;
    const { value, depth } = entry;
    if (typeof value === "string") {
      if (LONE_SURROGATE.test(value))
        return `${where(entry)} is not valid Unicode (it holds a lone UTF-16 surrogate)`;
    } else if (typeof value === "number") {
      if (!Number.isFinite(value)) return `${where(entry)} is a number too large to represent`;
    } else if (value !== null && typeof value === "object") {
      if (depth >= MAX_BODY_DEPTH) return `${where(entry)} nests deeper than ${MAX_BODY_DEPTH} levels`;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          stack.push({ value: value[i], parent: entry, key: i, depth: depth + 1 });
        }
      } else {
        for (const key in value) {
          if (!Object.hasOwn(value, key)) continue;
          if (LONE_SURROGATE.test(key)) return `a field name in ${where(entry)} is not valid Unicode`;
          stack.push({
            value: (value as Record<string, unknown>)[key],
            parent: entry,
            key,
            depth: depth + 1,
          });
        }
      }
    }
  }
  return undefined;
}

interface Entry {
  value: unknown;
  parent: Entry | undefined;
  key: string | number;
  depth: number;
}

/** `jobs[3].parameters.width`, or "the request body" for the body itself. */
function where(entry: Entry): string {
  let path = "";
  for (let e: Entry | undefined = entry; e?.parent; e = e.parent) {
    const part = typeof e.key === "number" ? `[${e.key}]` : e.parent.parent ? `.${e.key}` : e.key;
    path = part + path;
  }
  return path === "" ? "the request body" : path;
}

class BodyError extends Error {
  constructor(
    message: string,
    readonly statusCode = 400,
  ) {
    super(message);
  }
}

/**
 * Why a JSON body cannot be read as it came, or undefined: the API reads JSON in UTF-8 only (RFC
 * 8259), so a charset other than UTF-8 is refused rather than misread, and it decodes no
 * Content-Encoding, so a compressed body is refused rather than parsed as the compressed bytes.
 * Both 415, naming what came.
 */
export function encodingProblem(headers: {
  "content-type"?: string | undefined;
  "content-encoding"?: string | undefined;
}): string | undefined {
  const encoding = headers["content-encoding"]?.trim().toLowerCase();
  if (encoding && encoding !== "identity") {
    return `unsupported Content-Encoding ${shown(encoding, 40)}: send the JSON body uncompressed, without Content-Encoding`;
  }
  const charset = charsetOf(headers["content-type"] ?? "");
  if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
    return `unsupported charset ${shown(charset, 40)}: send the JSON body in UTF-8 (charset=utf-8, or no charset)`;
  }
  return undefined;
}

/** The charset parameter of a Content-Type (lower case, unquoted), or undefined without one. */
function charsetOf(contentType: string): string | undefined {
  for (const parameter of contentType.split(";").slice(1)) {
    const eq = parameter.indexOf("=");
    if (eq < 0 || parameter.slice(0, eq).trim().toLowerCase() !== "charset") continue;
    return parameter
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, "$1")
      .toLowerCase();
  }
  return undefined;
}

/**
 * JSON bodies (UTF-8 and not compressed: encodingProblem) through Fastify's own parser (prototype-poisoning protection, its error codes), then
 * through bodyProblem: the one place every route's input passes before validation.
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, text, done) => {
    const refused = encodingProblem(request.headers);
    if (refused) return done(new BodyError(refused, 415), undefined);
    const parsed = (err: Error | null, body?: unknown): void => {
      if (err) return done(err, undefined);
      const problem = bodyProblem(body);
      if (problem) return done(new BodyError(problem), undefined);
      done(null, body);
    };
    // A Fastify body parser either calls back or returns a promise. The default JSON parser calls
    // back (and returns nothing); were it to return a promise, its outcome takes the same path, so the
    // request is not left waiting and a rejection is not left unhandled.
    const result = parse(request, text as string, parsed);
    if (result instanceof Promise) {
      result.then(
        (body: unknown) => parsed(null, body),
        (err: unknown) => parsed(err instanceof Error ? err : new Error(String(err))),
      );
    }
  });
}
