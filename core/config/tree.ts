// The configuration as a tree of plain values, before it is validated: the file's ${VAR}
// substitutions, the settings the environment overrides, the overrides merged over both, and the
// names of paths in messages.
import { ConfigError } from "./errors.js";
import { ConfigFile } from "./schema.js";
import { envSettings } from "./settings.js";

export type Env = Record<string, string | undefined>;

/** A setting the environment gave: its variable, its path and the value it set. */
export type EnvSources = Array<{ name: string; path: string[]; value: unknown }>;

// Settings the environment overrides (schema.ts names each one's variable). An "integer" is read as
// a number is in the file (1e9 is 1000000000) and must be a whole one: 5.5, 0x10 or 12abc are
// refused rather than cut short to 5, 16 or 12; a "list" is comma-separated.
const ENV_OVERRIDES = envSettings(ConfigFile);

const NUMBER = /^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$/;

/** Sets every setting the environment overrides into `tree`; returns where each came from. */
export function applyEnvOverrides(tree: Record<string, unknown>, env: Env): EnvSources {
  const fromEnv: EnvSources = [];
  for (const { name, path, kind } of ENV_OVERRIDES) {
    const value = env[name];
    if (value === undefined || value === "") continue;
    if (kind === "integer" && !(NUMBER.test(value) && Number.isInteger(Number(value)))) {
      throw new ConfigError(
        `invalid configuration: ${formatPath(path)}: expected integer (got ${JSON.stringify(value)} from ${name})`,
      );
    }
    const setting =
      kind === "list"
        ? value
            .split(",")
            .map((v) => v.trim())
            .filter(Boolean)
        : kind === "integer"
          ? Number(value)
          : value;
    setPath(tree, path, setting);
    fromEnv.push({ name, path, value: setting });
  }
  return fromEnv;
}

// ${VAR} and ${VAR:-default} in every string of the file; $$ stands for a literal $.
export function substituteEnv(value: unknown, env: Env, path: string[]): unknown {
  if (typeof value === "string") {
    return value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (match, name, fallback) => {
      if (match === "$$") return "$";
      const found = env[name as string];
      if (found !== undefined && found !== "") return found;
      if (fallback !== undefined) return fallback as string;
      throw new ConfigError(
        `config ${formatPath(path)}: environment variable ${name} is not set (use \${${name}:-default} for a fallback)`,
      );
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => substituteEnv(v, env, [...path, String(i)]));
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, substituteEnv(v, env, [...path, k])]),
    );
  }
  return value;
}

// A setting substituted to "" (e.g. ${S3_ENDPOINT:-}) counts as unset; list entries are kept and
// filtered where they are used (empty API keys are ignored).
export function dropEmpty(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(dropEmpty);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== "" && v !== null)
        .map(([k, v]) => [k, dropEmpty(v)]),
    );
  }
  return value;
}

/** A path as messages name it: `server.clients[0].keys`. */
export function formatPath(path: string[]): string {
  return path.reduce(
    (acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part),
    "",
  );
}

export function getPath(tree: Record<string, unknown>, path: string[]): unknown {
  let node: unknown = tree;
  for (const key of path) {
    if (!node || typeof node !== "object") return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

function setPath(tree: Record<string, unknown>, path: string[], value: unknown): void {
  let node = tree;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (!next || typeof next !== "object") node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]!] = value;
}

export function mergeInto(target: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(source)) {
    if (value && typeof value === "object" && !Array.isArray(value)) {
      const existing = target[key];
      if (!existing || typeof existing !== "object") target[key] = {};
      mergeInto(target[key] as Record<string, unknown>, value as Record<string, unknown>);
    } else {
      target[key] = value;
    }
  }
}
