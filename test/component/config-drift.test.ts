// The configuration's schema (core/config/schema.ts) is the one statement of every setting; what
// restates settings is held to it: docs/configuration.md (generated) and config.example.yaml. The
// Helm chart is held to it by chart-drift.test.ts. Each check is also run on a drifted copy, to
// show it fails.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { isDeepStrictEqual } from "node:util";
import type { TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { parse as parseYaml } from "yaml";
import { loadConfig, substituteEnv } from "../../core/config/load.js";
import { ConfigFile, DURATION } from "../../core/config/schema.js";
import { parseDuration } from "../../core/duration.js";
import {
  CONFIGURATION_DOC,
  configurationReference,
  settingRows,
  updateConfigurationDoc,
} from "../../scripts/gen-docs.js";

const ROOT = join(import.meta.dirname, "../..");
const EXAMPLE = join(ROOT, "config.example.yaml");

type Schema = TSchema & {
  properties?: Record<string, Schema>;
  patternProperties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: boolean | Schema;
  default?: unknown;
  [DURATION]?: boolean;
};

/**
 * Where config.example.yaml states another value than the schema's default, on purpose. Settings
 * without a default (unset: derived, or off) may hold any example value.
 */
const EXAMPLE_DIFFERS: Record<string, string> = {
  "server.api_keys": "shows two keys from the environment, for rotation",
};

/** `text` with its commented-out settings (`# key: value`, and the lines nested in them) put back. */
function uncommented(text: string): string {
  const lines = text.split("\n");
  const out: string[] = [];
  let nested: number | undefined;
  for (const line of lines) {
    const setting = /^(\s*)# ([a-z_]+:(?:\s.*)?)$/.exec(line);
    const inner = nested !== undefined ? /^(\s*)# {2}(\s*\S.*)$/.exec(line) : null;
    if (setting) {
      out.push(`${setting[1]}${setting[2]}`);
      nested = setting[1]!.length;
    } else if (inner && inner[1]!.length === nested) {
      out.push(`${inner[1]}  ${inner[2]}`);
    } else {
      out.push(line);
      nested = undefined;
    }
  }
  return out.join("\n");
}

const sameValue = (s: Schema, stated: unknown, def: unknown): boolean => {
  if (s[DURATION]) {
    try {
      return parseDuration(stated as string) === parseDuration(def as string);
    } catch {
      return false;
    }
  }
  return isDeepStrictEqual(Value.Convert(s, stated), def);
};

/**
 * What in a configuration file is not a setting of the schema, or states a default that is not
 * the schema's (the file's `${VAR:-default}` taken with the variables unset).
 */
function exampleProblems(text: string, differs: Record<string, string> = EXAMPLE_DIFFERS): string[] {
  const problems: string[] = [];
  const visit = (s: Schema, value: unknown, path: string[]) => {
    const key = path.join(".");
    const children = s.properties ?? (s.patternProperties && { "*": Object.values(s.patternProperties)[0]! });
    if (value && typeof value === "object" && !Array.isArray(value) && children) {
      for (const [name, v] of Object.entries(value)) {
        const child = s.properties ? s.properties[name] : children["*"];
        if (!child) problems.push(`${[...path, name].join(".")}: not a setting`);
        else visit(child, v, [...path, name]);
      }
      return;
    }
    if (s.default === undefined || key in differs || value === undefined) return;
    if (!sameValue(s, value, s.default)) {
      problems.push(
        `${key}: the file says ${JSON.stringify(value)}, the schema's default is ${JSON.stringify(s.default)}`,
      );
    }
  };
  const tree = substituteEnv(parseYaml(text), {}, []);
  visit(ConfigFile, tree, []);
  for (const key of Object.keys(differs)) {
    if (!key.split(".").reduce<unknown>((node, k) => (node as Record<string, unknown>)?.[k], tree)) {
      problems.push(`${key}: listed as differing on purpose, but the file does not set it`);
    }
  }
  return problems;
}

describe("docs/configuration.md", () => {
  test("is what npm run docs generates from the schema", async () => {
    const doc = readFileSync(CONFIGURATION_DOC, "utf8");
    assert.ok(
      doc === (await updateConfigurationDoc(doc)),
      "docs/configuration.md is stale: run npm run docs",
    );
  });

  test("a drifted copy is caught: a default changed by hand", async () => {
    const doc = readFileSync(CONFIGURATION_DOC, "utf8");
    const drifted = doc.replace(/(\| `executor\.local_runner_max_jobs` .*?\| )`500`/, "$1`50` ");
    assert.notEqual(drifted, doc);
    assert.notEqual(await updateConfigurationDoc(drifted), drifted);
  });

  test("lists every setting with a description, and each environment variable once", () => {
    const rows = settingRows(ConfigFile, "");
    const undescribed = rows.filter((r) => !r.description).map((r) => r.key);
    assert.deepEqual(undescribed, [], "settings without a description in core/config/schema.ts");
    const envs = rows.flatMap((r) => (r.env ? [r.env] : []));
    assert.deepEqual(envs, [...new Set(envs)]);
    const reference = configurationReference();
    for (const row of rows) assert.ok(reference.includes(`\`${row.key}\``), row.key);
    assert.ok(reference.includes("| `executor.local_runner_max_jobs` |  | `500` |"));
  });
});

describe("config.example.yaml", () => {
  const text = readFileSync(EXAMPLE, "utf8");

  test("loads, with its commented-out settings too", () => {
    const dir = mkdtempSync(join(tmpdir(), "media-service-example-"));
    const all = join(dir, "all.yaml");
    writeFileSync(all, uncommented(text));
    assert.notEqual(uncommented(text), text);
    loadConfig({ file: EXAMPLE, env: {} });
    // Its transcription_model, uncommented, asks for the provider AI_BASE_URL defines.
    const config = loadConfig({ file: all, env: { AI_BASE_URL: "http://ai.example/v1", AI_MODEL: "m" } });
    assert.equal(config.server.host, "0.0.0.0");
    assert.equal(config.ai.providers.local?.model, "llava");
  });

  test("every setting in it (commented-out ones included) is in the schema, with the schema's default", () => {
    assert.deepEqual(exampleProblems(uncommented(text)), []);
  });

  test("a drifted copy is caught: a changed default, a setting the schema lacks", () => {
    const drifted = uncommented(text)
      .replace(/^( {2}max_attempts:) 8\b/m, "$1 9")
      .replace(/^( {2}kind: local)$/m, "$1\n  local_runner_jobs: 50");
    assert.deepEqual(exampleProblems(drifted), [
      "executor.local_runner_jobs: not a setting",
      "webhooks.max_attempts: the file says 9, the schema's default is 8",
    ]);
    assert.deepEqual(exampleProblems(text, { "limits.nothing": "gone" }).slice(-1), [
      "limits.nothing: listed as differing on purpose, but the file does not set it",
    ]);
  });
});
