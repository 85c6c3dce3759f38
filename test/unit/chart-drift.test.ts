// The Helm chart against itself and against the configuration's schema: values.yaml, the
// hand-written values.schema.json and the templates declare, use and document the same values; the
// chart's defaults rendered into the service's config.yaml are checked with helm in
// test/k8s/chart-config.test.ts. Each check also runs on a drifted copy, to show it fails.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { Ajv } from "ajv";
import { parse as parseYaml, parseDocument, isMap, isPair, isScalar, visit } from "yaml";
import { CHART } from "../k8s/support/helm.js";
import { isTree, schemaAt, type JsonSchema, type Tree } from "../support/json-schema.js";

const VALUES_TEXT = readFileSync(join(CHART, "values.yaml"), "utf8");
const VALUES = parseYaml(VALUES_TEXT) as Tree;
const SCHEMA = JSON.parse(readFileSync(join(CHART, "values.schema.json"), "utf8")) as JsonSchema & Tree;
const TEMPLATES = (() => {
  const dir = join(CHART, "templates");
  const files: string[] = [];
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(d, entry.name));
      else files.push(readFileSync(join(d, entry.name), "utf8"));
    }
  };
  walk(dir);
  return files.join("\n");
})();
const CI_VALUES = readdirSync(join(CHART, "ci")).map((name) => ({
  name,
  values: parseYaml(readFileSync(join(CHART, "ci", name), "utf8")) as Tree,
}));

/** Helm's merge of values files: maps merge, everything else is replaced. */
function merge(base: Tree, over: Tree): Tree {
  const out: Tree = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = isTree(v) && isTree(out[k]) ? merge(out[k], v) : v;
  return out;
}

/** Key paths of a values tree: every key of every map (a list, or an empty map, ends a path). */
function keyPaths(tree: Tree, prefix: string[] = []): string[][] {
  return Object.entries(tree).flatMap(([k, v]) => {
    const path = [...prefix, k];
    return isTree(v) && Object.keys(v).length > 0 ? [path, ...keyPaths(v, path)] : [path];
  });
}
const leaves = (tree: Tree) =>
  keyPaths(tree).filter((path) => {
    const v = path.reduce<unknown>((node, k) => (node as Tree)[k], tree);
    return !(isTree(v) && Object.keys(v).length > 0);
  });

/**
 * Problems between values.yaml and values.schema.json, both ways. Below a value documented as a
 * whole (an object passed through, such as a container's resources) the schema may declare fields
 * values.yaml leaves out.
 */
function declarationProblems(values: Tree, schema: JsonSchema, wholes: Set<string>): string[] {
  const problems: string[] = [];
  for (const path of keyPaths(values)) {
    if (!schemaAt(schema, path))
      problems.push(`${path.join(".")}: in values.yaml, not in values.schema.json`);
  }
  const walk = (s: JsonSchema, v: Tree, prefix: string[]) => {
    for (const [k, sub] of Object.entries(s.properties ?? {})) {
      const path = [...prefix, k];
      if (path.join(".") === "global") continue; // Helm's own, for subcharts.
      if (!(k in v)) problems.push(`${path.join(".")}: in values.schema.json, not in values.yaml`);
      else if (isTree(v[k]) && !wholes.has(path.join("."))) walk(sub, v[k], path);
    }
  };
  walk(schema, values, []);
  return problems;
}

/**
 * The value paths templates use: `.Values.a.b`, `$.Values.a.b`, and through variables
 * (`$np := .Values.networkPolicy` … `$np.s3Ports`; `range $name, $p := .Values.ai.providers` …
 * `$p.baseUrl`, as ai.providers.*.baseUrl; `index $.Values $component` over a list of names).
 */
function usedPaths(templates: string): string[][] {
  const used: string[][] = [];
  const aliases = new Map<string, string[][]>();
  const lists = new Map<string, string[]>();
  for (const m of templates.matchAll(/range\s+(\$\w+)\s*:=\s*list((?:\s+"[^"]*")+)/g)) {
    lists.set(
      m[1]!,
      [...m[2]!.matchAll(/"([^"]*)"/g)].map((x) => x[1]!),
    );
  }
  const segments = (text: string) => text.split(".").filter(Boolean);
  for (const m of templates.matchAll(
    /(range\s+(?:\$\w+\s*,\s*)?)?(\$\w+)\s*:?=\s*\$?\.Values((?:\.\w+)+)/g,
  )) {
    const path = segments(m[3]!);
    if (m[1]) {
      used.push(path); // Ranging over a value uses it.
      aliases.set(m[2]!, [[...path, "*"]]);
    } else {
      aliases.set(m[2]!, [path]);
    }
  }
  for (const m of templates.matchAll(/(\$\w+)\s*:?=\s*index\s+\$?\.Values\s+(\$\w+)/g)) {
    aliases.set(
      m[1]!,
      (lists.get(m[2]!) ?? []).map((name) => [name]),
    );
  }
  const definitions = /(\$\w+)\s*:?=\s*(?:\$?\.Values|index)/g;
  const withoutDefinitions = templates.replace(definitions, "");
  for (const m of withoutDefinitions.matchAll(/\$?\.Values((?:\.\w+)+)/g)) used.push(segments(m[1]!));
  for (const m of withoutDefinitions.matchAll(/(\$\w+)((?:\.\w+)*)/g)) {
    for (const base of aliases.get(m[1]!) ?? []) used.push([...base, ...segments(m[2]!)]);
  }
  return used;
}

const startsWith = (path: string[], prefix: string[]) =>
  prefix.length <= path.length && prefix.every((k, i) => k === "*" || k === path[i]);

/** Problems between what templates use and what values.yaml and values.schema.json declare. */
function usageProblems(templates: string, values: Tree, schema: JsonSchema): string[] {
  const problems = new Set<string>();
  const used = usedPaths(templates);
  for (const path of used) {
    const key = path.join(".");
    if (!schemaAt(schema, path)) problems.add(`${key}: used by a template, not in values.schema.json`);
    // In values.yaml, or below a value values.yaml leaves open (a list, an empty map).
    let node: unknown = values;
    for (const k of path) {
      if (!isTree(node) || Object.keys(node).length === 0) break;
      if (!(k in node)) {
        problems.add(`${key}: used by a template, not in values.yaml`);
        break;
      }
      node = node[k];
    }
  }
  for (const leaf of leaves(values)) {
    if (!used.some((u) => startsWith(leaf, u) || startsWith(u, leaf))) {
      problems.add(`${leaf.join(".")}: in values.yaml, used by no template`);
    }
  }
  return [...problems];
}

/** The keys of values.yaml (dotted paths) that carry a `# --` description of their own, as helm-docs reads it. */
function documentedKeys(text: string): Set<string> {
  const keys = new Set<string>();
  const documented = (comment: string | null | undefined) => /^\s*-- /m.test(comment ?? "");
  visit(parseDocument(text), {
    Pair(_, pair, path) {
      const parent = path[path.length - 1];
      const first = isMap(parent) && parent.items[0] === pair;
      if (
        (isScalar(pair.key) && documented(pair.key.commentBefore)) ||
        (first && documented(parent.commentBefore))
      ) {
        keys.add(
          [...path.filter(isPair), pair].map((p) => (isScalar(p.key) ? String(p.key.value) : "?")).join("."),
        );
      }
    },
  });
  return keys;
}

/**
 * Values of values.yaml without a `# --` description on themselves or on a map around them (a map
 * whose values are each documented needs none of its own: helm-docs lists them).
 */
function undocumented(text: string): string[] {
  const documented = documentedKeys(text);
  return leaves(parseYaml(text) as Tree)
    .filter((path) => !path.some((_, i) => documented.has(path.slice(0, i + 1).join("."))))
    .map((path) => path.join("."));
}

describe("chart values", () => {
  const schema = { ...SCHEMA };
  delete schema.$schema;
  const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);

  test("values.yaml, and each ci/*.yaml over it, are valid for values.schema.json", () => {
    assert.ok(validate(VALUES), JSON.stringify(validate.errors));
    for (const { name, values } of CI_VALUES) {
      assert.ok(validate(merge(VALUES, values)), `${name}: ${JSON.stringify(validate.errors)}`);
    }
    assert.ok(!validate(merge(VALUES, { runner: { maxRunningJobs: "twenty" } })));
  });

  test("values.yaml and values.schema.json declare the same values", () => {
    const wholes = documentedKeys(VALUES_TEXT);
    assert.deepEqual(declarationProblems(VALUES, SCHEMA, wholes), []);
    const drifted = merge(structuredClone(VALUES), { runner: { maxRunningJobsPerKind: 3 } });
    delete (drifted.api as Tree).port;
    assert.deepEqual(declarationProblems(drifted, SCHEMA, wholes), [
      "runner.maxRunningJobsPerKind: in values.yaml, not in values.schema.json",
      "api.port: in values.schema.json, not in values.yaml",
    ]);
  });

  test("templates use every value and only declared ones", () => {
    assert.deepEqual(usageProblems(TEMPLATES, VALUES, SCHEMA), []);
    const drifted = TEMPLATES.replace(".Values.runner.maxAttempts", ".Values.runner.maxAttemptsX").replace(
      "$p.baseUrl",
      "$p.baseURL",
    );
    assert.deepEqual(usageProblems(drifted, VALUES, SCHEMA), [
      "runner.maxAttemptsX: used by a template, not in values.schema.json",
      "runner.maxAttemptsX: used by a template, not in values.yaml",
      "ai.providers.*.baseURL: used by a template, not in values.schema.json",
      "runner.maxAttempts: in values.yaml, used by no template",
    ]);
  });

  test("every value has a `# --` description (helm-docs writes the chart's README from them)", () => {
    assert.deepEqual(undocumented(VALUES_TEXT), []);
    const drifted = VALUES_TEXT.replace("  # -- Runner Jobs running at once.\n", "");
    assert.notEqual(drifted, VALUES_TEXT);
    assert.deepEqual(undocumented(drifted), ["runner.maxRunningJobs"]);
  });
});
