// A pipeline's steps as a graph: the pure rules a submission must keep (each step's parameters by
// its type's schema and check, inputs that exist and write a file, no cycle, media kinds that fit,
// a destination for every output, no two outputs on one key) and the order its runner follows, in
// waves: every step of a wave reads the source or a step of an earlier wave, so a wave's steps may
// run at once (the resources and the deadline are reckoned by waves, core/policy.ts; the processor
// starts a step as soon as its own input is ready). The pipeline's `check` (definition.ts) calls
// planPipeline, so every way of submitting a job validates a pipeline the same way.
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import type { SchemaBounds } from "../../core/jobs/bounds.js";
import { ERROR_MESSAGE, type ErrorMessage } from "../../core/jobs/patterns.js";
import { shown } from "../../core/text.js";
import type { MediaKind } from "../define.js";
import { JOB_DEFINITIONS } from "../registry.js";
import { PIPELINE_LIMITS, STEP_NAME_PATTERN } from "./definition.js";
import { ordered } from "./waves.js";

const PIPELINE_TYPE = "pipeline";

export interface PipelineStep {
  type: string;
  parameters?: Record<string, unknown>;
  input?: string;
  dest_bucket?: string;
  dest_key?: string;
}

export interface PipelineParameters {
  steps: Record<string, PipelineStep>;
  keep_partial?: boolean;
  dest_bucket?: string;
  dest_prefix?: string;
}

/** The order a pipeline runs in: waves of step names, each wave after the one before. */
export interface PipelinePlan {
  waves: string[][];
}

type Definition = (typeof JOB_DEFINITIONS)[number];
const definitionByName = (name: string): Definition | undefined =>
  JOB_DEFINITIONS.find((d) => d.name === name && d.name !== PIPELINE_TYPE);

/** The types a step may be: every type of the registry but the pipeline. */
export function stepTypes(): string[] {
  return JOB_DEFINITIONS.map((d) => d.name).filter((name) => name !== PIPELINE_TYPE);
}

/** A step writes a file another step can read: an output, and one object rather than many. */
export const writesFile = (d: Definition) => d.media.output !== null && !("entryKey" in d && d.entryKey);
/** A step writes something (a file, or objects under a prefix). */
export const writes = (d: Definition) => d.media.output !== null;

const accepts = (wanted: MediaKind, given: MediaKind) =>
  wanted === "any" || given === "any" || wanted === given;

/** The prefix a pipeline writes its steps' outputs under, without a trailing `/`. */
export const trimPrefix = (prefix: string) => prefix.replace(/\/+$/, "");

// ajv-formats is CommonJS; under NodeNext its default export arrives wrapped.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;
// The API's own options (api/validation.ts): values as sent, defaults applied, batch-style choices.
const ajv = addFormats(
  new Ajv({ allErrors: false, useDefaults: true, coerceTypes: false, strict: false, verbose: true }),
);
const validators = new WeakMap<SchemaBounds, Map<string, ValidateFunction>>();

function validatorOf(d: Definition, bounds: SchemaBounds): ValidateFunction {
  let byType = validators.get(bounds);
  if (!byType) validators.set(bounds, (byType = new Map<string, ValidateFunction>()));
  let validate = byType.get(d.name);
  if (!validate) byType.set(d.name, (validate = ajv.compile(d.parameters(bounds) as object)));
  return validate;
}

/** The error to tell: a rule of an object that says what it wants (one of these fields) first, as the API does. */
function firstError(errors: ErrorObject[]): ErrorObject {
  const says = (e: ErrorObject) =>
    (e.keyword === "anyOf" || e.keyword === "oneOf") && e.parentSchema?.[ERROR_MESSAGE] !== undefined;
  return errors.find(says) ?? errors[0]!;
}

/** A refusal of a step's parameters, as one sentence naming the field. */
function describe(error: ErrorObject, where: string): string {
  const path = error.instancePath.split("/").filter(Boolean).join(".");
  const field = [where, path].filter(Boolean).join(".");
  // ajv types a schema's keywords as any; ours carry ERROR_MESSAGE as ErrorMessage (as api/validation.ts reads them).
  const schema: Record<string, ErrorMessage | undefined> | undefined = error.parentSchema;
  const custom = schema?.[ERROR_MESSAGE];
  const text = typeof custom === "string" ? custom : custom?.[error.keyword];
  if (text) return `${field}: ${text.replace("{value}", shown(error.data, 80))}`;
  if (error.keyword === "required") return `${field}.${String(error.params.missingProperty)}: is required`;
  if (error.keyword === "additionalProperties")
    return `${field}: unknown field ${String(error.params.additionalProperty)}`;
  if (error.keyword === "enum")
    return `${field}: must be one of ${(error.params.allowedValues as unknown[]).join(", ")}`;
  return `${field}: ${error.message ?? "is not valid"}`;
}

/**
 * Checks a pipeline's parameters and orders its steps: the waves, or the sentence (naming the step
 * and its field) a 400 says. Pure; `bounds` are the configuration's, as a single submission's.
 */
export function planPipeline(
  parameters: Record<string, unknown>,
  bounds: SchemaBounds,
): PipelinePlan | string {
  const steps = parameters.steps as Record<string, PipelineStep> | undefined;
  if (!steps || typeof steps !== "object" || Array.isArray(steps)) return "steps: must be an object";
  const names = Object.keys(steps);
  if (names.length < PIPELINE_LIMITS.minSteps || names.length > PIPELINE_LIMITS.maxSteps)
    return `steps: must name ${PIPELINE_LIMITS.minSteps} to ${PIPELINE_LIMITS.maxSteps} steps, not ${names.length}`;
  const nameRule = new RegExp(STEP_NAME_PATTERN);
  const defs = new Map<string, Definition>();
  for (const name of names) {
    if (!nameRule.test(name))
      return `steps: step name ${shown(name, 40)} must be a lowercase letter, then up to 31 lowercase letters, digits, _ or -`;
    const step = steps[name]!;
    const where = `steps.${name}`;
    if (step.type === PIPELINE_TYPE) return `${where}.type: a pipeline cannot be a step of a pipeline`;
    const d = definitionByName(step.type);
    if (!d) return `${where}.type: ${shown(step.type, 40)} is not a job type`;
    defs.set(name, d);
    const given = structuredClone(step.parameters ?? {});
    const validate = validatorOf(d, bounds);
    if (!validate(given)) return describe(firstError(validate.errors!), `${where}.parameters`);
    const refused = "check" in d && d.check ? d.check(given, bounds) : undefined;
    if (refused) return `${where}.parameters.${refused}`;
  }

  // Inputs: another step, which writes one file; no step reads itself.
  for (const name of names) {
    const input = steps[name]!.input;
    if (input === undefined) continue;
    if (input === name) return `steps.${name}.input: a step cannot read its own output`;
    const from = defs.get(input);
    if (!from) return `steps.${name}.input: no step is named ${shown(input, 40)}`;
    if (!writesFile(from)) {
      const what = from.media.output === null ? "writes no file" : "writes many objects under a prefix";
      return `steps.${name}.input: step ${input} (${from.name}) ${what}, so no step can read its output`;
    }
    const kind = from.media.output!;
    const d = defs.get(name)!;
    if (!accepts(d.media.source, kind))
      return `steps.${name}.input: step ${input} (${from.name}) writes ${article(kind)}, and ${d.name} reads ${article(d.media.source)}`;
  }

  // Steps reading the source agree on what it is.
  let sourceKind: { kind: MediaKind; by: string } | undefined;
  for (const name of names) {
    if (steps[name]!.input !== undefined) continue;
    const kind = defs.get(name)!.media.source;
    if (kind === "any") continue;
    if (sourceKind && sourceKind.kind !== kind)
      return `steps.${name}: ${defs.get(name)!.name} reads ${article(kind)} source, but step ${sourceKind.by} (${defs.get(sourceKind.by)!.name}) reads ${article(sourceKind.kind)}: the steps reading the source must agree on its kind`;
    sourceKind ??= { kind, by: name };
  }

  const destination = destinations(parameters, steps, defs);
  if (typeof destination === "string") return destination;

  const order = ordered(names, steps);
  if (order.left.length > 0) return circle(order.left, steps);
  return { waves: order.waves };
}

/**
 * The object a step writes its one file to: the step's dest_key, else `{dest_prefix}/{name}.{extension}`
 * (its output's extension, processor.ts's extensionOf), in the step's dest_bucket or the
 * pipeline's. Undefined for no such step, or one with nowhere to write (planPipeline refuses those).
 */
export function stepOutput(
  parameters: PipelineParameters,
  name: string,
  extension: string,
): { bucket: string; key: string } | undefined {
  const step = parameters.steps[name];
  const bucket = step?.dest_bucket ?? parameters.dest_bucket;
  if (!step || bucket === undefined) return undefined;
  if (step.dest_key !== undefined) return { bucket, key: step.dest_key };
  if (parameters.dest_prefix === undefined) return undefined;
  return { bucket, key: `${trimPrefix(parameters.dest_prefix)}/${name}.${extension}` };
}

/** Where each writing step writes; a sentence when one has nowhere to write or two collide. */
function destinations(
  parameters: Record<string, unknown>,
  steps: Record<string, PipelineStep>,
  defs: Map<string, Definition>,
): string | undefined {
  const prefix = typeof parameters.dest_prefix === "string" ? trimPrefix(parameters.dest_prefix) : undefined;
  const jobBucket = typeof parameters.dest_bucket === "string" ? parameters.dest_bucket : undefined;
  // Per bucket: the exact keys given, and the prefixes written under (a step's own default key is
  // `{prefix}/{name}.{ext}`, a prefix writer's `{prefix}/{name}/`).
  const claims: Array<{ bucket: string; key?: string; under?: string; step: string }> = [];
  for (const [name, step] of Object.entries(steps)) {
    const d = defs.get(name)!;
    const where = `steps.${name}`;
    if (!writes(d)) {
      if (step.dest_bucket !== undefined || step.dest_key !== undefined)
        return `${where}: ${d.name} writes no file, so it takes no dest_bucket or dest_key`;
      continue;
    }
    const bucket = step.dest_bucket ?? jobBucket;
    if (bucket === undefined)
      return `${where}: ${d.name} writes a file: give the pipeline's dest_bucket or the step's dest_bucket`;
    if (step.dest_key === undefined && prefix === undefined)
      return `${where}: ${d.name} writes a file: give the pipeline's dest_prefix or the step's dest_key`;
    if (writesFile(d)) {
      if (step.dest_key !== undefined) claims.push({ bucket, key: step.dest_key, step: name });
      else claims.push({ bucket, under: `${prefix}/${name}.`, step: name });
    } else {
      claims.push({ bucket, under: `${trimPrefix(step.dest_key ?? `${prefix}/${name}`)}/`, step: name });
    }
  }
  for (let i = 0; i < claims.length; i++) {
    for (let j = i + 1; j < claims.length; j++) {
      const [a, b] = [claims[i]!, claims[j]!];
      if (a.bucket !== b.bucket || !collide(a, b)) continue;
      return `steps.${b.step}: its output would overwrite step ${a.step}'s (s3://${a.bucket}/${a.key ?? `${a.under}…`}): give it another dest_key`;
    }
  }
  return undefined;
}

function collide(a: { key?: string; under?: string }, b: { key?: string; under?: string }): boolean {
  if (a.key !== undefined && b.key !== undefined) return a.key === b.key;
  if (a.key !== undefined) return a.key.startsWith(b.under!);
  if (b.key !== undefined) return b.key.startsWith(a.under!);
  return a.under!.startsWith(b.under!) || b.under!.startsWith(a.under!);
}

/**
 * The waves of a pipeline's step types, in order, without checking anything else: what its
 * resources are reckoned from (core/policy.ts). Steps in a circle are left out.
 */
export function stepTypeWaves(steps: Record<string, PipelineStep>): string[][] {
  return ordered(Object.keys(steps), steps).waves.map((wave) => wave.map((name) => steps[name]!.type));
}

/** The sentence naming a circle of inputs, found from the steps Kahn's order left over. */
function circle(left: string[], steps: Record<string, PipelineStep>): string {
  // Every step left reads another step left: following inputs comes round to a step seen before.
  let at = left[0]!;
  const seen: string[] = [];
  while (!seen.includes(at)) {
    seen.push(at);
    at = steps[at]!.input!;
  }
  const circle = seen.slice(seen.indexOf(at));
  return `steps.${circle[0]}.input: the steps ${[...circle, circle[0]].join(" → ")} read each other in a circle`;
}

function article(kind: MediaKind): string {
  return kind === "any"
    ? "any media"
    : kind === "image"
      ? "an image"
      : kind === "audio"
        ? "audio"
        : `a ${kind}`;
}
