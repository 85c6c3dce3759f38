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
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value: body, path: "", depth: 0 }];
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop()!;
    const where = path === "" ? "the request body" : path;
    if (typeof value === "string") {
      if (LONE_SURROGATE.test(value))
        return `${where} is not valid Unicode (it holds a lone UTF-16 surrogate)`;
    } else if (typeof value === "number") {
      if (!Number.isFinite(value)) return `${where} is a number too large to represent`;
    } else if (value !== null && typeof value === "object") {
      if (depth >= MAX_BODY_DEPTH) return `${where} nests deeper than ${MAX_BODY_DEPTH} levels`;
      if (Array.isArray(value)) {
        value.forEach((item, i) => stack.push({ value: item, path: `${path}[${i}]`, depth: depth + 1 }));
      } else {
        for (const [key, item] of Object.entries(value)) {
          if (LONE_SURROGATE.test(key)) return `a field name in ${where} is not valid Unicode`;
          stack.push({ value: item, path: path === "" ? key : `${path}.${key}`, depth: depth + 1 });
        }
      }
    }
  }
  return undefined;
}

class BodyError extends Error {
  readonly statusCode = 400;
}

/**
 * JSON bodies through Fastify's own parser (prototype-poisoning protection, its error codes), then
 * through bodyProblem: the one place every route's input passes before validation.
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, text, done) => {
    parse(request, text as string, (err: Error | null, body?: unknown) => {
      if (err) return done(err, undefined);
      const problem = bodyProblem(body);
      if (problem) return done(new BodyError(problem), undefined);
      done(null, body);
    });
  });
}
