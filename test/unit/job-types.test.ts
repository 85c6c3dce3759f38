// Every job type of the registry (jobs/registry.ts) is whole: its folder holds its definition (with
// an example of a valid job), its processor and its dashboard view, and every surface that lists the
// types has it (the API's routes and result shapes, the configuration's per-type settings, the CLI's
// help, the chart's values, the documentation of the types).
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import ts from "typescript";
import { parse as parseYaml } from "yaml";
import { RESULT_SCHEMAS, SUBMIT_ROUTES } from "../../api/schemas.js";
import { parseJobType, typePath } from "../../client/args.js";
import { parametersHelp } from "../../client/parameters.js";
import { loadConfig } from "../../core/config/load.js";
import { DEFAULT_BOUNDS } from "../../core/jobs/bounds.js";
import { withDefaults } from "../../core/jobs/parameters.js";
import { JOB_DEFINITIONS, JOB_TYPES } from "../../core/jobs/types.js";
import { Value } from "../../core/typebox.js";
import { loadProcessor } from "../../runner/registry.js";

const ROOT = join(import.meta.dirname, "..", "..");
const JOBS = join(ROOT, "jobs");
const CHART = join(ROOT, "charts", "media-service");

/** The names a module exports, default included, read from its source. */
function exportedNames(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const names: string[] = [];
  for (const statement of source.statements) {
    const modifiers = ts.canHaveModifiers(statement) ? (ts.getModifiers(statement) ?? []) : [];
    const exported = modifiers.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
    const isDefault = modifiers.some((m) => m.kind === ts.SyntaxKind.DefaultKeyword);
    if (ts.isExportAssignment(statement)) names.push("default");
    else if (
      ts.isExportDeclaration(statement) &&
      statement.exportClause &&
      ts.isNamedExports(statement.exportClause)
    )
      names.push(...statement.exportClause.elements.map((e) => e.name.text));
    else if (exported && isDefault) names.push("default");
    else if (exported && ts.isVariableStatement(statement))
      names.push(...statement.declarationList.declarations.map((d) => d.name.getText(source)));
    else if (
      exported &&
      (ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement)) &&
      statement.name
    )
      names.push(statement.name.text);
  }
  return names;
}

describe("the job types", () => {
  test("the registry lists each folder of jobs/ once, under the folder's name", () => {
    const folders = readdirSync(JOBS, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    assert.deepEqual([...JOB_TYPES].sort(), folders.sort());
    assert.equal(new Set(JOB_TYPES).size, JOB_TYPES.length);
  });

  for (const definition of JOB_DEFINITIONS) {
    const type = definition.name;
    describe(type, () => {
      test("its definition: a route of its own, parameters, a result shape, runner settings", () => {
        assert.deepEqual(exportedNames(join(JOBS, type, "definition.ts")).includes("definition"), true);
        assert.match(definition.route.path, /^\/jobs\/[a-z]+(?:\/[a-z]+)*$/);
        assert.ok(definition.route.summary.length > 0, "a route summary");
        const parameters = definition.parameters(DEFAULT_BOUNDS);
        assert.equal(parameters.type, "object");
        assert.equal(parameters.additionalProperties, false, "unknown parameters are refused");
        assert.match(definition.result.name, /^[A-Z][A-Za-z]+Result$/);
        assert.equal(definition.result.schema.type, "object");
        const shared = JOB_DEFINITIONS.filter((d) => d.result.name === definition.result.name);
        assert.ok(
          shared.every((d) => d.result.schema === definition.result.schema),
          `the types named ${definition.result.name} share one schema`,
        );
      });

      test("its example: the parameters of a valid job, with the schema's defaults", () => {
        const parameters = definition.parameters(DEFAULT_BOUNDS);
        const example = withDefaults(type, definition.example);
        const errors = [...Value.Errors(parameters, example)].map((e) => `${e.path}: ${e.message}`);
        assert.deepEqual(errors, [], `example ${JSON.stringify(definition.example)}`);
      });

      test("its processor: jobs/<type>/processor.ts, found and loaded by the runner", async () => {
        const processor = await loadProcessor(type);
        assert.equal(typeof processor, "function");
      });

      test("its view: jobs/<type>/view.tsx exports the dashboard's result view", () => {
        assert.ok(exportedNames(join(JOBS, type, "view.tsx")).includes("default"), "a default export");
      });

      test("the API has its route and its result shape", () => {
        const routes = SUBMIT_ROUTES.filter((r) => r.type === type);
        assert.deepEqual(routes, [{ type, path: definition.route.path, summary: definition.route.summary }]);
        assert.ok(RESULT_SCHEMAS[definition.result.name], "its result shape is in the OpenAPI document");
      });

      test("the configuration has its timeout, resources and execution class", () => {
        const config = loadConfig({ env: {} });
        assert.ok(config.executor.timeoutsMs[type] > 0);
        assert.ok(config.kubernetes.resources[type]?.requests.cpu);
        assert.equal(config.executor.pool.classes[type], "job");
      });

      test("the CLI names it by its name and its route's path, and lists its parameters", () => {
        assert.equal(parseJobType(type), type);
        assert.equal(parseJobType(definition.route.path), type);
        assert.equal(`/jobs/${typePath(type)}`, definition.route.path);
        assert.ok(parametersHelp().includes(`\n  ${type} (${typePath(type)})`));
      });

      test("the chart has its values", () => {
        const values = parseYaml(readFileSync(join(CHART, "values.yaml"), "utf8")) as {
          runner: { resources: Record<string, unknown>; timeouts: Record<string, unknown> };
          pool: { classes: Record<string, unknown> };
        };
        assert.ok(values.runner.resources[type], "runner.resources");
        assert.ok(values.runner.timeouts[type], "runner.timeouts");
        assert.ok(values.pool.classes[type], "pool.classes");
        const schema = readFileSync(join(CHART, "values.schema.json"), "utf8");
        assert.equal(schema.split(`"${type}": {`).length - 1, 5, "values.schema.json's five per-type maps");
      });

      test("docs/job-types.md describes it", () => {
        const doc = readFileSync(join(ROOT, "docs", "job-types.md"), "utf8");
        assert.ok(doc.includes(`\`${type}\``), "named in docs/job-types.md");
        assert.ok(doc.includes(`POST ${definition.route.path}`), "its route in docs/job-types.md");
      });

      test("docs/api.md's and the README's tables of endpoints list it", () => {
        const api = readFileSync(join(ROOT, "docs", "api.md"), "utf8");
        assert.ok(api.includes(`| \`POST ${definition.route.path}\``), "a row in docs/api.md");
        const readme = readFileSync(join(ROOT, "README.md"), "utf8");
        assert.ok(readme.includes(`| \`POST ${definition.route.path}\``), "a row in the README");
      });
    });
  }
});
