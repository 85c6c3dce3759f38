import { TypeCompiler, type TLiteralValue, type TObject, type TypeCheck } from "../typebox.js";
import { shown } from "../text.js";
import { DEFAULT_BOUNDS, type SchemaBounds } from "./bounds.js";
import { PARAMETER_SCHEMAS, withDefaults } from "./parameters.js";
import type { Job } from "./records.js";
import { definitionOf, JOB_TYPES, type ExecutionClass, type JobType } from "./types.js";

/** A job as it is submitted: what the store records. */
export interface JobSpec {
  /** Its id, when the submitter chose it (a template's {job_id}); else the store makes one. */
  id?: string;
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
  /** The execution class it asks for (executor.pool); absent: its type's. */
  execution_class?: ExecutionClass;
  /** Its order in its queue: higher first; absent is 0. */
  priority?: number;
  /** The failed job this one retries (POST /jobs/{id}/retry). */
  retry_of?: string;
  /** The template it was submitted with (its parameters are resolved into `parameters`). */
  template?: TemplateRef;
}

/** A template a job was submitted with: its name and the version it used. */
export interface TemplateRef {
  name: string;
  version: number;
}

/** A submission the interface refuses: becomes a 400 with this message. */
export class InvalidJobError extends Error {
  override name = "InvalidJobError";
}

const checkers = new Map<JobType, TypeCheck<TObject>>(
  JOB_TYPES.map((type) => [type, TypeCompiler.Compile(PARAMETER_SCHEMAS[type])]),
);

/**
 * A job's parameters with their defaults applied, checked against its type's schema (of the default
 * configuration) for their shape. The interface itself validates with the route schemas
 * (api/schemas.ts), which also say the bounds of the configuration and the rules that span fields;
 * this is for parameters built in code. `where` prefixes messages, e.g. "jobs[3].parameters".
 */
export function normalizeParameters(type: JobType, input: unknown, where = ""): Record<string, unknown> {
  const value: Record<string, unknown> = withDefaults(type, input);
  const checker = checkers.get(type)!;
  const first = checker.Errors(value).First();
  if (first) {
    const field = first.path.split("/").filter(Boolean).join(".");
    const got = first.value === undefined ? "" : ` (got ${shown(first.value)})`;
    const message = describeError(first.schema, first.message);
    const location = [where, field].filter(Boolean).join(".");
    throw new InvalidJobError(location ? `${location}: ${message}${got}` : `${message}${got}`);
  }
  return value;
}

/** A TypeBox error's message as the API words it: a union of literals names its choices. */
export function describeError(schema: Record<string, unknown>, fallback: string): string {
  const choices = (schema.anyOf as Array<{ const?: TLiteralValue }> | undefined)?.map((s) => s.const);
  if (choices && choices.every((c) => c !== undefined)) return `must be one of ${choices.join(", ")}`;
  return fallback.charAt(0).toLowerCase() + fallback.slice(1);
}

/** What every submission carries besides its parameters, single body and batch entry alike. */
export interface SubmissionFields {
  source_bucket: string;
  source_key: string;
  dest_bucket?: string;
  dest_key?: string;
  /** A type that writes many objects (WRITES_UNDER_PREFIX): where; recorded as its dest_key. */
  dest_prefix?: string;
  webhook_url?: string;
  webhook_style?: "default" | "chat" | "slack";
  request_id?: string;
  resources?: JobSpec["resources"];
  timeout_seconds?: number;
  execution_class?: ExecutionClass;
  priority?: number;
}

/**
 * The job the store records: `slack` is kept as its canonical `chat`; request_id defaults to the
 * request's. `bounds`: the configuration's, which a type's `check` applies.
 */
export function buildJobSpec(
  type: JobType,
  fields: SubmissionFields,
  parameters: Record<string, unknown>,
  requestId: string,
  bounds: SchemaBounds = DEFAULT_BOUNDS,
): JobSpec {
  // Assigned one by one rather than spread: this runs for every submitted job.
  const spec: JobSpec = {
    type,
    source_bucket: fields.source_bucket,
    source_key: fields.source_key,
    parameters,
    request_id: fields.request_id ?? requestId,
  };
  if (fields.dest_bucket !== undefined) spec.dest_bucket = fields.dest_bucket;
  if (fields.dest_key !== undefined) spec.dest_key = fields.dest_key;
  const definition = definitionOf(type);
  if ("entryKey" in definition && definition.entryKey && fields.dest_prefix !== undefined) {
    spec.dest_key = definition.entryKey(fields.dest_prefix, parameters);
  }
  if ("destinationsInParameters" in definition && definition.destinationsInParameters) {
    if (fields.dest_bucket !== undefined) parameters.dest_bucket = fields.dest_bucket;
    if (fields.dest_prefix !== undefined) parameters.dest_prefix = fields.dest_prefix;
  }
  const refused = "check" in definition ? definition.check?.(parameters, bounds) : undefined;
  if (refused) throw new InvalidJobError(refused);
  if (fields.webhook_url !== undefined) spec.webhook_url = fields.webhook_url;
  const style = fields.webhook_style;
  if (style !== undefined) spec.webhook_style = style === "slack" ? "chat" : style;
  if (fields.resources !== undefined) spec.resources = fields.resources;
  if (fields.timeout_seconds !== undefined) spec.timeout_seconds = fields.timeout_seconds;
  if (fields.execution_class !== undefined) spec.execution_class = fields.execution_class;
  if (fields.priority) spec.priority = fields.priority;
  return spec;
}

/**
 * A new job doing what a failed one did: its type, locations, parameters, webhook, resources,
 * timeout, execution class and priority, marked `retry_of` it; the request that asks for it names it (request_id).
 */
export function retrySpec(job: Job, requestId: string, bounds?: SchemaBounds): JobSpec {
  return {
    ...buildJobSpec(
      job.type,
      {
        ...job,
        webhook_style: job.webhook_style as SubmissionFields["webhook_style"],
        request_id: requestId,
      },
      job.parameters,
      requestId,
      bounds,
    ),
    retry_of: job.id,
    ...(job.template ? { template: job.template } : {}),
  };
}
