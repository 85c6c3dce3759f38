// The import boundaries of eslint.config.js (import-x/no-restricted-paths), run through ESLint's Node
// API: deliberate violations must be reported with the rule said in words, allowed imports must not
// be, and the real tree must have none. The imported files exist, so every import resolves: an
// import that resolves to nothing is not checked by the rule (tsc reports those).
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, test } from "node:test";
import { ESLint } from "eslint";

const root = join(import.meta.dirname, "..", "..");
const RULE = "import-x/no-restricted-paths";

const eslint = new ESLint({
  cwd: root,
  overrideConfigFile: join(root, "eslint.config.js"),
  // Only the boundary rule runs; the snippets below are not meant to pass the other rules.
  ruleFilter: ({ ruleId }) => ruleId === RULE,
  // The rule needs no types: without the project service or a project (the job types' views name
  // the dashboard's) the snippets, which are not files of the TypeScript projects, parse as plain
  // syntax, each the same way whatever was linted before it, and the tree lints faster.
  overrideConfig: { languageOptions: { parserOptions: { projectService: false, project: null } } },
});

async function boundaryErrors(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(root, file) });
  assert.ok(result, `no lint result for ${file}`);
  const fatal = result.messages.filter((m) => m.fatal);
  assert.deepEqual(fatal, [], `${file} did not parse`);
  return result.messages.filter((m) => m.ruleId === RULE).map((m) => m.message);
}

const violations: [file: string, code: string, message: RegExp][] = [
  [
    "api/x.ts",
    `import { LocalExecutor } from "../controller/local-executor.js";`,
    /api\/ must not import controller\/: both depend on core\/ only/,
  ],
  [
    "api/routes/x.ts",
    `import { RunnerError } from "../../runner/errors.js";`,
    /api\/ must not import runner\//,
  ],
  ["api/x.ts", `import { startLocalStack } from "../local/stack.js";`, /api\/ must not import local\//],
  ["runner/x.ts", `import { sendError } from "../api/errors.js";`, /runner\/ must not import api\//],
  [
    "runner/processors/x.ts",
    `import { notify } from "../../controller/webhooks/notifier.js";`,
    /runner\/ must not import controller\//,
  ],
  ["runner/x.ts", `import { startRedis } from "../local/redis.js";`, /runner\/ must not import local\//],
  [
    "controller/x.ts",
    `import { startLocalStack } from "../local/stack.js";`,
    /controller\/ must not import local\//,
  ],
  [
    "controller/kubernetes/x.ts",
    `import { startLocalRedis } from "../../local/redis.js";`,
    /controller\/ must not import local\//,
  ],
  [
    "controller/x.ts",
    `import { buildServer } from "../api/server.js";`,
    /controller\/ must not import api\//,
  ],
  [
    "controller/main.ts",
    `import { runJob } from "../runner/run-job.js";`,
    /controller\/ must not import runner\//,
  ],
  ["core/x.ts", `import { buildServer } from "../api/server.js";`, /core\/ must not import api\//],
  [
    "core/store/x.ts",
    `import { retention } from "../../controller/retention.js";`,
    /core\/ must not import controller\//,
  ],
  [
    "core/jobs/x.ts",
    `import { registry } from "../../runner/registry.js";`,
    /core\/ must not import runner\//,
  ],
  [
    "core/x.ts",
    `import { freshCredentials } from "../local/credentials.js";`,
    /core\/ must not import local\//,
  ],
  // The embedded S3 store is a package of its own: nothing of the service inside it, in its sources,
  // tests or benchmark; and the service reaches it by its name only, never by a path into it.
  [
    "packages/s3-server/src/x.ts",
    `import { JobStore } from "../../../core/store/store.js";`,
    /packages\/s3-server\/ is a package of its own \(@media-service\/s3-server\): it imports only its own files/,
  ],
  [
    "packages/s3-server/src/x.ts",
    `import type { Logger } from "../../../core/logger.js";`,
    /packages\/s3-server\/ is a package of its own/,
  ],
  [
    "packages/s3-server/src/x.ts",
    `import { startLocalStack } from "../../../local/stack.js";`,
    /packages\/s3-server\/ is a package of its own/,
  ],
  [
    "packages/s3-server/test/x.test.ts",
    `import { startTestStack } from "../../../test/support/api.js";`,
    /packages\/s3-server\/ is a package of its own/,
  ],
  [
    "packages/s3-server/bench/x.ts",
    `import { summarize } from "../../../bench/stats.js";`,
    /packages\/s3-server\/ is a package of its own/,
  ],
  [
    "local/x.ts",
    `import { startEmbeddedS3 } from "../packages/s3-server/src/server.js";`,
    /import the embedded S3 store by its package name, @media-service\/s3-server, not by a path into its sources/,
  ],
  [
    "cli.ts",
    `import { startEmbeddedS3 } from "./packages/s3-server/src/index.js";`,
    /import the embedded S3 store by its package name/,
  ],
  [
    "test/support/x.ts",
    `import { Storage } from "../../packages/s3-server/src/storage.js";`,
    /import the embedded S3 store by its package name/,
  ],
  [
    "bench/x.ts",
    `import { startEmbeddedS3 } from "../packages/s3-server/src/server.js";`,
    /import the embedded S3 store by its package name/,
  ],
  ["local/x.ts", `import { buildServer } from "../api/server.js";`, /local\/ must not import api\//],
  [
    "local/x.ts",
    `import { retention } from "../controller/retention.js";`,
    /local\/ must not import controller\//,
  ],
  ["local/x.ts", `import { runJob } from "../runner/run-job.js";`, /local\/ must not import runner\//],
  [
    "api/x.ts",
    `import { main } from "../cli.js";`,
    /service code must not import cli.ts, bench\/, test\/ or scripts\//,
  ],
  [
    "core/x.ts",
    `import { something } from "../test/support/redis.js";`,
    /service code must not import cli.ts, bench\/, test\/ or scripts\//,
  ],
  // The command-line client talks to the services over the network, and they never load it.
  [
    "client/x.ts",
    `import { buildApi } from "../api/server.js";`,
    /client\/ must not import api\/: the command-line client talks to the service over HTTP and S3/,
  ],
  [
    "client/x.ts",
    `import { startController } from "../controller/main.js";`,
    /client\/ must not import controller\//,
  ],
  ["client/x.ts", `import { runOne } from "../runner/main.js";`, /client\/ must not import runner\//],
  [
    "client/x.ts",
    `import { startLocalStack } from "../local/stack.js";`,
    /client\/ must not import local\/ but credentials.ts/,
  ],
  [
    "client/x.ts",
    `import { startEmbeddedS3 } from "../packages/s3-server/src/server.js";`,
    /import the embedded S3 store by its package name/,
  ],
  ["api/x.ts", `import { ApiClient } from "../client/api.js";`, /api\/ must not import client\//],
  [
    "controller/x.ts",
    `import { followJob } from "../client/follow.js";`,
    /controller\/ must not import client\//,
  ],
  ["runner/x.ts", `import { put } from "../client/storage.js";`, /runner\/ must not import client\//],
  ["core/x.ts", `import { parseS3Url } from "../client/args.js";`, /core\/ must not import client\//],
  ["local/x.ts", `import { ApiClient } from "../client/api.js";`, /local\/ must not import client\//],
  [
    "client/x.ts",
    `import { something } from "../test/support/api.js";`,
    /service code must not import cli.ts, bench\/, test\/ or scripts\//,
  ],
  // Every form of import counts, not only a plain value import.
  [
    "api/x.ts",
    `import type { LocalExecutor } from "../controller/local-executor.js";`,
    /api\/ must not import controller\//,
  ],
  [
    "api/x.ts",
    `export { LocalExecutor } from "../controller/local-executor.js";`,
    /api\/ must not import controller\//,
  ],
  ["api/x.ts", `export * from "../controller/local-executor.js";`, /api\/ must not import controller\//],
  [
    "api/x.ts",
    `export const load = async () => await import("../controller/local-executor.js");`,
    /api\/ must not import controller\//,
  ],
  ["runner/x.ts", `import "../api/server.js";`, /runner\/ must not import api\//],
  // The dashboard is browser code: it talks to the API over HTTP, and nothing of the services imports it.
  [
    "ui/src/x.tsx",
    `import { buildApi } from "../../api/server.js";`,
    /ui\/ must not import api\/: the dashboard runs in a browser and talks to the API over HTTP only/,
  ],
  [
    "ui/src/x.ts",
    `import { LocalExecutor } from "../../controller/local-executor.js";`,
    /ui\/ must not import controller\//,
  ],
  [
    "ui/src/pages/x.tsx",
    `import { runJob } from "../../../runner/run-job.js";`,
    /ui\/ must not import runner\//,
  ],
  ["ui/src/x.ts", `import { startLocalStack } from "../../local/stack.js";`, /ui\/ must not import local\//],
  [
    "ui/src/x.ts",
    `import type { JobStore } from "../../core/store/store.js";`,
    /ui\/ imports from core\/ only core\/jobs\//,
  ],
  ["ui/src/x.ts", `import { finished } from "../../test/support/jobs.js";`, /service code must not import/],
  ["api/x.ts", `import { api } from "../ui/src/api.js";`, /the services and the client must not import ui\//],
  [
    "core/x.ts",
    `import type { Job } from "../ui/src/types.js";`,
    /the services and the client must not import ui\//,
  ],
  [
    "client/x.ts",
    `import { api } from "../ui/src/api.js";`,
    /the services and the client must not import ui\//,
  ],
  ["ui/src/x.ts", `import { ApiClient } from "../../client/api.js";`, /ui\/ must not import client\//],
  // A job type's folder: its definition is base code, its processor runner code, its view dashboard code.
  [
    "jobs/image_colors/definition.ts",
    `import { openImage } from "../../runner/image/open.js";`,
    /jobs\/ definitions must not import runner\/: a job type's definition \(and the registry\) is pure schemas and text/,
  ],
  [
    "jobs/registry.ts",
    `import { imageColors } from "./image_colors/processor.js";`,
    /jobs\/ definitions must not import a processor/,
  ],
  [
    "jobs/image_colors/processor.ts",
    `import { sendError } from "../../api/errors.js";`,
    /a job type's processor must not import api\/: a job type's processor is runner code/,
  ],
  [
    "jobs/image_colors/view.tsx",
    `import { openImage } from "../../runner/image/open.js";`,
    /a job type's view must not import runner\/: a job type's view is dashboard code/,
  ],
  [
    "jobs/image_colors/view.tsx",
    `import type { JobStore } from "../../core/store/store.js";`,
    /a job type's view imports from core\/ only core\/jobs\//,
  ],
  [
    "api/x.ts",
    `import { imageColors } from "../jobs/image_colors/processor.js";`,
    /only core\/ and runner\/ import jobs\/: the services read the job types through core\/jobs\/types.ts/,
  ],
  [
    "core/jobs/x.ts",
    `import { imageColors } from "../../jobs/image_colors/processor.js";`,
    /core\/ reads only the definitions of jobs\//,
  ],
  [
    "runner/x.ts",
    `import { JOB_DEFINITIONS } from "../jobs/registry.js";`,
    /runner\/ imports only the processors of jobs\//,
  ],
  [
    "ui/src/x.ts",
    `import { JOB_DEFINITIONS } from "../../jobs/registry.js";`,
    /ui\/ finds the job types' views by their folders/,
  ],
];

const allowed: [file: string, code: string][] = [
  [
    "api/x.ts",
    `import { loadConfig } from "../core/config/load.js";\nimport { sendError } from "./errors.js";`,
  ],
  [
    "api/routes/x.ts",
    `import { JobStore } from "../../core/store/store.js";\nimport fastify from "fastify";`,
  ],
  [
    "controller/x.ts",
    `import { JobStore } from "../core/store/store.js";\nimport { spawn } from "node:child_process";`,
  ],
  // The controller's entry assembles the controller from core services.
  [
    "controller/main.ts",
    `import { LocalExecutor } from "./local-executor.js";\nimport { notify } from "./webhooks/notifier.js";\nimport { loadConfig } from "../core/config/load.js";`,
  ],
  ["runner/x.ts", `import { JobStore } from "../core/store/store.js";\nimport sharp from "sharp";`],
  ["core/x.ts", `import { logger } from "./logger.js";\nimport { Redis } from "ioredis";`],
  [
    "local/x.ts",
    `import { freePort } from "../core/net.js";\nimport type { Logger } from "../core/logger.js";\nimport { startEmbeddedS3 } from "@media-service/s3-server";`,
  ],
  [
    "packages/s3-server/src/x.ts",
    `import { createHash } from "node:crypto";\nimport type { Logger } from "pino";\nimport { S3Error } from "./errors.js";`,
  ],
  [
    "packages/s3-server/test/x.test.ts",
    `import { S3Client } from "@aws-sdk/client-s3";\nimport { startEmbeddedS3 } from "../src/server.js";`,
  ],
  // The dashboard: its own files, npm packages, and core/jobs/ (the lists, the records' types).
  [
    "ui/src/pages/x.tsx",
    `import { useState } from "preact/hooks";\nimport { api } from "../api.js";\nimport { JOB_STATES } from "../../../core/jobs/states.js";\nimport type { Job } from "../../../core/jobs/records.js";`,
  ],
  // A job type's folder: the definition on core/'s pure pieces, the processor on runner/ and core/,
  // the view on ui/src/ and types; core/ reads the registry, runner/ loads the processors.
  [
    "jobs/image_colors/definition.ts",
    `import { Type } from "../../core/typebox.js";\nimport { Enum } from "../../core/jobs/enum.js";\nimport { defineJobType } from "../define.js";`,
  ],
  [
    "jobs/image_colors/processor.ts",
    `import { withDefaults } from "../../core/jobs/parameters.js";\nimport { openImage } from "../../runner/image/open.js";\nimport { COLOR_FORMATS } from "./definition.js";`,
  ],
  [
    "jobs/image_colors/view.tsx",
    `import type { ResultViewProps } from "../../ui/src/results.js";\nimport type { Job } from "../../core/jobs/records.js";`,
  ],
  ["core/jobs/x.ts", `import { JOB_DEFINITIONS } from "../../jobs/registry.js";`],
  ["runner/x.ts", `import { imageColors } from "../jobs/image_colors/processor.js";`],
  // The client builds on core/ and reads the embedded store's default credentials.
  [
    "client/x.ts",
    `import { loadConfig } from "../core/config/load.js";\nimport { createS3Client } from "../core/storage/s3.js";\nimport type { Job } from "../core/jobs/records.js";\nimport { embeddedCredentials } from "../local/credentials.js";\nimport { ApiClient } from "./api.js";\nimport { Command } from "commander";`,
  ],
  // The composition root, the benchmarks and the tests may import anything.
  [
    "cli.ts",
    `import "./api/server.js";\nimport "./controller/local-executor.js";\nimport "./runner/main.js";\nimport "./local/stack.js";\nimport "@media-service/s3-server";\nimport "./client/program.js";`,
  ],
  [
    "bench/x.ts",
    `import "../api/server.js";\nimport "../controller/local-executor.js";\nimport "@media-service/s3-server";\nimport "../packages/s3-server/bench/load.js";`,
  ],
  [
    "test/unit/x.test.ts",
    `import "../../api/server.js";\nimport "../../runner/run-job.js";\nimport "@media-service/s3-server";`,
  ],
];

describe("import boundaries", () => {
  for (const [file, code, message] of violations) {
    test(`${file}: ${code.split("\n")[0]} is reported`, async () => {
      const errors = await boundaryErrors(file, code);
      assert.equal(errors.length, 1, `expected one boundary error, got ${JSON.stringify(errors)}`);
      assert.match(errors[0] ?? "", message);
    });
  }

  for (const [file, code] of allowed) {
    test(`${file}: ${code.split("\n").join(" ")} is allowed`, async () => {
      assert.deepEqual(await boundaryErrors(file, code), []);
    });
  }

  test("the tree has no boundary error", async () => {
    const results = await eslint.lintFiles([
      "api",
      "controller",
      "runner",
      "core",
      "local",
      "client",
      "ui",
      "jobs",
      "cli.ts",
      "packages",
    ]);
    assert.ok(results.length > 100, `only ${results.length} files linted`);
    const errors = results.flatMap((r) =>
      r.messages
        .filter((m) => m.ruleId === RULE || m.fatal)
        .map((m) => `${r.filePath}:${m.line}: ${m.message}`),
    );
    assert.deepEqual(errors, []);
  });
});
