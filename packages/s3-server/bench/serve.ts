// The store alone in a process of its own (as another S3 server would run in its own), for the
// benchmarks (load.ts startEmbedded): data under a fresh temporary directory (under BENCH_DATA_DIR
// when set). Prints one JSON line with its URL and credentials, then serves until SIGTERM.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmbeddedS3 } from "../src/index.js";

const dataDir = await mkdtemp(join(process.env.BENCH_DATA_DIR ?? tmpdir(), "s3-server-bench-"));
const credentials = { accessKeyId: "bench-access-key", secretAccessKey: "bench-secret-key" };
const s3 = await startEmbeddedS3({ port: 0, dataDir, ...credentials });
console.log(JSON.stringify({ url: s3.url, region: "us-east-1", ...credentials }));
process.once("SIGTERM", () => {
  void s3
    .close()
    .then(() => rm(dataDir, { recursive: true, force: true }))
    .finally(() => process.exit(0));
});
