// From the configuration's schema (schema.ts) to the resolved configuration, generically, in types
// and at run time alike: snake_case names become camelCase (`max_running_jobs` → `maxRunningJobs`),
// durations become milliseconds named with "Ms" (`lease` → `leaseMs`, and `timeouts` → `timeoutsMs`
// for an object of durations keyed by job type), objects keyed by data keep their keys, Kubernetes
// objects passed through keep theirs. The environment variables that override settings are read
// from the schema too.
import type { Static, TArray, TObject, TOptional, TRecord, TSchema } from "../typebox.js";
import { DURATION, ENV, KEYED_BY } from "./schema.js";

type Camel<S extends string> = S extends `${infer Head}_${infer Tail}`
  ? `${Head}${Capitalize<Camel<Tail>>}`
  : S;

type IsDuration<S> = S extends { [DURATION]: true } ? true : false;
type IsKeyed<S> = S extends { [KEYED_BY]: string } ? true : false;
/** An object keyed by data whose every value is a duration. */
type IsDurations<S> =
  IsKeyed<S> extends true ? (S extends TObject<infer P> ? IsDuration<P[keyof P]> : false) : false;

/** The resolved name of the setting `K` whose schema is `S`. */
export type SettingName<K extends string, S> =
  IsDuration<S> extends true ? `${Camel<K>}Ms` : IsDurations<S> extends true ? `${Camel<K>}Ms` : Camel<K>;

type Simplify<T> = { [K in keyof T]: T[K] } & {};
type Name<K, S, Keep> = Keep extends true ? K : K extends string ? SettingName<K, S> : K;
type ResolvedProperties<P, Keep> = Simplify<
  {
    [K in keyof P as P[K] extends TOptional<TSchema> ? never : Name<K, P[K], Keep>]: Resolved<P[K]>;
  } & {
    [K in keyof P as P[K] extends TOptional<TSchema> ? Name<K, P[K], Keep> : never]?: Resolved<P[K]>;
  }
>;

/** The resolved form of a value of schema `S` (with its defaults applied). */
export type Resolved<S> =
  IsDuration<S> extends true
    ? number
    : S extends TObject<infer P>
      ? keyof P extends never
        ? Record<string, unknown>
        : ResolvedProperties<P, IsKeyed<S>>
      : S extends TArray<infer Item>
        ? Array<Resolved<Item>>
        : S extends TRecord<TSchema, infer Value>
          ? Record<string, Resolved<Value>>
          : S extends TSchema
            ? Static<S>
            : never;

type Schema = TSchema & {
  properties?: Record<string, Schema>;
  patternProperties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: boolean | Schema;
  [ENV]?: string;
  [DURATION]?: boolean;
  [KEYED_BY]?: string;
};

const camel = (name: string) => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

const isDurations = (schema: Schema) =>
  schema[KEYED_BY] !== undefined &&
  Object.values(schema.properties ?? {}).every((property) => property[DURATION] === true);

/** The resolved name of a setting, as SettingName says in types. */
export function settingName(key: string, schema: TSchema): string {
  const s = schema as Schema;
  return s[DURATION] === true || isDurations(s) ? `${camel(key)}Ms` : camel(key);
}

/**
 * `value` (valid for `schema`, defaults applied) in its resolved form. `duration` turns a duration
 * at `path` into milliseconds (and names the setting when it cannot).
 */
export function resolveSettings(
  schema: TSchema,
  value: unknown,
  duration: (path: string[], value: string | number) => number,
  path: string[] = [],
): unknown {
  const s = schema as Schema;
  if (value === undefined) return undefined;
  if (s[DURATION] === true) return duration(path, value as string | number);
  if (Array.isArray(value)) {
    return s.items
      ? value.map((v, i) => resolveSettings(s.items!, v, duration, [...path, String(i)]))
      : value;
  }
  if (!value || typeof value !== "object") return value;
  const entries = Object.entries(value as Record<string, unknown>);
  if (s.properties) {
    const keep = s[KEYED_BY] !== undefined;
    return Object.fromEntries(
      entries.map(([key, v]) => {
        const property = s.properties![key];
        // Properties the schema does not declare (a pass-through Kubernetes object's) stay as they are.
        if (!property) return [key, v];
        return [
          keep ? key : settingName(key, property),
          resolveSettings(property, v, duration, [...path, key]),
        ];
      }),
    );
  }
  const values = s.patternProperties && Object.values(s.patternProperties)[0];
  if (values) {
    return Object.fromEntries(
      entries.map(([key, v]) => [key, resolveSettings(values, v, duration, [...path, key])]),
    );
  }
  return value;
}

/** A setting an environment variable overrides; a "list" is comma-separated. */
export interface EnvSetting {
  name: string;
  path: string[];
  kind: "string" | "integer" | "list";
}

/** The settings of `schema` that environment variables override, in schema order. */
export function envSettings(schema: TSchema, path: string[] = []): EnvSetting[] {
  const s = schema as Schema;
  const found: EnvSetting[] = [];
  const name = s[ENV];
  if (name) {
    const kind = s.type === "integer" ? "integer" : s.type === "array" ? "list" : "string";
    found.push({ name, path, kind });
  }
  for (const [key, property] of Object.entries(s.properties ?? {})) {
    found.push(...envSettings(property, [...path, key]));
  }
  return found;
}
