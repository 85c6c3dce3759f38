#!/usr/bin/env node
// Runs node's built-in test runner over every *.test.ts under the given directories (or the given
// files), with tsx as the TypeScript loader. Node 20's `--test` has no glob support, so the files are
// listed here.
//
//   node scripts/run-tests.mjs [--coverage] [file or directory]…
//
// The tiers (docs/development.md#tests): test/unit is pure code; test/component runs one part on
// real Redis, S3, sharp, ffmpeg or files; test/integration runs the whole stack. Every test process
// loads test/support/pure.ts, which makes a test file under test/unit/ fail when it starts a process
// or opens a socket, naming the tier it belongs in.
//
// --coverage (`npm test`): line, branch and function coverage of the service's source, not of the
// tests, benchmarks or scripts, by Node's own coverage. It reads what every process of the run wrote
// to NODE_V8_COVERAGE, so the runner processes the whole-stack tests start count as well as the test
// files, mapped to the TypeScript through tsx's source maps. It prints the table, writes
// coverage/lcov.info, and lists the source files no test loaded (which the figures cannot count).
// Over the three tiers the run fails below FLOOR.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const PURE = new URL("../test/support/pure.ts", import.meta.url).href;

// With no argument: the tests `npm test` runs, the three tiers and every workspace package's own
// test/ (packages/*/test). test/k8s and test/browser need their own provisioning and run one file at
// a time (`npm run test:k8s`, `npm run test:browser`).
const TIERS = ["test/unit", "test/component", "test/integration"];
const PACKAGES = readdirSync(join(ROOT, "packages")).sort();
/** The service's source: what the coverage is of (the job types' views are the dashboard's). */
const SOURCE = [
  ...["api", "client", "controller", "core", "jobs", "local", "runner"],
  ...PACKAGES.map((name) => `packages/${name}/src`),
];
const isSource = (name) => /(?<!\.d)\.tsx?$/.test(name) && name !== "view.tsx";
/** The figures of the three tiers, measured (docs/development.md#coverage), rounded down. */
const FLOOR = { lines: 94, branches: 86, functions: 92 };
const LCOV = "coverage/lcov.info";

const args = process.argv.slice(2);
const coverage = args.includes("--coverage");
const roots = args.filter((arg) => arg !== "--coverage");
const whole = roots.length === 0;
if (whole) {
  roots.push(...TIERS);
  for (const name of PACKAGES) {
    if (existsSync(join("packages", name, "test"))) roots.push(join("packages", name, "test"));
  }
}

const files = [];
const walk = (dir, keep) => {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path, keep);
    else if (keep(name)) files.push(path);
  }
};
for (const root of roots) {
  if (statSync(root).isDirectory()) walk(root, (name) => name.endsWith(".test.ts"));
  else files.push(root);
}
if (files.length === 0) {
  console.error(`no test files under ${roots.join(", ")}`);
  process.exit(1);
}

const coverageArgs = () => {
  mkdirSync(join(ROOT, "coverage"), { recursive: true });
  return [
    "--experimental-test-coverage",
    // The coverage of the TypeScript, not of tsx's output.
    "--enable-source-maps",
    ...[...SOURCE.map((dir) => `${dir}/**`), "cli.ts"].map((glob) => `--test-coverage-include=${glob}`),
    "--test-coverage-exclude=jobs/*/view.tsx",
    ...(whole ? Object.entries(FLOOR).map(([kind, floor]) => `--test-coverage-${kind}=${floor}`) : []),
    "--test-reporter=spec",
    "--test-reporter-destination=stdout",
    "--test-reporter=lcov",
    `--test-reporter-destination=${LCOV}`,
  ];
};

const concurrency = process.env.TEST_CONCURRENCY ?? "2";
const result = spawnSync(
  process.execPath,
  [
    "--import",
    "tsx",
    "--import",
    PURE,
    "--test",
    `--test-concurrency=${concurrency}`,
    ...(coverage ? coverageArgs() : []),
    ...files,
  ],
  { stdio: "inherit", env: { ...process.env, NODE_ENV: "test" } },
);

let status = result.status ?? 1;
if (coverage && whole) {
  // Node's coverage counts the files a process loaded: name the ones none did.
  const lcov = existsSync(join(ROOT, LCOV)) ? readFileSync(join(ROOT, LCOV), "utf8") : "";
  const seen = new Set([...lcov.matchAll(/^SF:(.*)$/gm)].map((m) => relative(ROOT, m[1])));
  if (seen.size === 0) {
    // Node only warns when it cannot report (`Could not report code coverage`), and checks no floor.
    console.error(`no coverage was reported (${LCOV} names no file): the floor cannot be checked`);
    status ||= 1;
  } else {
    files.length = 0;
    for (const dir of SOURCE) walk(join(ROOT, dir), isSource);
    const unseen = files.map((path) => relative(ROOT, path)).filter((path) => !seen.has(path));
    if (unseen.length > 0) {
      console.log(`source files no test loaded (${unseen.length}; not in the figures): ${unseen.join(", ")}`);
    }
  }
}
process.exit(status);
