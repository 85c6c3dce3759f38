// What one GET of a runner's source costs in CPU: a 2 MB object from the embedded store, read into
// memory as the runner reads a small source (runner/object-io.ts fetchSource, the AWS SDK client of
// core/storage/s3.ts), `concurrency` 2. The client runs in a process of its own, started without and
// with the runner's V8 flags (RUNNER_NODE_FLAGS, core/config/runner-env.ts), in alternating rounds;
// the store runs in its own process too (packages/s3-server/bench/serve.ts), and its CPU per GET is
// read from /proc.
//
//   npm run bench -- get
//
// Knobs: BENCH_GET_BYTES (2,100,000), BENCH_GET_COUNT (300 GETs a round), BENCH_ROUNDS (5; were 2).
// Each figure the median [min–max] of its rounds (were means), the ratio the median of the per-round
// ratios (bench/stats.ts).
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { CreateBucketCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { RUNNER_NODE_FLAGS } from "../core/config/runner-env.js";
import { startEmbedded } from "../packages/s3-server/bench/load.js";
import { formatRatio, formatSummary, printTable, ratio, summarize, type Summary } from "./stats.js";

const BYTES = Number(process.env.BENCH_GET_BYTES ?? 2_100_000);
const GETS = Number(process.env.BENCH_GET_COUNT ?? 300);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONCURRENCY = 2;
const BUCKET = "bench";
const KEY = "source.bin";

/** User + system CPU of a process so far, in ms (/proc/<pid>/stat, clock ticks of 10 ms). */
function processCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

interface Round {
  clientMs: number;
  storeMs: number;
  perSecond: number;
  fullGcs: number;
}

export async function getBenchmark(): Promise<{ flagsOverNone: Summary }> {
  const store = await startEmbedded();
  const { endpoint } = store;
  const setup = new S3Client({
    endpoint: endpoint.url,
    region: endpoint.region,
    forcePathStyle: true,
    credentials: { accessKeyId: endpoint.accessKeyId, secretAccessKey: endpoint.secretAccessKey },
  });
  const variants: Record<string, readonly string[]> = {
    "no flags": [],
    "the runner's flags": RUNNER_NODE_FLAGS,
  };
  const rounds: Record<string, Round[]> = {};
  try {
    await setup.send(new CreateBucketCommand({ Bucket: BUCKET }));
    await setup.send(new PutObjectCommand({ Bucket: BUCKET, Key: KEY, Body: randomBytes(BYTES) }));
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [name, flags] of Object.entries(variants)) {
        const storeBefore = processCpuMs(store.pid);
        const { stdout } = await promisify(execFile)(
          process.execPath,
          [
            ...flags,
            "--import",
            "tsx",
            "bench/get-client.ts",
            JSON.stringify(endpoint),
            BUCKET,
            KEY,
            String(GETS),
            String(CONCURRENCY),
          ],
          { maxBuffer: 1 << 20 },
        );
        const client = JSON.parse(stdout.trim().split("\n").at(-1)!) as {
          cpuMs: number;
          seconds: number;
          fullGcs: number;
        };
        // The store's CPU over the whole client process (its warm-up too): per GET of all it served.
        const storeMs = (processCpuMs(store.pid) - storeBefore) / (GETS + 20);
        (rounds[name] ??= []).push({
          clientMs: client.cpuMs / GETS,
          storeMs,
          perSecond: GETS / client.seconds,
          fullGcs: client.fullGcs,
        });
        console.error(
          `get round ${round}/${ROUNDS} ${name}: client ${(client.cpuMs / GETS).toFixed(2)} ms CPU a GET, ` +
            `${client.fullGcs} full GCs`,
        );
      }
    }
  } finally {
    setup.destroy();
    store.stop();
  }
  console.log(
    `\nGET of a ${(BYTES / 1e6).toFixed(1)} MB object from the embedded store into memory (the runner's ` +
      `S3 client and read), concurrency ${CONCURRENCY}, ${GETS} GETs a round, ${ROUNDS} alternating rounds; ` +
      `median [min–max] of the rounds\n`,
  );
  const table: Record<string, Record<string, string>> = {};
  for (const [name, rs] of Object.entries(rounds)) {
    table[`client, ${name}`] = {
      "client CPU ms/GET": formatSummary(summarize(rs.map((r) => r.clientMs))),
      "full GCs/round": formatSummary(summarize(rs.map((r) => r.fullGcs)), 1),
      "store CPU ms/GET": formatSummary(summarize(rs.map((r) => r.storeMs))),
      "GETs/s": formatSummary(summarize(rs.map((r) => r.perSecond)), 0),
    };
  }
  printTable(table);
  const [without, withFlags] = Object.values(rounds);
  const flagsOverNone = ratio(
    withFlags!.map((r) => r.clientMs),
    without!.map((r) => r.clientMs),
  );
  console.log(`client CPU a GET, the runner's flags / none: ${formatRatio(flagsOverNone)}`);
  return { flagsOverNone };
}
