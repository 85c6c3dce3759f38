// JSON Schema reading shared by the chart's drift tests: the chart's values.schema.json and the
// configuration's schema, walked by value path.
import type { DURATION } from "../../core/config/schema.js";

export type Tree = Record<string, unknown>;
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  patternProperties?: Record<string, JsonSchema>;
  additionalProperties?: boolean | JsonSchema;
  default?: unknown;
  [DURATION]?: boolean;
}

export const isTree = (v: unknown): v is Tree => Boolean(v) && typeof v === "object" && !Array.isArray(v);

export /** The schema of a value path ("*" for any key of a map), or undefined where it declares none. */
function schemaAt(schema: JsonSchema, path: string[]): JsonSchema | undefined {
  let node: JsonSchema | undefined = schema;
  for (const key of path) {
    if (!node) return undefined;
    const declared: JsonSchema | undefined = key === "*" ? undefined : node.properties?.[key];
    const pattern: JsonSchema | undefined =
      node.patternProperties && Object.values(node.patternProperties)[0];
    const additional: JsonSchema | undefined =
      typeof node.additionalProperties === "object" ? node.additionalProperties : undefined;
    // A map the schema leaves open (no properties, additionalProperties not false) takes any key.
    const open: JsonSchema | undefined =
      !node.properties && !node.patternProperties && node.additionalProperties !== false ? {} : undefined;
    node = declared ?? pattern ?? additional ?? open;
  }
  return node;
}
