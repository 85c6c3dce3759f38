// What the command line says, checked before anything is sent: s3:// locations, job types,
// parameters. A mistake here is a UsageError (exit code 2).
import { BUCKET_PATTERN, NO_CONTROL_PATTERN } from "../core/jobs/records.js";
import { definitionOf, JOB_TYPES, type JobType } from "../core/jobs/types.js";
import { UsageError } from "./errors.js";

export interface S3Location {
  bucket: string;
  /** May be empty or end with "/" where a file name is added (put, get). */
  key: string;
}

const BUCKET = new RegExp(BUCKET_PATTERN);
const NO_CONTROL = new RegExp(NO_CONTROL_PATTERN);

/** s3://bucket/key; `what` names the argument in the message. */
export function parseS3Url(raw: string, what: string, options: { keyOptional?: boolean } = {}): S3Location {
  const match = /^s3:\/\/([^/]*)(?:\/(.*))?$/s.exec(raw);
  if (!match) throw new UsageError(`${what} must be an s3://bucket/key URL; got "${raw}"`);
  const bucket = match[1]!;
  const key = match[2] ?? "";
  if (!BUCKET.test(bucket)) {
    throw new UsageError(
      `${what}: "${bucket}" is not a bucket name (3 to 63 lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit); got "${raw}"`,
    );
  }
  if (!options.keyOptional && key === "") {
    throw new UsageError(`${what} must name an object: s3://${bucket}/<key>; got "${raw}"`);
  }
  if (!NO_CONTROL.test(key)) {
    throw new UsageError(`${what}: the key must not contain control characters`);
  }
  return { bucket, key };
}

/** The path of a type's submit route under /jobs/: image_ai_keywords → image/ai/keywords (docs/api.md). */
export function typePath(type: JobType): string {
  return definitionOf(type).route.path.replace(/^\/jobs\//, "");
}

/** A job type as its name (image_resize) or its route's path (image/resize, /jobs/image/resize). */
export function parseJobType(raw: string): JobType {
  const name = raw
    .trim()
    .replace(/^\/?(?:api\/v1\/)?jobs\//, "")
    .replace(/^\/+|\/+$/g, "")
    .replaceAll("/", "_");
  const found = JOB_TYPES.find((t) => t === name || typePath(t).replaceAll("/", "_") === name);
  if (!found) {
    const known = JOB_TYPES.map((t) => `${t} (${typePath(t)})`).join(", ");
    throw new UsageError(`unknown job type "${raw}"; the types are ${known}`);
  }
  return found;
}

/**
 * Parameters as key=value: a value that parses as JSON is taken as such (800, true, ["a","b"],
 * {"cpu":"500m"}), anything else is a string (webp, 00:01:30). "--params" gives a JSON object the
 * pairs are laid over.
 */
export function parseParams(pairs: string[], json: string | undefined): Record<string, unknown> {
  let params: Record<string, unknown> = {};
  if (json !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch (err) {
      throw new UsageError(`--params is not valid JSON: ${(err as Error).message}`);
    }
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
      throw new UsageError(`--params must be a JSON object such as '{"width": 800}'`);
    }
    params = { ...(parsed as Record<string, unknown>) };
  }
  for (const pair of pairs) {
    const at = pair.indexOf("=");
    if (at <= 0) {
      throw new UsageError(`parameters are key=value (such as width=800); got "${pair}"`);
    }
    params[pair.slice(0, at)] = jsonOrString(pair.slice(at + 1));
  }
  return params;
}

function jsonOrString(value: string): unknown {
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}
