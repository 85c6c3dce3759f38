import { Type } from "../typebox.js";

/** A string enum as TypeBox expresses it (a union of literals), for validation and OpenAPI alike. */
export const Enum = <T extends string>(values: readonly T[], options: Record<string, unknown> = {}) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    options,
  );
