// The package's benchmark: small PUTs and GETs against the store, in a process of its own (load.ts).
// With S3_ENDPOINT (and S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_REGION) set, that server is
// measured beside it in alternating rounds, the same client code driving both.
//
//   npm run bench -w @media-service/s3-server             (from the repository's root)
//   S3_ENDPOINT=http://127.0.0.1:7070 S3_ACCESS_KEY_ID=… S3_SECRET_ACCESS_KEY=… npm run bench
//
// Knobs: BENCH_ROUNDS (5) and those of load.ts. media-service's `npm run bench -- s3` runs the same
// measurement beside versitygw.
import { describeRun, measure, startEmbedded, type Endpoint, type Figures } from "./load.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

/** "754 [700–790]": the median of the rounds and their spread. */
function spread(values: number[], digits: number): string {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length / 2;
  const median = s.length % 2 === 1 ? s[Math.floor(mid)]! : (s[mid - 1]! + s[mid]!) / 2;
  const f = (x: number) => x.toFixed(digits);
  return s.length > 1 ? `${f(median)} [${f(s[0]!)}–${f(s.at(-1)!)}]` : f(median);
}

const embedded = await startEmbedded();
const servers: Record<string, Endpoint> = { "embedded store": embedded.endpoint };
const { S3_ENDPOINT, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_REGION } = process.env;
if (S3_ENDPOINT) {
  if (!S3_ACCESS_KEY_ID || !S3_SECRET_ACCESS_KEY) {
    embedded.stop();
    throw new Error("S3_ENDPOINT needs S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY");
  }
  servers[S3_ENDPOINT] = {
    url: S3_ENDPOINT,
    region: S3_REGION ?? "us-east-1",
    accessKeyId: S3_ACCESS_KEY_ID,
    secretAccessKey: S3_SECRET_ACCESS_KEY,
  };
}
try {
  const results = await measure(servers, ROUNDS);
  console.log(`\n${describeRun(ROUNDS)}; median [min–max] of the rounds\n`);
  const of = (runs: Figures[], key: keyof Figures, digits: number) =>
    spread(
      runs.map((f) => f[key]),
      digits,
    );
  for (const [name, r] of Object.entries(results)) {
    const errors = [...r.put, ...r.get].reduce((n, f) => n + f.errors, 0);
    console.log(
      `${name}: PUT/s ${of(r.put, "ops", 0)}, PUT p50 ${of(r.put, "p50", 1)} ms, PUT p99 ${of(r.put, "p99", 1)} ms, ` +
        `GET/s ${of(r.get, "ops", 0)}, GET p50 ${of(r.get, "p50", 1)} ms, errors ${errors}`,
    );
  }
} finally {
  embedded.stop();
}
