// The request schemas as the OpenAPI 3.0 document states them. A rule across fields that the API
// validates as JSON Schema `if`/`then` and marks CROSS_FIELD_RULE (video_transcode's: a container
// must hold its codecs, crf or video_bitrate, each encoder's ranges) is carried in the schema's
// `x-rules` rather than its `allOf`: OpenAPI 3.0's dialect has no `if`, and request generators
// (Schemathesis) cannot draw bodies from these. Each rule is also said in its fields' descriptions;
// a body that breaks one is answered 400, naming the fields.
import { CROSS_FIELD_RULE } from "../core/jobs/patterns.js";

type Schema = { [key: string]: unknown };

const isMarkedRule = (schema: unknown): boolean =>
  !!schema && typeof schema === "object" && (schema as Schema)[CROSS_FIELD_RULE] === true;

/** A copy of `schema` with its marked rules across fields moved to `x-rules`. */
export function toOpenApi30<T>(schema: T): T {
  return rewrite(schema) as T;
}

function rewrite(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewrite);
  if (!value || typeof value !== "object") return value;
  const out: Schema = {};
  for (const [key, child] of Object.entries(value as Schema)) out[key] = rewrite(child);
  if (Array.isArray(out.allOf) && out.allOf.some(isMarkedRule)) {
    const all = out.allOf as unknown[];
    out["x-rules"] = all.filter(isMarkedRule);
    const rest = all.filter((schema) => !isMarkedRule(schema));
    if (rest.length > 0) out.allOf = rest;
    else delete out.allOf;
  }
  return out;
}
