// One GET client of the get benchmark (bench/get.ts), in a process of its own so that the V8 flags it
// starts with are the variable: GETs the object with the runner's S3 client (core/storage/s3.ts) and
// the runner's in-memory read (runner/object-io.ts fetchSource), `concurrency` at a time, and prints
// one JSON line: its CPU time and the full (mark-compact) garbage collections over the counted GETs.
//
//   get-client.ts <endpoint JSON> <bucket> <key> <gets> <concurrency>
import { constants, PerformanceObserver } from "node:perf_hooks";
import type { Config } from "../core/config/load.js";
import { createS3Client } from "../core/storage/s3.js";
import { fetchSource } from "../runner/object-io.js";
import type { Endpoint } from "../packages/s3-server/bench/load.js";

const [endpointJson, bucket, key, getsArg, concurrencyArg] = process.argv.slice(2);
const endpoint = JSON.parse(endpointJson!) as Endpoint;
const gets = Number(getsArg);
const concurrency = Number(concurrencyArg);
const s3 = createS3Client({
  endpoint: endpoint.url,
  region: endpoint.region,
  forcePathStyle: true,
  accessKeyId: endpoint.accessKeyId,
  secretAccessKey: endpoint.secretAccessKey,
} as Config["storage"]);
const signal = new AbortController().signal;
const once = () =>
  fetchSource(s3, bucket!, key!, {
    maxBytes: 1 << 30,
    inMemoryBytes: 1 << 30,
    signal,
    toFile: () => Promise.reject(new Error("kept in memory")),
  });

let next = 0;
const drive = (n: number) =>
  Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        await once();
      }
    }),
  );
// Warm-up (JIT, connections), not counted.
await drive(20);
next = 0;
let fullGcs = 0;
const observer = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if (
      (entry as unknown as { detail?: { kind?: number } }).detail?.kind ===
      constants.NODE_PERFORMANCE_GC_MAJOR
    )
      fullGcs++;
  }
});
observer.observe({ entryTypes: ["gc"] });
const cpu = process.cpuUsage();
const started = performance.now();
await drive(gets);
const used = process.cpuUsage(cpu);
const seconds = (performance.now() - started) / 1000;
// GC entries are delivered asynchronously: let the last ones in.
await new Promise((r) => setTimeout(r, 50));
observer.disconnect();
s3.destroy();
console.log(JSON.stringify({ cpuMs: (used.user + used.system) / 1000, seconds, fullGcs }));
