import type { TLiteralValue } from "../core/typebox.js";
import { Ajv, type ErrorObject } from "ajv";
import addFormatsModule from "ajv-formats";
import type { FastifySchemaCompiler } from "fastify";
import { ERROR_MESSAGE, type ErrorMessage } from "../core/jobs/bounds.js";
import { BUCKET_PATTERN, NO_CONTROL_PATTERN, WEBHOOK_URL_PATTERN } from "../core/jobs/records.js";
import { BITRATE_PATTERN, TIMESTAMP_PATTERN } from "../core/jobs/parameters.js";
import { clip, shown } from "../core/text.js";

// ajv-formats is CommonJS; under NodeNext its default export arrives wrapped.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;

// Bodies are taken as sent (a width of "100" is an error, not 100); query strings and path
// parameters are text by nature and are converted. `discriminator` lets a batch entry's `type`
// choose its schema, so its errors are those of its own type. The configuration's bounds are in the
// route schemas themselves (core/jobs/bounds.ts).
function makeAjv(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: false,
    useDefaults: true,
    coerceTypes: coerceTypes ? "array" : false,
    removeAdditional: false,
    strict: false,
    verbose: true,
    discriminator: true,
  });
  addFormats(ajv);
  return ajv;
}

const bodyAjv = makeAjv(false);
const otherAjv = makeAjv(true);

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
  (httpPart === "body" ? bodyAjv : otherAjv).compile(schema as object);

const PATTERN_TEXT: Record<string, string> = {
  [BUCKET_PATTERN]:
    "must be a valid bucket name (3-63 lowercase letters, digits, dots and hyphens; no adjacent dots, not an IP address, no xn--/sthree- prefix or -s3alias/--ol-s3 suffix)",
  [TIMESTAMP_PATTERN]: "must be HH:MM:SS, MM:SS or a number of seconds",
  [NO_CONTROL_PATTERN]: "must not contain control characters (NUL, tab, CR, LF, DEL, U+0080 to U+009F, …)",
  [BITRATE_PATTERN]: "must be a bitrate such as 128k",
  "^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$": "must be a hex colour such as #ffffff",
  "^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*$": "must be a language code such as en or pt-BR",
  [WEBHOOK_URL_PATTERN]:
    "must be an absolute http or https URL (a host name, IPv4 or [IPv6] address, an optional port up to 65535, no spaces)",
};

const PART_NAMES: Record<string, string> = {
  querystring: "query parameter ",
  params: "path parameter ",
  headers: "header ",
};

/** The sentence a schema gives for a keyword it refuses with (ERROR_MESSAGE), if any. */
function schemaMessage(error: ErrorObject): string | undefined {
  if (error.keyword === "type" || error.keyword === "required" || error.keyword === "additionalProperties") {
    return undefined;
  }
  // ajv types a schema's keywords as any; ours carry ERROR_MESSAGE as ErrorMessage.
  const schema: Record<string, ErrorMessage | undefined> | undefined = error.parentSchema;
  const text = schema?.[ERROR_MESSAGE];
  const message = typeof text === "string" ? text : text?.[error.keyword];
  const value = typeof error.data === "string" ? clip(error.data, 80) : shown(error.data, 80);
  return message?.replace("{value}", value);
}

/** The type the failing schema declares, when the value is not of it (and the error is not `type`). */
function typeOtherThanDeclared(error: ErrorObject): string | undefined {
  const declared = (error.parentSchema as { type?: unknown } | undefined)?.type;
  if (error.keyword === "type" || declared !== "object") return undefined;
  const isObject = error.data !== null && typeof error.data === "object" && !Array.isArray(error.data);
  return isObject ? undefined : "object";
}

/**
 * A required field missing from an object that also holds a field it does not know is reported as
 * that unknown field: `widht` explains the missing `width`, and `parameters: {…}` (a batch entry's
 * form) the missing fields of a single submit. ajv checks `required` first and stops there.
 */
function unknownBeforeMissing(error: ErrorObject): ErrorObject {
  if (error.keyword !== "required") return error;
  const schema = error.parentSchema as { additionalProperties?: unknown; properties?: object } | undefined;
  const data = error.data;
  if (schema?.additionalProperties !== false || !data || typeof data !== "object") return error;
  const known = new Set(Object.keys(schema.properties ?? {}));
  const unknown = Object.keys(data).find((key) => !known.has(key));
  if (unknown === undefined) return error;
  return { ...error, keyword: "additionalProperties", params: { additionalProperty: unknown } };
}

/** A single submit's body that holds its parameters the way a batch entry does. */
const NESTED_PARAMETERS =
  ': a single job takes its parameters at the top level of the body ({"width": 800, …}); "parameters": {…} is the form of a batch entry';

/** Turns the first validation error into one sentence that names the field. */
export function formatValidationError(errors: ErrorObject[], dataVar: string): Error {
  // A rule of an object that says itself what it wants (oneOf, not: which fields go together) is the
  // error to tell, rather than a missing field of one of its branches.
  const error = unknownBeforeMissing(
    errors.find((e) => e.keyword === "anyOf") ??
      errors.find((e) => (e.keyword === "oneOf" || e.keyword === "not") && schemaMessage(e) !== undefined) ??
      errors[0]!,
  );
  const path = error.instancePath
    .split("/")
    .filter(Boolean)
    .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce((acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part), "");
  const part = PART_NAMES[dataVar] ?? "";
  const name = (field: string) => `${part}${path ? `${path}.` : ""}${field}`;
  const subject = path ? `${part}${path}` : dataVar === "body" ? "request body" : dataVar;
  const custom = schemaMessage(error);
  // A rule that spans fields (anyOf, oneOf, …) can fail before the value's type is checked: an array
  // where an object belongs is a type error, not a broken rule.
  const wrongType = typeOtherThanDeclared(error);
  let message: string;
  switch (wrongType !== undefined ? "type" : custom === undefined ? error.keyword : "custom") {
    case "custom":
      // A rule of an object (which fields go together) says its fields itself.
      message =
        error.data !== null && typeof error.data === "object"
          ? `${path ? `${part}${path}: ` : ""}${custom}`
          : `${subject} ${custom}`;
      break;
    case "discriminator": {
      const tag = String(error.params.tag);
      const values = (
        (error.parentSchema as { oneOf?: Array<{ properties?: Record<string, { const?: TLiteralValue }> }> })
          .oneOf ?? []
      ).map((s) => s.properties?.[tag]?.const);
      message = `${name(tag)} must be one of ${values.join(", ")}`;
      break;
    }
    case "required":
      message = `${name(String(error.params.missingProperty))} is required`;
      break;
    case "additionalProperties": {
      const field = String(error.params.additionalProperty);
      message = `unknown field ${name(field)}${field === "parameters" && dataVar === "body" && !path ? NESTED_PARAMETERS : ""}`;
      break;
    }
    case "anyOf": {
      const choices = ((error.parentSchema as { anyOf?: Array<{ const?: TLiteralValue }> }).anyOf ?? []).map(
        (s) => s.const,
      );
      message = choices.every((c) => c !== undefined)
        ? `${subject} must be one of ${choices.join(", ")}`
        : `${subject} is not valid`;
      break;
    }
    case "const":
      // An enum of one value (TypeBox makes a union of one literal that literal).
      message = `${subject} must be ${String(error.params.allowedValue)}`;
      break;
    case "pattern":
      message = `${part}${path} ${PATTERN_TEXT[String(error.params.pattern)] ?? error.message}`;
      break;
    case "type": {
      const type = wrongType ?? String(error.params.type);
      message = path
        ? `${part}${path} must be ${article(type)}`
        : dataVar === "body"
          ? `request body must be a JSON ${type}`
          : `${dataVar} must be ${article(type)}`;
      break;
    }
    default:
      message = `${subject} ${error.message ?? "is not valid"}`;
  }
  const err = new Error(message) as Error & { statusCode: number; validation: true };
  err.statusCode = 400;
  err.validation = true;
  return err;
}

function article(type: string): string {
  const word =
    type === "integer"
      ? "an integer"
      : type === "object"
        ? "an object"
        : type === "array"
          ? "an array"
          : `a ${type}`;
  return word;
}
