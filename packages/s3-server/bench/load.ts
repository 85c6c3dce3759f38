// Load on S3-protocol servers: small PUTs and GETs, CONCURRENCY at a time, driven by the AWS SDK, in
// rounds that alternate between the servers named so drift on a shared machine hits all alike. The
// package's own benchmark (run.ts) and media-service's comparison with versitygw (its bench/s3.ts)
// both measure through here.
//
// Knobs: BENCH_DURATION (10 s a measurement), BENCH_S3_CONCURRENCY (8), BENCH_S3_OBJECT_BYTES
// (16 KiB).
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { Agent } from "node:http";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";

export const DURATION_MS = Number(process.env.BENCH_DURATION ?? 10) * 1000;
export const CONCURRENCY = Number(process.env.BENCH_S3_CONCURRENCY ?? 8);
export const SIZE = Number(process.env.BENCH_S3_OBJECT_BYTES ?? 16 * 1024);

/** An S3 server to measure: its endpoint (path-style) and credentials. */
export interface Endpoint {
  url: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/** One measurement: operations per second, latency quantiles in ms, failed operations. */
export interface Figures {
  ops: number;
  p50: number;
  p99: number;
  errors: number;
}

/** Per server, the figures of each round, in the order measured. */
export type Rounds = Record<string, { put: Figures[]; get: Figures[] }>;

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

/** The store in a process of its own (serve.ts), on a free port, with data in a temporary directory. */
export async function startEmbedded(): Promise<{ endpoint: Endpoint; pid: number; stop(): void }> {
  const serve = fileURLToPath(new URL("./serve.ts", import.meta.url));
  const child = spawn(process.execPath, ["--import", "tsx", serve], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout });
  const endpoint = await new Promise<Endpoint>((resolve, reject) => {
    lines.once("line", (line) => resolve(JSON.parse(line) as Endpoint));
    child.once("exit", (code) => reject(new Error(`embedded store exited with ${code}`)));
  });
  return { endpoint, pid: child.pid!, stop: () => child.kill("SIGTERM") };
}

/**
 * `rounds` rounds; in each, every server in turn takes DURATION_MS of PUTs of new keys, then of GETs
 * of CONCURRENCY keys written before the first round (with a warm-up, not counted). Each server gets
 * a bucket `bench`, which must not exist yet.
 */
export async function measure(servers: Record<string, Endpoint>, rounds: number): Promise<Rounds> {
  const clients = Object.entries(servers).map(([name, endpoint]) => [name, clientFor(endpoint)] as const);
  const body = randomBytes(SIZE);
  const results: Rounds = {};
  try {
    for (const [name, client] of clients) {
      results[name] = { put: [], get: [] };
      await client.send(new CreateBucketCommand({ Bucket: "bench" }));
      // Warm-up (JIT, connections), not counted; it also writes the keys the GETs read.
      await Promise.all(
        Array.from({ length: CONCURRENCY }, (_, w) =>
          client.send(new PutObjectCommand({ Bucket: "bench", Key: `get/${w}`, Body: body })),
        ),
      );
    }
    for (let round = 1; round <= rounds; round++) {
      for (const [name, client] of clients) {
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
          `round ${round}/${rounds} ${name}: PUT ${put.ops.toFixed(0)}/s, GET ${get.ops.toFixed(0)}/s`,
        );
      }
    }
  } finally {
    for (const [, client] of clients) client.destroy();
  }
  return results;
}

/** What a run measured, in words: object size, concurrency, round length and count. */
export function describeRun(rounds: number): string {
  return (
    `${SIZE / 1024} KiB objects, ${CONCURRENCY} concurrent requests, ` +
    `${DURATION_MS / 1000} s per round, ${rounds} alternating rounds`
  );
}
