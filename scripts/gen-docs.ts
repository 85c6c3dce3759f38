// Generated documentation (npm run docs; npm run docs:check says whether it is up to date):
// - the settings of docs/configuration.md, between its GENERATED markers, from the configuration's
//   schema (core/config/schema.ts): each setting's key, environment variable, default, allowed
//   values and description;
// - the chart's values per job type (values.yaml's runner.resources, runner.timeouts and
//   pool.classes; values.schema.json's maps of them and of runner.maxRunningJobsPerType), one entry
//   for each type of the registry (jobs/registry.ts) with the configuration schema's defaults;
// - charts/media-service/README.md from the chart's values.yaml `# --` comments, by helm-docs
//   (built and cached by scripts/k8s/build-helm-docs.sh).
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { format, resolveConfig } from "prettier";
import { Value } from "../core/typebox.js";
import { ConfigFile, DURATION, ENV, KEYED_BY } from "../core/config/schema.js";
import { JOB_TYPES } from "../core/jobs/types.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const CONFIGURATION_DOC = join(ROOT, "docs/configuration.md");
export const CHART = join(ROOT, "charts/media-service");

export const BEGIN = "<!-- BEGIN GENERATED: npm run docs writes the settings from core/config/schema.ts -->";
export const END = "<!-- END GENERATED -->";

interface Schema {
  type?: string;
  title?: string;
  description?: string;
  default?: unknown;
  const?: unknown;
  anyOf?: Schema[];
  properties?: Record<string, Schema>;
  patternProperties?: Record<string, Schema>;
  items?: Schema;
  required?: string[];
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  [ENV]?: string;
  [DURATION]?: boolean;
  [KEYED_BY]?: string;
}

/** One row of the settings tables. */
export interface SettingRow {
  key: string;
  schema: Schema;
  env?: string;
  default: string;
  allowed: string;
  description: string;
}

const code = (value: unknown) => `\`${typeof value === "string" ? value : JSON.stringify(value)}\``;

/** Compact YAML-like text of a default value: {requests: {cpu: 250m}}. */
function inline(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(inline).join(", ")}]`;
  if (value && typeof value === "object") {
    return `{${Object.entries(value)
      .map(([k, v]) => `${k}: ${inline(v)}`)
      .join(", ")}}`;
  }
  return String(value);
}

function allowed(s: Schema): string {
  if (s[DURATION]) return "duration";
  if (s.anyOf?.every((v) => v.const !== undefined)) return s.anyOf.map((v) => code(v.const)).join(", ");
  const bounds = (unit: string) =>
    s.minimum !== undefined && s.maximum !== undefined
      ? `${unit} ${s.minimum}–${s.maximum}`
      : s.minimum !== undefined
        ? `${unit} ≥ ${s.minimum}`
        : unit;
  switch (s.type) {
    case "integer":
      return bounds("integer");
    case "number":
      return bounds("number");
    case "boolean":
      return "`true`, `false`";
    case "string":
      return (
        s.title ??
        (s.pattern ? `string matching ${code(s.pattern)}` : s.minLength ? "non-empty string" : "string")
      );
    case "array":
      return s.items?.properties
        ? "list of objects"
        : `list of ${allowed(s.items ?? {}).replace(/[a-z]$/, "$&s")}`;
    case "object":
      if (s.patternProperties) {
        const values = Object.values(s.patternProperties)[0]!;
        if (values.properties) return "map of objects";
        // A map of free values (a template's parameters): whatever their schema there takes.
        return values.type === undefined ? "map of values" : "map of strings";
      }
      return "object";
    default:
      return "";
  }
}

function defaultText(s: Schema, required: boolean): string {
  if (s.default === undefined) return required ? "required" : "unset";
  if (s.type === "object" && s.properties) return "";
  if (typeof s.default === "object") return code(inline(s.default));
  return code(s.default);
}

/** Defaults of an object keyed by job type, grouped: `image_resize`, `image_optimize`: `2m`. */
function keyedDefaults(s: Schema): string {
  const groups = new Map<string, string[]>();
  for (const [key, property] of Object.entries(s.properties ?? {})) {
    const defaults = property.properties ? defaultsOf(property) : property.default;
    // An object of settings none of which has a default (labels, a queue) is unset, like a value.
    const unset =
      defaults === undefined ||
      (typeof defaults === "object" &&
        defaults !== null &&
        Object.values(defaults).every((v) => v === undefined));
    const text = unset ? "unset" : inline(defaults);
    groups.set(text, [...(groups.get(text) ?? []), key]);
  }
  if ([...groups.keys()].every((text) => text === "unset")) return "unset";
  return [...groups]
    .map(([text, keys]) => `${keys.map((k) => code(k)).join(", ")}: ${code(text)}`)
    .join("; ");
}

function defaultsOf(s: Schema): unknown {
  if (!s.properties) return s.default;
  return Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k, defaultsOf(v)]));
}

const described = (s: Schema | undefined) =>
  Boolean(s?.properties && Object.values(s.properties).some((p) => p.description));

/** The rows of one object's settings, depth first; `prefix` is its key path. */
export function settingRows(schema: Schema, prefix: string): SettingRow[] {
  const rows: SettingRow[] = [];
  for (const [name, s] of Object.entries(schema.properties ?? {})) {
    const key = prefix ? `${prefix}.${name}` : name;
    const required = schema.required?.includes(name) ?? false;
    const row = (rowKey: string, defaultValue: string): SettingRow => ({
      key: rowKey,
      schema: s,
      ...(s[ENV] ? { env: s[ENV] } : {}),
      default: defaultValue,
      allowed: allowed(s),
      description: s.description ?? "",
    });
    if (s[KEYED_BY]) {
      const first = Object.values(s.properties ?? {})[0] ?? {};
      rows.push({ ...row(`${key}.<type>`, keyedDefaults(s)), allowed: allowed(first) });
    } else if (s.type === "object" && s.properties && Object.keys(s.properties).length > 0) {
      rows.push(row(key, ""));
      rows.push(...settingRows(s, key));
    } else if (s.type === "array" && described(s.items)) {
      rows.push(row(key, defaultText(s, required)));
      rows.push(...settingRows(s.items!, `${key}[]`));
    } else if (s.patternProperties && described(Object.values(s.patternProperties)[0])) {
      rows.push(row(key, defaultText(s, required)));
      rows.push(...settingRows(Object.values(s.patternProperties)[0]!, `${key}.<name>`));
    } else {
      rows.push(row(key, defaultText(s, required)));
    }
  }
  return rows;
}

const cell = (text: string) => text.replace(/\|/g, "\\|");

function table(rows: SettingRow[]): string {
  const lines = [
    "| setting | environment | default | allowed values | description |",
    "| --- | --- | --- | --- | --- |",
  ];
  for (const r of rows) {
    const env = r.env ? `${code(r.env)}${r.schema.type === "array" ? " (comma-separated)" : ""}` : "";
    lines.push(`| ${[code(r.key), env, r.default, r.allowed, r.description].map(cell).join(" | ")} |`);
  }
  return lines.join("\n");
}

/** A paragraph in lines of at most 100 characters, as the pages are written. */
function wrap(text: string, width = 100): string {
  const lines: string[] = [];
  for (const word of text.split(" ")) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + 1 + word.length <= width)
      lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(word);
  }
  return lines.join("\n");
}

/** The generated part of docs/configuration.md (before formatting). */
export function configurationReference(): string {
  const root = ConfigFile as unknown as Schema;
  const types = JOB_TYPES.map((t) => `\`${t}\``).join(", ");
  const parts: string[] = [
    wrap(
      `A key with \`<type>\` stands for each job type (${types}); \`[]\` for each entry of a list, \`<name>\` for each entry of a map.`,
    ),
  ];
  const topLevel: Record<string, Schema> = {};
  for (const [name, section] of Object.entries(root.properties ?? {})) {
    if (section.type === "object" && section.properties) {
      parts.push(`### \`${name}\``, section.description ?? "", table(settingRows(section, name)));
    } else {
      topLevel[name] = section;
    }
  }
  parts.push("### Other settings", table(settingRows({ properties: topLevel }, "")));
  return parts.filter(Boolean).join("\n\n");
}

/** `doc` with its generated region written anew, formatted as prettier formats the repository. */
export async function updateConfigurationDoc(doc: string): Promise<string> {
  const begin = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`docs/configuration.md lacks the markers ${BEGIN} … ${END}`);
  const text = `${doc.slice(0, begin + BEGIN.length)}\n\n${configurationReference()}\n\n${doc.slice(end)}`;
  const options = (await resolveConfig(CONFIGURATION_DOC)) ?? {};
  return format(text, { ...options, parser: "markdown" });
}

/** The configuration's defaults (the file with nothing in it, every default applied). */
function configDefaults(): {
  executor: { timeouts: Record<string, string>; pool: { classes: Record<string, string> } };
  kubernetes: {
    resources: Record<
      string,
      Record<"requests" | "limits", { cpu: string; memory: string; ephemeral_storage: string }>
    >;
  };
} {
  return Value.Default(ConfigFile, {}) as ReturnType<typeof configDefaults>;
}

/** A YAML scalar as values.yaml writes it: quoted where YAML would read a number. */
const yamlScalar = (value: string) => (/^[0-9.]+$/.test(value) ? JSON.stringify(value) : value);

/** values.yaml with the entries under `path` (a map of job types) written anew, one line each. */
function replaceYamlBlock(text: string, path: string[], entries: string[]): string {
  const lines = text.split("\n");
  let at = -1;
  for (let depth = 0, from = 0; depth < path.length; depth++) {
    const indent = " ".repeat(depth * 2);
    at = lines.findIndex((line, i) => i >= from && line === `${indent}${path[depth]}:`);
    if (at < 0) throw new Error(`values.yaml has no ${path.slice(0, depth + 1).join(".")} map`);
    from = at + 1;
  }
  const indent = " ".repeat(path.length * 2);
  let end = at + 1;
  while (end < lines.length && lines[end]!.startsWith(indent)) end++;
  lines.splice(at + 1, end - at - 1, ...entries.map((entry) => `${indent}${entry}`));
  return lines.join("\n");
}

/** The chart's values.yaml with its per-type maps written from the registry and the schema's defaults. */
export function chartValues(text: string): string {
  const defaults = configDefaults();
  const resources = (type: string) => {
    const r = defaults.kubernetes.resources[type]!;
    const list = (l: { cpu: string; memory: string; ephemeral_storage: string }) =>
      `{ cpu: ${yamlScalar(l.cpu)}, memory: ${yamlScalar(l.memory)}, ephemeral_storage: ${yamlScalar(l.ephemeral_storage)} }`;
    return `${type}: { requests: ${list(r.requests)}, limits: ${list(r.limits)} }`;
  };
  let out = replaceYamlBlock(text, ["runner", "resources"], JOB_TYPES.map(resources));
  out = replaceYamlBlock(
    out,
    ["runner", "timeouts"],
    JOB_TYPES.map((t) => `${t}: ${yamlScalar(defaults.executor.timeouts[t]!)}`),
  );
  return replaceYamlBlock(
    out,
    ["pool", "classes"],
    JOB_TYPES.map((t) => `${t}: ${defaults.executor.pool.classes[t]}`),
  );
}

/** values.schema.json's maps keyed by job type. */
const SCHEMA_MAPS = [
  ["runner", "resources"],
  ["runner", "timeouts"],
  ["runner", "maxRunningJobsPerType"],
  ["pool", "classes"],
];

/**
 * The chart's values.schema.json with its per-type maps holding every type of the registry, each
 * with the schema of the map's first entry.
 */
export function chartSchema(text: string): string {
  const schema = JSON.parse(text) as Schema;
  for (const path of SCHEMA_MAPS) {
    const map = path.reduce<Schema | undefined>((node, key) => node?.properties?.[key], schema);
    const entry = Object.values(map?.properties ?? {})[0];
    if (!map || !entry) throw new Error(`values.schema.json has no ${path.join(".")} map`);
    map.properties = Object.fromEntries(JOB_TYPES.map((type) => [type, entry]));
  }
  return `${JSON.stringify(schema, null, 2)}\n`;
}

/** helm-docs, built once and cached. */
export function helmDocsBin(): string {
  return execFileSync("bash", [join(ROOT, "scripts/k8s/build-helm-docs.sh")], {
    env: { ...process.env, MEDIA_HELM_DOCS_PRINT_BIN: "1" },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  }).trim();
}

const HELM_DOCS_ARGS = [
  "--chart-search-root",
  CHART,
  "--template-files",
  "README.md.gotmpl",
  "--sort-values-order",
  "file",
  "--log-level",
  "warning",
];

/**
 * The chart's README as helm-docs writes it from values.yaml. (Its strict mode wants a comment on
 * every key of every map; test/unit/chart-drift.test.ts checks instead that each value has a
 * description, on itself or on a map documented as a whole.)
 */
export function chartReadme(bin = helmDocsBin()): string {
  const readme = execFileSync(bin, [...HELM_DOCS_ARGS, "--dry-run"], { encoding: "utf8", cwd: CHART });
  if (!readme.includes("## Values")) throw new Error(`helm-docs wrote no values table:\n${readme}`);
  return readme;
}

async function main(): Promise<void> {
  const check = process.argv.includes("--check");
  const stale: string[] = [];
  const doc = readFileSync(CONFIGURATION_DOC, "utf8");
  const updated = await updateConfigurationDoc(doc);
  if (updated !== doc) {
    if (check) stale.push("docs/configuration.md");
    else writeFileSync(CONFIGURATION_DOC, updated);
  }
  for (const [file, generate] of [
    ["values.yaml", chartValues],
    ["values.schema.json", chartSchema],
  ] as const) {
    const path = join(CHART, file);
    const current = readFileSync(path, "utf8");
    const written = generate(current);
    if (written !== current) {
      if (check) stale.push(`charts/media-service/${file}`);
      else writeFileSync(path, written);
    }
  }
  const readmePath = join(CHART, "README.md");
  const readme = chartReadme();
  let current = "";
  try {
    current = readFileSync(readmePath, "utf8");
  } catch {
    // Not written yet.
  }
  if (readme !== current) {
    if (check) stale.push("charts/media-service/README.md");
    else writeFileSync(readmePath, readme);
  }
  if (stale.length > 0) {
    console.error(`out of date: ${stale.join(", ")}; run npm run docs and commit the result`);
    process.exit(1);
  }
  console.log(check ? "docs are up to date" : "docs written");
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
