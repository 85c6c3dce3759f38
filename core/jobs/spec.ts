import type { TObject } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import { Value } from "@sinclair/typebox/value";
import { chooseProvider } from "../ai/providers.js";
import type { Config } from "../config/load.js";
import { parseQuantity, QuantityError } from "../quantity.js";
import { shown } from "../text.js";
import { MAX_TIMESTAMP_SECONDS, timestampSeconds } from "./timestamp.js";
import { checkParameterRules, PARAMETER_SCHEMAS } from "./parameters.js";
import { JOB_TYPES, WRITES_OUTPUT, type JobType } from "./types.js";

/** A job as it is submitted: what the store records. */
export interface JobSpec {
  type: JobType;
  source_bucket: string;
  source_key: string;
  dest_bucket?: string;
  dest_key?: string;
  parameters: Record<string, unknown>;
  webhook_url?: string;
  webhook_style?: "default" | "chat";
  request_id?: string;
  resources?: { cpu?: string; memory?: string };
  timeout_seconds?: number;
}

/** A submission the interface refuses: becomes a 400 with this message. */
export class InvalidJobError extends Error {
  override name = "InvalidJobError";
}

export interface SpecLimits {
  maxTimeoutSeconds: number;
  /** Largest width or height a job may ask for (limits.max_output_dimension). */
  maxOutputDimension: number;
  /** Largest per-job `resources` (kubernetes.max_resources), as Kubernetes quantities. */
  maxResources: { cpu: string; memory: string };
  /** The configured AI providers (analyze's `provider` must name one). */
  ai: Pick<Config["ai"], "providers" | "defaultProvider">;
}

/** The configured maximums a submission is checked against. */
export function specLimits(config: Pick<Config, "limits" | "kubernetes" | "ai">): SpecLimits {
  return {
    maxTimeoutSeconds: config.limits.maxTimeoutSeconds,
    maxOutputDimension: config.limits.maxOutputDimension,
    maxResources: config.kubernetes.maxResources,
    ai: config.ai,
  };
}

const checkers = new Map<JobType, TypeCheck<TObject>>(
  JOB_TYPES.map((type) => [type, TypeCompiler.Compile(PARAMETER_SCHEMAS[type])]),
);

/**
 * Validates a job's parameters against its type's schema (applying defaults) and the rules that
 * span fields. `where` prefixes messages, e.g. "jobs[3].parameters".
 */
export function normalizeParameters(type: JobType, input: unknown, where = ""): Record<string, unknown> {
  const schema = PARAMETER_SCHEMAS[type];
  const value = Value.Default(schema, structuredClone(input ?? {})) as Record<string, unknown>;
  const checker = checkers.get(type)!;
  const first = checker.Errors(value).First();
  if (first) {
    const field = first.path.split("/").filter(Boolean).join(".");
    const got = first.value === undefined ? "" : ` (got ${shown(first.value)})`;
    const message = describeError(first.schema as Record<string, unknown>, first.message);
    const location = [where, field].filter(Boolean).join(".");
    throw new InvalidJobError(location ? `${location}: ${message}${got}` : `${message}${got}`);
  }
  assertParameterRules(type, value, where);
  return value;
}

/** The cross-field rules alone, for parameters a schema validator has already checked. */
export function assertParameterRules(type: JobType, parameters: Record<string, unknown>, where = ""): void {
  const broken = checkParameterRules(type, parameters);
  if (broken) throw new InvalidJobError(where ? `${where}: ${broken}` : broken);
}

function describeError(schema: Record<string, unknown>, fallback: string): string {
  const choices = (schema.anyOf as Array<{ const?: unknown }> | undefined)?.map((s) => s.const);
  if (choices && choices.every((c) => c !== undefined)) return `must be one of ${choices.join(", ")}`;
  return fallback.charAt(0).toLowerCase() + fallback.slice(1);
}

/** Parameters that size the output, bounded by limits.max_output_dimension. */
const DIMENSION_PARAMETERS: Partial<Record<JobType, readonly string[]>> = {
  image_resize: ["width", "height"],
  video_thumbnail: ["width"],
};

/** Checks what the schemas cannot: destinations per type, URLs, configured maximums. */
export function checkJobSpec(spec: JobSpec, limits: SpecLimits, where = ""): void {
  const at = (field: string) => (where ? `${where}.${field}` : field);
  if (WRITES_OUTPUT[spec.type]) {
    for (const field of ["dest_bucket", "dest_key"] as const) {
      if (!spec[field]) throw new InvalidJobError(`${at(field)} is required for ${spec.type}`);
    }
  }
  if (spec.webhook_url !== undefined) assertWebhookUrl(spec.webhook_url, at("webhook_url"));
  const provider = spec.parameters.provider;
  if (spec.type === "analyze" && typeof provider === "string") {
    const choice = chooseProvider(limits.ai, provider);
    if (!choice.ok) {
      throw new InvalidJobError(`${where ? `${where}.parameters.provider` : "provider"}: ${choice.message}`);
    }
  }
  for (const field of DIMENSION_PARAMETERS[spec.type] ?? []) {
    const value = spec.parameters[field];
    if (typeof value === "number" && value > limits.maxOutputDimension) {
      const name = where ? `${where}.parameters.${field}` : field;
      throw new InvalidJobError(
        `${name} must be at most ${limits.maxOutputDimension} pixels (limits.max_output_dimension)`,
      );
    }
  }
  const timestamp = spec.type === "video_thumbnail" ? spec.parameters.timestamp : undefined;
  if (typeof timestamp === "string" || typeof timestamp === "number") {
    const seconds = timestampSeconds(timestamp);
    if (seconds !== undefined && seconds > MAX_TIMESTAMP_SECONDS) {
      const name = where ? `${where}.parameters.timestamp` : "timestamp";
      throw new InvalidJobError(
        `${name} must be at most ${MAX_TIMESTAMP_SECONDS / 3600}:00:00 (${MAX_TIMESTAMP_SECONDS} seconds; got ${shown(timestamp, 40)})`,
      );
    }
  }
  if (spec.timeout_seconds !== undefined && spec.timeout_seconds > limits.maxTimeoutSeconds) {
    throw new InvalidJobError(
      `${at("timeout_seconds")} must be at most ${limits.maxTimeoutSeconds} (limits.max_timeout_seconds)`,
    );
  }
  for (const resource of ["cpu", "memory"] as const) {
    const value = spec.resources?.[resource];
    if (value === undefined) continue;
    assertResource(resource, value, limits.maxResources[resource], at(`resources.${resource}`));
  }
}

// A per-job quantity must be above zero and at most the configured maximum (compared as numbers:
// 8192Mi is 8Gi).
function assertResource(resource: "cpu" | "memory", value: string, max: string, field: string): void {
  let amount: number;
  try {
    amount = parseQuantity(value);
  } catch (err) {
    if (err instanceof QuantityError) throw new InvalidJobError(`${field}: ${err.message}`);
    throw err;
  }
  if (!(amount > 0)) throw new InvalidJobError(`${field} must be more than zero (got ${value})`);
  if (amount > parseQuantity(max)) {
    throw new InvalidJobError(
      `${field} ${value} exceeds the maximum ${max} (kubernetes.max_resources.${resource})`,
    );
  }
}

/** A webhook target must be an absolute http(s) URL with a host. */
export function assertWebhookUrl(value: string, field: string): void {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || !url.hostname) {
    throw new InvalidJobError(`${field} must be an absolute http or https URL`);
  }
}

/** What every submission carries besides its parameters, single body and batch entry alike. */
export interface SubmissionFields {
  source_bucket: string;
  source_key: string;
  dest_bucket?: string;
  dest_key?: string;
  webhook_url?: string;
  webhook_style?: "default" | "chat" | "slack";
  request_id?: string;
  resources?: JobSpec["resources"];
  timeout_seconds?: number;
}

/** The job the store records: `slack` is kept as its canonical `chat`; request_id defaults to the request's. */
export function buildJobSpec(
  type: JobType,
  fields: SubmissionFields,
  parameters: Record<string, unknown>,
  requestId: string,
): JobSpec {
  const style = fields.webhook_style;
  return {
    type,
    source_bucket: fields.source_bucket,
    source_key: fields.source_key,
    ...(fields.dest_bucket !== undefined ? { dest_bucket: fields.dest_bucket } : {}),
    ...(fields.dest_key !== undefined ? { dest_key: fields.dest_key } : {}),
    parameters,
    ...(fields.webhook_url !== undefined ? { webhook_url: fields.webhook_url } : {}),
    ...(style !== undefined ? { webhook_style: style === "slack" ? "chat" : style } : {}),
    request_id: fields.request_id ?? requestId,
    ...(fields.resources !== undefined ? { resources: fields.resources } : {}),
    ...(fields.timeout_seconds !== undefined ? { timeout_seconds: fields.timeout_seconds } : {}),
  };
}
