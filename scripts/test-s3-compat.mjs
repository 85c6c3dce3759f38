#!/usr/bin/env node
// Runs tests against an S3-protocol server that is not ours: versitygw (test/support/versitygw.ts)
// is started, the tests run with S3_ENDPOINT and its credentials in their environment (so every test
// stack uses it, with a bucket of its own: test/support/api.ts), then every bucket must be gone
// again (each stack deletes its own at close), and versitygw is stopped.
//
//   node --import tsx scripts/test-s3-compat.mjs [test files or dirs]   (npm run test:s3-compat)
//
// Without arguments: test/component and test/integration, the tiers whose files start stacks that talk
// to S3 (test/unit's never do; the workspace packages' own tests, packages/*/test, test the embedded
// store itself, whatever S3_ENDPOINT says). versitygw must be built first (bash scripts/provision.sh versitygw,
// which npm run test:s3-compat does).
import { spawn } from "node:child_process";
import { ListBucketsCommand, S3Client } from "@aws-sdk/client-s3";
import { startVersitygw } from "../test/support/versitygw.ts";

const targets = process.argv.slice(2);
if (targets.length === 0) targets.push("test/component", "test/integration");

const started = Date.now();
const server = await startVersitygw();
console.log(`versitygw at ${server.url} (pid ${server.pid})`);
let status = 1;
try {
  const child = spawn(process.execPath, ["scripts/run-tests.mjs", ...targets], {
    stdio: "inherit",
    env: {
      ...process.env,
      S3_ENDPOINT: server.url,
      S3_REGION: server.region,
      S3_ACCESS_KEY_ID: server.accessKeyId,
      S3_SECRET_ACCESS_KEY: server.secretAccessKey,
    },
  });
  // Ctrl-C reaches the test runner as well (one process group); versitygw is stopped after it.
  for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
  status = await new Promise((resolve) => child.once("exit", (code) => resolve(code ?? 1)));

  const client = new S3Client({
    endpoint: server.url,
    region: server.region,
    forcePathStyle: true,
    credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
  });
  const { Buckets = [] } = await client.send(new ListBucketsCommand({}));
  client.destroy();
  if (Buckets.length > 0) {
    console.error(`buckets the tests left behind: ${Buckets.map((b) => b.Name).join(", ")}`);
    status ||= 1;
  }
} finally {
  await server.stop();
}
const seconds = Math.round((Date.now() - started) / 1000);
console.log(`tests against versitygw ${status === 0 ? "passed" : "FAILED"} in ${seconds} s`);
process.exit(status);
