// Templates: named recipes of a job (a type, its parameters, where its output goes) that a client
// stores (PUT /api/v1/templates/{name}) or the configuration declares (`templates:`), and submits
// reuse by name, giving only what varies (the source, the destination, the parameters the template
// lets them override). Pure: the body's schema per type, its rules, the shorthand of a pipeline,
// the destination placeholders, and how a submission's body is made from a template.
import { Type, Value, type TObject, type TProperties } from "../typebox.js";
import { shown } from "../text.js";
import { TEMPLATE_NAME_PATTERN } from "../config/schema.js";
import { ERROR_MESSAGE, type SchemaBounds } from "./bounds.js";
import { formatPath } from "../config/tree.js";
import { Enum } from "./enum.js";
import { describeError } from "./spec.js";
import { parameterSchemas } from "./parameters.js";
import { Bucket, DestinationFields, DestinationPrefixFields } from "./records.js";
import {
  definitionOf,
  DESTINATIONS_IN_PARAMETERS,
  JOB_TYPES,
  WRITES_OUTPUT,
  WRITES_UNDER_PREFIX,
  type JobType,
} from "./types.js";

export { TEMPLATE_NAME_PATTERN };
const NAME_RE = new RegExp(TEMPLATE_NAME_PATTERN);
export const isTemplateName = (name: unknown): name is string =>
  typeof name === "string" && NAME_RE.test(name);

/** Where a template comes from: a client's PUT, or the configuration (read-only, seen by every client). */
export type TemplateSource = "api" | "config";

/** What a template holds: as PUT sends it (or the configuration declares it), validated, defaults applied. */
export interface TemplateBody {
  type: JobType;
  parameters: Record<string, unknown>;
  /** The parameter names a submission may override. */
  overridable?: string[];
  dest_bucket?: string;
  /** A pattern: {prefix}, {name} and {job_id} are replaced at submit. */
  dest_key?: string;
  /** A pattern (types that write under a prefix), as dest_key. */
  dest_prefix?: string;
  description?: string;
}

/** A template as the API answers it. */
export interface Template extends TemplateBody {
  name: string;
  version: number;
  source: TemplateSource;
  /** When this version was stored (api). */
  created_at?: string;
}

/** The job type whose parameters are steps; a template of it may be written `{steps, keep_partial?}`. */
export const PIPELINE_TYPE = "pipeline";
const PIPELINE_PARAMETERS = ["steps", "keep_partial"];

/**
 * A template body with the pipeline shorthand expanded: `{steps, keep_partial?, …}` without `type` is
 * `{type: "pipeline", parameters: {steps, keep_partial?}, …}` (once the pipeline type is registered;
 * before, it is left as it is and its missing `type` is what a validation says). `parameters`
 * defaults to {}.
 */
export function expandShorthand(body: unknown): unknown {
  if (!isObject(body)) return body;
  const out: Record<string, unknown> = { ...body };
  if (out.type === undefined && "steps" in out && (JOB_TYPES as readonly string[]).includes(PIPELINE_TYPE)) {
    out.type = PIPELINE_TYPE;
    const parameters: Record<string, unknown> = isObject(out.parameters) ? { ...out.parameters } : {};
    for (const name of PIPELINE_PARAMETERS) {
      if (name in out) parameters[name] = out[name];
      delete out[name];
    }
    out.parameters = parameters;
  }
  // Absent: the type's defaults. A null is not an absent object: the schema refuses it.
  if (out.parameters === undefined) out.parameters = {};
  return out;
}

/** Where a type's output goes in a template: the destination fields its submissions take. */
function destinationPatterns(type: JobType): TProperties {
  const pattern = " (a pattern: {prefix}, {name} and {job_id} are replaced at submit)";
  if (WRITES_UNDER_PREFIX[type] || DESTINATIONS_IN_PARAMETERS[type]) {
    const prefix = DestinationPrefixFields.dest_prefix;
    return {
      dest_bucket: Type.Optional(Bucket("The bucket of the jobs' objects, unless a submission gives one")),
      dest_prefix: Type.Optional(
        Type.String({ ...prefix, description: `The key prefix, unless a submission gives one${pattern}` }),
      ),
    };
  }
  if (!WRITES_OUTPUT[type]) return {};
  return {
    dest_bucket: Type.Optional(Bucket("The bucket of the output, unless a submission gives one")),
    dest_key: Type.Optional(
      Type.String({
        ...DestinationFields.dest_key,
        description: `The output's key, unless a submission gives one${pattern}`,
      }),
    ),
  };
}

/** The names of a type's parameters. */
export function parameterNames(type: JobType, bounds: SchemaBounds): string[] {
  return Object.keys(parameterSchemas(bounds)[type].properties);
}

/**
 * The body of a template of one type, with the configuration's bounds: its parameters as a submit of
 * the type takes them (`shape` lets the API mark the fields with defaults optional, as it does for
 * its routes), the names a submission may override, destination patterns, a description.
 */
export function templateBodySchema(
  type: JobType,
  bounds: SchemaBounds,
  shape: (schema: TObject) => TObject = (schema) => schema,
): TObject {
  const names = parameterNames(type, bounds);
  return Type.Object(
    {
      type: Type.Literal(type),
      // Optional: absent, the template holds the type's defaults (expandShorthand gives it {}).
      parameters: Type.Optional(shape(parameterSchemas(bounds)[type])),
      overridable: Type.Optional(
        Type.Array(names.length > 0 ? Enum(names) : Type.Never(), {
          uniqueItems: true,
          description: `The parameters a submission may override (${names.join(", ") || "none"}); others given with the template are refused`,
          [ERROR_MESSAGE]: { uniqueItems: "must not name a parameter twice" },
        }),
      ),
      ...destinationPatterns(type),
      description: Type.Optional(
        Type.String({ maxLength: 500, description: "What the template is for (shown in lists)" }),
      ),
    },
    { additionalProperties: false, title: type },
  );
}

const PLACEHOLDER = /\{([^{}]*)\}/g;
/** What a template's check takes for a destination the submission gives. */
const STAND_IN = { bucket: "dest-bucket", prefix: "{prefix}" };
export const TEMPLATE_PLACEHOLDERS = ["prefix", "name", "job_id"] as const;
type Placeholder = (typeof TEMPLATE_PLACEHOLDERS)[number];

/** Each destination pattern of a template body: its top-level dest_key/dest_prefix and every dest_key in its parameters (a pipeline's steps). */
function patternsOf(body: Record<string, unknown>): Array<{ where: string; pattern: string }> {
  const found: Array<{ where: string; pattern: string }> = [];
  for (const field of ["dest_key", "dest_prefix"]) {
    if (typeof body[field] === "string") found.push({ where: field, pattern: body[field] });
  }
  const walk = (value: unknown, where: string) => {
    if (!isObject(value)) return;
    for (const [key, v] of Object.entries(value)) {
      const path = `${where}.${key}`;
      if (key === "dest_key" && typeof v === "string") found.push({ where: path, pattern: v });
      else walk(v, path);
    }
  };
  walk(body.parameters, "parameters");
  return found;
}

/**
 * What the schema cannot say of a template body (validated by its type's schema): the type's own
 * rule across its parameters (`check`, as at submit), and placeholders other than {prefix}, {name}
 * and {job_id} in its destination patterns. The sentence names the field, or undefined.
 */
export function templateRuleProblem(body: TemplateBody, bounds: SchemaBounds): string | undefined {
  const definition = definitionOf(body.type);
  // A type whose parameters say where its parts write (the pipeline) is checked with the job's
  // destination as a submission adds it (buildJobSpec): the template's, else a stand-in for what the
  // submission will give.
  const parameters = DESTINATIONS_IN_PARAMETERS[body.type]
    ? {
        ...body.parameters,
        dest_bucket: body.dest_bucket ?? STAND_IN.bucket,
        dest_prefix: body.dest_prefix ?? STAND_IN.prefix,
      }
    : body.parameters;
  const refused = "check" in definition ? definition.check?.(parameters, bounds) : undefined;
  if (refused) return `parameters: ${refused}`;
  for (const { where, pattern } of patternsOf(body as unknown as Record<string, unknown>)) {
    for (const [, name] of pattern.matchAll(PLACEHOLDER)) {
      if (!(TEMPLATE_PLACEHOLDERS as readonly string[]).includes(name!)) {
        return `${where}: {${name}} is not a placeholder (use {prefix}, {name} or {job_id})`;
      }
    }
  }
  return undefined;
}

/**
 * A template body of the configuration checked as a PUT checks one: the pipeline shorthand, a
 * type of the registry, its schema with the configuration's bounds (defaults applied), its rules.
 * Returns the body or the sentence naming the field.
 */
export function validateTemplateBody(
  raw: unknown,
  bounds: SchemaBounds,
): { body: TemplateBody } | { problem: string } {
  const expanded = expandShorthand(raw);
  if (!isObject(expanded)) return { problem: "must be an object" };
  if (!(JOB_TYPES as readonly unknown[]).includes(expanded.type)) {
    return { problem: `type must be one of ${JOB_TYPES.join(", ")} (got ${shown(expanded.type)})` };
  }
  const schema = templateBodySchema(expanded.type as JobType, bounds);
  const value = Value.Default(schema, structuredClone(expanded)) as Record<string, unknown>;
  const first = Value.Errors(schema, value).First();
  if (first) {
    const field = formatPath(first.path.split("/").filter(Boolean));
    const got = first.value === undefined ? "" : ` (got ${shown(first.value)})`;
    const message = describeError(first.schema, first.message);
    return { problem: `${field ? `${field}: ` : ""}${message}${got}` };
  }
  const body = value as unknown as TemplateBody;
  const problem = templateRuleProblem(body, bounds);
  return problem ? { problem } : { body };
}

/** The source key's last segment without its extension: `{name}` of `uploads/2026/cat.photo.jpg` is `cat.photo`. */
export function sourceName(key: string): string {
  const last = key.slice(key.lastIndexOf("/") + 1);
  const dot = last.lastIndexOf(".");
  return dot > 0 ? last.slice(0, dot) : last;
}

/** A submission the template cannot make: a 400 with this sentence. */
export class TemplateUseError extends Error {
  override name = "TemplateUseError";
}

/** The route a template is used on: its type's parameter names and whether its body takes dest_prefix. */
export interface TemplateRoute {
  parameterNames: ReadonlySet<string>;
  takesPrefix: boolean;
}

/**
 * The body a submission with a template stands for: the template's parameters with the overrides
 * the template allows, its destination unless the submission gives one (its patterns filled in),
 * and the rest of the submission as sent (source, options, `template`, `template_version`). The
 * route's schema and the type's check then validate it as any submission. Throws TemplateUseError:
 * a parameter the template does not let a submission override, a pattern's {prefix} without
 * dest_prefix, a dest_prefix that no pattern takes.
 */
export function applyTemplate(
  template: Template,
  sent: Record<string, unknown>,
  route: TemplateRoute,
  jobId: string,
): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const overrides: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(sent)) {
    if (route.parameterNames.has(name)) overrides[name] = value;
    else body[name] = value;
  }
  const allowed = template.overridable ?? [];
  const refused = Object.keys(overrides).filter((name) => !allowed.includes(name));
  if (refused.length > 0) {
    throw new TemplateUseError(
      `template ${template.name} does not let a submission override ${refused.join(", ")} (${
        allowed.length > 0 ? `it allows ${allowed.join(", ")}` : "it allows no override"
      })`,
    );
  }
  const prefix = typeof sent.dest_prefix === "string" ? sent.dest_prefix.replace(/\/+$/, "") : undefined;
  const values: Record<Placeholder, string | undefined> = {
    prefix,
    name: typeof sent.source_key === "string" ? sourceName(sent.source_key) : undefined,
    job_id: jobId,
  };
  let prefixUsed = false;
  const fill = (pattern: string, where: string): string =>
    pattern.replace(PLACEHOLDER, (whole, name: string) => {
      if (name === "prefix") prefixUsed = true;
      const value = values[name as Placeholder];
      if (value !== undefined) return value;
      if (name === "prefix") {
        throw new TemplateUseError(
          `template ${template.name}'s ${where} names {prefix}: give dest_prefix (or dest_key)`,
        );
      }
      return whole;
    });

  const parameters = structuredClone(template.parameters);
  fillNested(parameters, "parameters", fill);
  Object.assign(body, parameters, overrides);
  if (template.dest_bucket !== undefined && body.dest_bucket === undefined) {
    body.dest_bucket = template.dest_bucket;
  }
  if (template.dest_key !== undefined && sent.dest_key === undefined) {
    body.dest_key = fill(template.dest_key, "dest_key");
  }
  if (template.dest_prefix !== undefined && sent.dest_prefix === undefined) {
    body.dest_prefix = fill(template.dest_prefix, "dest_prefix");
  }
  if (!route.takesPrefix && sent.dest_prefix !== undefined) {
    if (!prefixUsed) {
      throw new TemplateUseError(
        `dest_prefix: template ${template.name} has no destination that names {prefix}; give dest_key`,
      );
    }
    delete body.dest_prefix;
  }
  return body;
}

/** Fills the patterns of every dest_key inside a template's parameters (a pipeline's steps), in place. */
function fillNested(value: unknown, where: string, fill: (pattern: string, where: string) => string): void {
  if (!isObject(value)) return;
  for (const [key, v] of Object.entries(value)) {
    const path = `${where}.${key}`;
    if (key === "dest_key" && typeof v === "string") value[key] = fill(v, path);
    else fillNested(v, path, fill);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** A template as the API answers it: what was stored, its name, version and where it comes from. */
export const TemplateSchema = Type.Object(
  {
    name: Type.String(),
    version: Type.Integer({
      minimum: 1,
      description: "Its version: each PUT makes the next; the jobs that used one record it",
    }),
    source: Enum(["api", "config"] as const, {
      description: "api: the client's own (PUT); config: the configuration's, every client's, read-only",
    }),
    type: Enum(JOB_TYPES),
    parameters: Type.Object({}, { additionalProperties: true, description: "As stored, defaults applied" }),
    overridable: Type.Optional(Type.Array(Type.String())),
    dest_bucket: Type.Optional(Type.String()),
    dest_key: Type.Optional(Type.String()),
    dest_prefix: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    created_at: Type.Optional(
      Type.String({ format: "date-time", description: "When this version was stored (api)" }),
    ),
  },
  { $id: "Template" },
);

/** The fields a submission names a template with (every submit route takes them). */
export const TemplateUseFields = {
  template: Type.Optional(
    Type.String({
      pattern: TEMPLATE_NAME_PATTERN,
      description:
        "Submit with this template (GET /templates): its parameters and destination, with what this body gives besides (source, destination, the parameters the template lets a submission override; dest_prefix fills a template's {prefix}). The job records `template: {name, version}`",
      [ERROR_MESSAGE]: "must be a template name (lower-case letters, digits, . _ -; up to 64), not {value}",
    }),
  ),
  template_version: Type.Optional(
    Type.Integer({
      minimum: 1,
      description: "With `template`: this version of it rather than its current one",
    }),
  ),
};

/**
 * A submission's body (or batch entry) with the rule that `template_version` goes with `template`,
 * in words OpenAPI 3.0 has (`not`), so that the document states it and a drawn body keeps it.
 */
export function withTemplateVersionRule<T extends TObject>(schema: T): T {
  const messages = (schema as Record<string, unknown>)[ERROR_MESSAGE];
  return {
    ...schema,
    not: { required: ["template_version"], not: { required: ["template"] } },
    [ERROR_MESSAGE]: {
      ...(messages !== null && typeof messages === "object" ? messages : {}),
      not: "template_version goes with template: name the template",
    },
  };
}
