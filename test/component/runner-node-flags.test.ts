// The runner's V8 flags (core/config/runner-env.ts) are real flags of the Node that runs the
// project, and every runner process the local executor or the pool starts gets them.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";
import { runnerEntry } from "../../controller/runner-process.js";
import { RUNNER_NODE_FLAGS } from "../../core/config/runner-env.js";

test("this Node accepts the runner's V8 flags", () => {
  // Node refuses an unknown flag ("bad option") and exits 9 before running anything.
  const out = execFileSync(
    process.execPath,
    [...RUNNER_NODE_FLAGS, "-e", "process.stdout.write(JSON.stringify({ argv: process.execArgv }))"],
    { encoding: "utf8" },
  );
  const { argv } = JSON.parse(out) as { argv: string[] };
  assert.deepEqual(argv.slice(0, RUNNER_NODE_FLAGS.length), [...RUNNER_NODE_FLAGS]);
});

test("runner processes start with the runner's V8 flags", () => {
  const { execArgv } = runnerEntry();
  assert.deepEqual(execArgv.slice(0, RUNNER_NODE_FLAGS.length), [...RUNNER_NODE_FLAGS]);
});
