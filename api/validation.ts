import { Ajv, type ErrorObject } from "ajv";
import addFormatsModule from "ajv-formats";
import type { FastifySchemaCompiler } from "fastify";
import { BUCKET_PATTERN, NO_CONTROL_PATTERN } from "../core/jobs/records.js";
import { TIMESTAMP_PATTERN } from "../core/jobs/parameters.js";

// ajv-formats is CommonJS; under NodeNext its default export arrives wrapped.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;

// Bodies are taken as sent (a width of "100" is an error, not 100); query strings and path
// parameters are text by nature and are converted.
function makeAjv(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: false,
    useDefaults: true,
    coerceTypes: coerceTypes ? "array" : false,
    removeAdditional: false,
    strict: false,
    verbose: true,
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
  [NO_CONTROL_PATTERN]: "must not contain control characters (NUL, tab, CR, LF, …)",
  "^[1-9]\\d{0,3}k$": "must be a bitrate such as 128k",
  "^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$": "must be a hex colour such as #ffffff",
  "^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*$": "must be a language code such as en or pt-BR",
  "^[Hh][Tt][Tt][Pp][Ss]?://": "must be an http or https URL",
};

const PART_NAMES: Record<string, string> = {
  querystring: "query parameter ",
  params: "path parameter ",
  headers: "header ",
};

/** Turns the first validation error into one sentence that names the field. */
export function formatValidationError(errors: ErrorObject[], dataVar: string): Error {
  const error = errors.find((e) => e.keyword === "anyOf") ?? errors[0]!;
  const path = error.instancePath
    .split("/")
    .filter(Boolean)
    .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce((acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part), "");
  const part = PART_NAMES[dataVar] ?? "";
  const name = (field: string) => `${part}${path ? `${path}.` : ""}${field}`;
  let message: string;
  switch (error.keyword) {
    case "required":
      message = `${name(String(error.params.missingProperty))} is required`;
      break;
    case "additionalProperties":
      message = `unknown field ${name(String(error.params.additionalProperty))}`;
      break;
    case "anyOf": {
      const choices = ((error.parentSchema as { anyOf?: Array<{ const?: unknown }> }).anyOf ?? []).map(
        (s) => s.const,
      );
      const subject = path ? `${part}${path}` : dataVar === "body" ? "request body" : dataVar;
      message = choices.every((c) => c !== undefined)
        ? `${subject} must be one of ${choices.join(", ")}`
        : `${subject} is not valid`;
      break;
    }
    case "pattern":
      message = `${part}${path} ${PATTERN_TEXT[String(error.params.pattern)] ?? error.message}`;
      break;
    case "type":
      message = path
        ? `${part}${path} must be ${article(String(error.params.type))}`
        : dataVar === "body"
          ? `request body must be a JSON ${String(error.params.type)}`
          : `${dataVar} must be ${article(String(error.params.type))}`;
      break;
    default:
      message = `${path ? `${part}${path}` : dataVar === "body" ? "request body" : dataVar} ${error.message ?? "is not valid"}`;
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
