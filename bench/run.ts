// npm run bench: figures and ratios, never pass/fail. Each comparison is measured side by side in
// one run, alternating the two targets so drift on a shared machine hits both alike.
//
//   npm run bench                                  all of them
//   npm run bench -- submit resize thumbnail rss   the ones named, in this order
//
//   submit     the API's submit path vs a bare route (below)
//   resize     image_resize jobs/s through the local stack vs a bare S3 → sharp → S3 loop, sharp alone in
//              memory and imgproxy (IMGPROXY_BIN; runner.ts)
//   avif       image_resize to AVIF through the local stack vs imgproxy's AVIF: images/s, size, SSIM
//   thumbnail  a video thumbnail 50 minutes in vs plain ffmpeg (runner.ts)
//   rss        peak RSS of a runner resizing a 50-megapixel JPEG through the stack vs imgproxy
//              (IMGPROXY_BIN), vipsthumbnail and the node + sharp floor (runner.ts)
//   webhooks   API submit latency alone vs while 500 webhooks go to a slow receiver (webhooks.ts)
//   s3         small PUTs and GETs: the embedded object store vs versitygw (s3.ts; versitygw built
//              once by `bash scripts/provision.sh versitygw`)
//   get        a runner's GET of a 2 MB source: the client's and the store's CPU, without and with the
//              runner's V8 flags (get.ts)
//   encoders   AVIF and WebP settings (effort, chroma subsampling, quality): encode time, size and
//              SSIM, the Pareto-efficient ones; JPEG and PNG as the runner encodes them (encoders.ts,
//              runnable alone: npx tsx bench/encoders.ts [avif] [webp] [jpeg] [png])
//   k8s        the Kubernetes executor on the real node of `npm run test:k8s` beside the local
//              executor: pod start, tiny-job submit → completed, throughput under a cap of 10
//              (k8s.ts, docs/performance.md; root, Node 24, `npm run build` first)
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import autocannon from "autocannon";
import { Redis } from "ioredis";
import { avifBenchmark, resizeBenchmark, rssBenchmark, thumbnailBenchmark } from "./runner.js";

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  errors: number;
}

async function load(url: string, headers: Record<string, string>, body: string): Promise<Figures> {
  const result = await autocannon({
    url,
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
    connections: CONNECTIONS,
    duration: DURATION,
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    ok: result["2xx"],
    errors: result.non2xx + result.errors + result.timeouts,
  };
}

function best(runs: Figures[]): Figures {
  // The best round of each target: the least disturbed by the rest of the machine.
  return runs.reduce((a, b) => (b.rps > a.rps ? b : a));
}

async function submitBenchmark(): Promise<void> {
  const child = spawn(process.execPath, ["--import", "tsx", "bench/submit-server.ts"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout });
  type Ready = { api: string; unlimited: string; bare: string; apiKey: string; redis: string };
  const ready = await new Promise<Ready>((resolve, reject) => {
    lines.once("line", (line) => resolve(JSON.parse(line) as Ready));
    child.once("exit", (code) => reject(new Error(`bench server exited with ${code}`)));
  });
  const redis = new Redis(ready.redis);
  const body = JSON.stringify({
    source_bucket: "media",
    source_key: "in/photo.jpg",
    dest_bucket: "media",
    dest_key: "out/photo.jpg",
    width: 320,
    height: 240,
    format: "webp",
    // The defaults spelled out: the bare route records the parameters as sent.
    quality: 85,
    fit: "cover",
    enlarge: false,
  });
  const api: Figures[] = [];
  const unlimited: Figures[] = [];
  const bare: Figures[] = [];
  try {
    // Warm-up of both (JIT, connection pools), not counted.
    await autocannon({
      url: ready.bare,
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      duration: 2,
      connections: CONNECTIONS,
    });
    for (const url of [ready.api, ready.unlimited]) {
      await autocannon({
        url,
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": ready.apiKey },
        body,
        duration: 2,
        connections: CONNECTIONS,
      });
    }
    for (let round = 1; round <= ROUNDS; round++) {
      await redis.flushall();
      bare.push(await load(ready.bare, {}, body));
      await redis.flushall();
      api.push(await load(ready.api, { "x-api-key": ready.apiKey }, body));
      await redis.flushall();
      unlimited.push(await load(ready.unlimited, { "x-api-key": ready.apiKey }, body));
      console.error(
        `round ${round}/${ROUNDS}: api ${api.at(-1)!.rps.toFixed(0)} req/s, ` +
          `without rate limits ${unlimited.at(-1)!.rps.toFixed(0)} req/s, bare ${bare.at(-1)!.rps.toFixed(0)} req/s`,
      );
    }
  } finally {
    redis.disconnect();
    child.kill("SIGTERM");
  }
  const a = best(api);
  const u = best(unlimited);
  const b = best(bare);
  console.log(
    `\nSubmit path: POST /api/v1/jobs/image/resize vs a bare Fastify route recording the same job with one EVALSHA`,
  );
  console.log(
    `(${CONNECTIONS} connections, ${DURATION} s per round, best of ${ROUNDS} alternating rounds)\n`,
  );
  console.table({
    "media-service API (as deployed)": {
      "req/s": Math.round(a.rps),
      "p50 ms": a.p50,
      "p99 ms": a.p99,
      "2xx": a.ok,
      errors: a.errors,
    },
    "API, rate limits off": {
      "req/s": Math.round(u.rps),
      "p50 ms": u.p50,
      "p99 ms": u.p99,
      "2xx": u.ok,
      errors: u.errors,
    },
    "bare route": {
      "req/s": Math.round(b.rps),
      "p50 ms": b.p50,
      "p99 ms": b.p99,
      "2xx": b.ok,
      errors: b.errors,
    },
  });
  // Each round runs the three back to back, so a round's own ratio is the least disturbed by what
  // else the machine does; their median beside the ratio of the bests.
  const median = (values: number[]) => {
    const sorted = [...values].sort((x, y) => x - y);
    const mid = Math.floor(sorted.length / 2);
    return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  };
  const perRound = api.map((run, i) => run.rps / bare[i]!.rps);
  console.log(
    `throughput ratio api/bare: ${(a.rps / b.rps).toFixed(2)} (target >= 0.90); ` +
      `median of the rounds' own: ${median(perRound).toFixed(2)} (${perRound.map((r) => r.toFixed(2)).join(", ")})`,
  );
  console.log(`p99 ratio api/bare:        ${(a.p99 / Math.max(b.p99, 1)).toFixed(2)} (target <= 2.00)`);
  console.log(
    `rate limits on/off:        ${(a.rps / u.rps).toFixed(2)} (their cost); ` +
      `median of the rounds' own: ${median(api.map((run, i) => run.rps / unlimited[i]!.rps)).toFixed(2)}`,
  );
}

const BENCHMARKS: Record<string, () => Promise<void>> = {
  submit: submitBenchmark,
  resize: resizeBenchmark,
  avif: avifBenchmark,
  thumbnail: thumbnailBenchmark,
  rss: rssBenchmark,
  webhooks: async () => (await import("./webhooks.js")).webhooksBenchmark(),
  s3: async () => (await import("./s3.js")).s3Benchmark(),
  get: async () => (await import("./get.js")).getBenchmark(),
  encoders: async () => void (await (await import("./encoders.js")).encodersBenchmark()),
  // Loaded only when run: @kubernetes/client-node needs Node 24.
  k8s: async () => (await import("./k8s.js")).k8sBenchmark(),
};

const asked = process.argv.slice(2).filter((a) => a !== "--");
const unknown = asked.filter((name) => !(name in BENCHMARKS));
if (unknown.length > 0) {
  console.error(
    `unknown benchmark(s): ${unknown.join(", ")}; choose from: ${Object.keys(BENCHMARKS).join(", ")}`,
  );
  process.exit(2);
}
for (const [name, benchmark] of Object.entries(BENCHMARKS)) {
  if (asked.length === 0 || asked.includes(name)) await benchmark();
}
