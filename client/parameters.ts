// Each job type's parameters in words, from the job schemas (core/jobs/parameters.ts): what
// `submit --help` lists, so that the help can never disagree with what the API accepts.
import { PARAMETER_SCHEMAS } from "../core/jobs/parameters.js";
import { JOB_TYPES } from "../core/jobs/types.js";
import { typePath } from "./args.js";

interface Schema {
  type?: string;
  anyOf?: Schema[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  default?: unknown;
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
}

/** What a value may be: its choices, or its type with its range. */
function kind(schema: Schema): string {
  if (schema.anyOf) {
    if (schema.anyOf.every((s) => s.const !== undefined))
      return schema.anyOf.map((s) => String(s.const)).join("|");
    return [...new Set(schema.anyOf.map(kind))].join(" or ");
  }
  if (schema.type === "boolean") return "true|false";
  if ((schema.type === "integer" || schema.type === "number") && schema.minimum !== undefined) {
    return `${schema.type} ${schema.minimum}-${schema.maximum ?? "…"}`;
  }
  if (schema.type === "string" && schema.maxLength !== undefined) return `text, up to ${schema.maxLength}`;
  if (schema.type === "string") return "text";
  if (schema.type === "array") return "a JSON list";
  return schema.type ?? "value";
}

/** The parameters of every job type, one line each, as `submit --help` shows them. */
export function parametersHelp(): string {
  const blocks = JOB_TYPES.map((type) => {
    const schema = PARAMETER_SCHEMAS[type] as unknown as Schema;
    const required = new Set(schema.required ?? []);
    const rows = Object.entries(schema.properties ?? {}).map(([name, property]) => {
      const rule =
        property.default !== undefined
          ? `default ${typeof property.default === "string" ? property.default : JSON.stringify(property.default)}`
          : required.has(name)
            ? "required"
            : "";
      return [`${name}=<${kind(property)}>`, rule, property.description ?? ""];
    });
    const width = Math.max(...rows.map((r) => r[0]!.length));
    const ruleWidth = Math.max(...rows.map((r) => r[1]!.length));
    const lines = rows.map(([left, rule, text]) =>
      `    ${left!.padEnd(width)}  ${rule!.padEnd(ruleWidth)}  ${text}`.trimEnd(),
    );
    const note = schema.description ? `: ${schema.description}` : "";
    return [`  ${type} (${typePath(type)})${note}`, ...(lines.length > 0 ? lines : ["    (none)"])].join(
      "\n",
    );
  });
  return `\nparameters of each type, as key=value (docs/job-types.md):\n${blocks.join("\n")}\n`;
}
