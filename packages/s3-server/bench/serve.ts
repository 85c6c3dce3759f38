// The store alone in a process of its own (as another S3 server would run in its own), for the
// benchmarks (load.ts startEmbedded): data under a fresh temporary directory (under BENCH_DATA_DIR
// when set). Prints one JSON line with its URL and credentials, then serves until SIGTERM. With
// S3_SERVE_LOG set to a pino level (error, warn, info, debug), the store's log lines at that level
// and above go to stderr (s3-tests/run.sh counts the server errors in them).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { startEmbeddedS3 } from "../src/index.js";

const dataDir = await mkdtemp(join(process.env.BENCH_DATA_DIR ?? tmpdir(), "s3-server-bench-"));
const credentials = { accessKeyId: "bench-access-key", secretAccessKey: "bench-secret-key" };
const level = process.env.S3_SERVE_LOG;
const logger = level ? pino({ level }, pino.destination(2)) : undefined;
const s3 = await startEmbeddedS3({ port: 0, dataDir, ...credentials, ...(logger ? { logger } : {}) });
console.log(JSON.stringify({ url: s3.url, region: "us-east-1", ...credentials }));
process.once("SIGTERM", () => {
  void s3
    .close()
    .then(() => rm(dataDir, { recursive: true, force: true }))
    .finally(() => process.exit(0));
});
