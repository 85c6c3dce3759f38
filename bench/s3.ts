// Object-store benchmark: small PUTs and GETs against the embedded store and against versitygw (an
// S3 gateway that is not ours, on its posix backend), both in processes of their own writing to the
// same filesystem, driven by the same SDK client code, in alternating rounds (the store package's
// measurement, packages/s3-server/bench/load.ts). Every PUT is durable on both before it is answered
// (the embedded store syncs each object once; versitygw syncs too). Each figure the median [min–max]
// of its rounds, each ratio the median of the per-round ratios (bench/stats.ts); 5 rounds by default
// (were the best of 2).
import {
  describeRun,
  measure,
  startEmbedded,
  type Figures,
  type Rounds,
} from "../packages/s3-server/bench/load.js";
import { startVersitygw } from "../test/support/versitygw.js";
import { formatRatio, formatSummary, printTable, ratio, summarize, type Summary } from "./stats.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

/** The embedded store and versitygw, each in a process of its own, measured in alternating rounds. */
async function measureBoth(): Promise<Rounds> {
  const embedded = await startEmbedded();
  try {
    const versitygw = await startVersitygw();
    try {
      return await measure(
        { "embedded store": embedded.endpoint, "versitygw 1.8.0 (posix)": versitygw },
        ROUNDS,
      );
    } finally {
      await versitygw.stop();
    }
  } finally {
    embedded.stop();
  }
}

export async function s3Benchmark(): Promise<{ put: Summary; get: Summary }> {
  const results = await measureBoth();
  console.log(`\nObject store: ${describeRun(ROUNDS)}; median [min–max] of the rounds\n`);
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
