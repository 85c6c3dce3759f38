// Mistakes people make when they submit a job, from the command line and over the API, and what
// they are told: the misspelt option or field named as such, the parameters of a type listed from
// its schema, a batch entry's shape on a single submit explained.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { runnerEntry } from "../../controller/runner-process.js";
import { PARAMETER_SCHEMAS } from "../../core/jobs/parameters.js";
import { JOB_TYPES } from "../../core/jobs/types.js";
import { startTestStack, type TestStack } from "../support/api.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** `media-service ARGS` against an API that is not there: only what is refused before sending. */
function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const entry = runnerEntry();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...entry.execArgv, entry.path, ...args],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", MEDIA_SERVICE_URL: "http://127.0.0.1:1" },
      },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe("submit on the command line", () => {
  test("a misspelt option is named, not hidden behind a missing --source", async () => {
    const ran = await cli(["submit", "image/resize", "width=10", "--wiat"]);
    assert.equal(ran.code, 2);
    assert.match(ran.stderr, /^error: unknown option '--wiat'\n\(Did you mean --wait\?\)/);
    const missing = await cli(["submit", "image/resize", "width=10"]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^error: required option '--source <s3url>' not specified/);
  });

  test("--help lists every type's parameters, from the job schemas", async () => {
    const ran = await cli(["submit", "--help"]);
    assert.equal(ran.code, 0, ran.stderr);
    for (const type of JOB_TYPES) {
      const block = new RegExp(
        `^  ${type} \\(${type.replaceAll("_", "/")}\\)[^\\n]*\\n((?: {4}[^\\n]*\\n)+)`,
        "m",
      ).exec(ran.stdout);
      assert.ok(block, `${type} is listed:\n${ran.stdout}`);
      const schema = PARAMETER_SCHEMAS[type] as unknown as { properties: object; required?: string[] };
      const listed = [...block[1]!.matchAll(/^ {4}(\w+)=/gm)].map((m) => m[1]);
      assert.deepEqual(listed, Object.keys(schema.properties), `${type}'s parameters`);
    }
    assert.match(ran.stdout, /^ {4}width=<integer 1-16384> +required/m);
    assert.match(ran.stdout, /^ {4}fit=<cover\|contain\|fill\|inside\|outside> +default cover/m);
  });
});

describe("submit over the API", () => {
  let stack: TestStack;
  before(async () => {
    stack = await startTestStack();
  });
  after(async () => {
    await stack?.close();
  });
  const resize = {
    source_bucket: "media",
    source_key: "in/a.jpg",
    dest_bucket: "media",
    dest_key: "out/a.jpg",
  };

  test("a misspelt field is named as unknown, not as the field it was meant to be", async () => {
    const res = await stack.request("/api/v1/jobs/image/resize", {
      method: "POST",
      json: { ...resize, widht: 10, height: 10 },
    });
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), { error: "unknown field widht" });
  });

  test("a single submit with a batch entry's parameters object is told where they go", async () => {
    const res = await stack.request("/api/v1/jobs/image/resize", {
      method: "POST",
      json: { ...resize, parameters: { width: 10, height: 10 } },
    });
    assert.equal(res.status, 400);
    const { error } = (await res.json()) as { error: string };
    assert.match(
      error,
      /^unknown field parameters: a single job takes its parameters at the top level of the body/,
    );
    assert.match(error, /is the form of a batch entry$/);
  });

  test("a field that is only missing is still reported as required", async () => {
    const res = await stack.request("/api/v1/jobs/image/resize", {
      method: "POST",
      json: { ...resize, height: 10 },
    });
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), { error: "width is required" });
  });
});
