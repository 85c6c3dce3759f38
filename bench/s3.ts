// Object-store benchmark: small PUTs and GETs against the embedded store and against versitygw (an
// S3 gateway that is not ours, on its posix backend), both in processes of their own writing to the
// same filesystem, driven by the same SDK client code, in alternating rounds. Every PUT is durable
// on both before it is answered (the embedded store syncs each object once; versitygw syncs too).
// Each figure the median [min–max] of its rounds, each ratio the median of the per-round ratios
// (bench/stats.ts); 5 rounds by default (were the best of 2).
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { Agent } from "node:http";
import { createInterface } from "node:readline";
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { startVersitygw } from "../test/support/versitygw.js";
import { formatRatio, formatSummary, printTable, ratio, summarize, type Summary } from "./stats.js";

const DURATION_MS = Number(process.env.BENCH_DURATION ?? 10) * 1000;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_S3_CONCURRENCY ?? 8);
const SIZE = Number(process.env.BENCH_S3_OBJECT_BYTES ?? 16 * 1024);

export interface Endpoint {
  url: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

interface Figures {
  ops: number;
  p50: number;
  p99: number;
  errors: number;
}

function clientFor(e: Endpoint): S3Client {
  return new S3Client({
    endpoint: e.url,
    region: e.region,
    forcePathStyle: true,
    credentials: { accessKeyId: e.accessKeyId, secretAccessKey: e.secretAccessKey },
    requestHandler: { httpAgent: new Agent({ keepAlive: true, maxSockets: CONCURRENCY }) },
    maxAttempts: 1,
  });
}

/** CONCURRENCY workers each doing `op` back to back for DURATION_MS. */
async function drive(op: (worker: number, n: number) => Promise<unknown>): Promise<Figures> {
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + DURATION_MS;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, worker) => {
      for (let n = 0; performance.now() < deadline; n++) {
        const t = performance.now();
        try {
          await op(worker, n);
          latencies.push(performance.now() - t);
        } catch {
          errors++;
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return { ops: latencies.length / elapsed, p50: at(0.5), p99: at(0.99), errors };
}

export async function startEmbedded(): Promise<{ endpoint: Endpoint; pid: number; stop(): void }> {
  const child = spawn(process.execPath, ["--import", "tsx", "bench/s3-server.ts"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout });
  const endpoint = await new Promise<Endpoint>((resolve, reject) => {
    lines.once("line", (line) => resolve(JSON.parse(line) as Endpoint));
    child.once("exit", (code) => reject(new Error(`embedded store exited with ${code}`)));
  });
  return { endpoint, pid: child.pid!, stop: () => child.kill("SIGTERM") };
}

export async function s3Benchmark(): Promise<{ put: Summary; get: Summary }> {
  const embedded = await startEmbedded();
  const versitygw = await startVersitygw();
  const targets = {
    "embedded store": clientFor(embedded.endpoint),
    "versitygw 1.8.0 (posix)": clientFor(versitygw),
  };
  const body = randomBytes(SIZE);
  const results: Record<string, { put: Figures[]; get: Figures[] }> = {};
  try {
    for (const [name, client] of Object.entries(targets)) {
      results[name] = { put: [], get: [] };
      await client.send(new CreateBucketCommand({ Bucket: "bench" }));
      // Warm-up (JIT, connections), not counted; it also writes the keys the GETs read.
      await Promise.all(
        Array.from({ length: CONCURRENCY }, (_, w) =>
          client.send(new PutObjectCommand({ Bucket: "bench", Key: `get/${w}`, Body: body })),
        ),
      );
    }
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [name, client] of Object.entries(targets)) {
        const put = await drive((w, n) =>
          client.send(new PutObjectCommand({ Bucket: "bench", Key: `put/${round}/${w}/${n}`, Body: body })),
        );
        const get = await drive(async (w) => {
          const got = await client.send(new GetObjectCommand({ Bucket: "bench", Key: `get/${w}` }));
          await got.Body!.transformToByteArray();
        });
        results[name]!.put.push(put);
        results[name]!.get.push(get);
        console.error(
          `round ${round}/${ROUNDS} ${name}: PUT ${put.ops.toFixed(0)}/s, GET ${get.ops.toFixed(0)}/s`,
        );
      }
    }
  } finally {
    for (const client of Object.values(targets)) client.destroy();
    embedded.stop();
    await versitygw.stop();
  }
  console.log(
    `\nObject store: ${SIZE / 1024} KiB objects, ${CONCURRENCY} concurrent requests, ` +
      `${DURATION_MS / 1000} s per round, ${ROUNDS} alternating rounds; median [min–max] of the rounds\n`,
  );
  const of = (runs: Figures[], key: keyof Figures) => summarize(runs.map((f) => f[key]));
  const table: Record<string, Record<string, number | string>> = {};
  for (const [name, r] of Object.entries(results)) {
    table[name] = {
      "PUT/s": formatSummary(of(r.put, "ops"), 0),
      "PUT p50 ms": formatSummary(of(r.put, "p50"), 1),
      "PUT p99 ms": formatSummary(of(r.put, "p99"), 1),
      "GET/s": formatSummary(of(r.get, "ops"), 0),
      "GET p50 ms": formatSummary(of(r.get, "p50"), 1),
      errors: r.put.reduce((n, f) => n + f.errors, 0) + r.get.reduce((n, f) => n + f.errors, 0),
    };
  }
  printTable(table);
  const [ours, theirs] = Object.values(results);
  const put = ratio(
    ours!.put.map((f) => f.ops),
    theirs!.put.map((f) => f.ops),
  );
  const get = ratio(
    ours!.get.map((f) => f.ops),
    theirs!.get.map((f) => f.ops),
  );
  console.log(`embedded/versitygw PUT/s: ${formatRatio(put)}`);
  console.log(`embedded/versitygw GET/s: ${formatRatio(get)}`);
  return { put, get };
}
