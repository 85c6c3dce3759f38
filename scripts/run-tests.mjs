#!/usr/bin/env node
// Runs node's built-in test runner over every *.test.ts under the given directories (or the given
// files), with tsx as the TypeScript loader. Node 20's `--test` has no glob support, so the files are
// listed here.
//
// The tiers (docs/development.md#tests): test/unit is pure code; test/component runs one part on
// real Redis, S3, sharp, ffmpeg or files; test/integration runs the whole stack. Every test process
// loads test/support/pure.ts, which makes a test file under test/unit/ fail when it starts a process
// or opens a socket, naming the tier it belongs in.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

const PURE = new URL("../test/support/pure.ts", import.meta.url).href;

// With no argument: the tests `npm test` runs, the three tiers and every workspace package's own
// test/ (packages/*/test). test/k8s and test/browser need their own provisioning and run one file at
// a time (`npm run test:k8s`, `npm run test:browser`).
const TIERS = ["test/unit", "test/component", "test/integration"];
const roots = process.argv.slice(2);
if (roots.length === 0) {
  roots.push(...TIERS);
  for (const name of readdirSync("packages").sort()) {
    if (existsSync(join("packages", name, "test"))) roots.push(join("packages", name, "test"));
  }
}
const files = [];
const walk = (dir) => {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (name.endsWith(".test.ts")) files.push(path);
  }
};
for (const root of roots) {
  if (statSync(root).isDirectory()) walk(root);
  else files.push(root);
}
if (files.length === 0) {
  console.error(`no test files under ${roots.join(", ")}`);
  process.exit(1);
}
const concurrency = process.env.TEST_CONCURRENCY ?? "2";
const result = spawnSync(
  process.execPath,
  ["--import", "tsx", "--import", PURE, "--test", `--test-concurrency=${concurrency}`, ...files],
  { stdio: "inherit", env: { ...process.env, NODE_ENV: "test" } },
);
process.exit(result.status ?? 1);
