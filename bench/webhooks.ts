// npm run bench -- webhooks: API latency with no webhooks in flight vs while 500 webhooks go to a
// receiver that takes 2 s to answer each, the API and the notifier sharing one process (as in
// `media-service start`). Alternating rounds; figures and ratios, never pass/fail.
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createInterface } from "node:readline";
import autocannon from "autocannon";

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const WEBHOOKS = Number(process.env.BENCH_WEBHOOKS ?? 500);
const RECEIVER_DELAY_MS = Number(process.env.BENCH_RECEIVER_DELAY_MS ?? 2000);

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

export async function webhooksBenchmark(): Promise<void> {
  let received = 0;
  const receiver = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      received++;
      setTimeout(() => res.writeHead(200).end(), RECEIVER_DELAY_MS);
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/slow`;

  const child = spawn(process.execPath, ["--import", "tsx", "bench/webhooks-server.ts"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  type Ready = { api: string; control: string; apiKey: string };
  const ready = await new Promise<Ready>((resolve, reject) => {
    createInterface({ input: child.stdout }).once("line", (line) => resolve(JSON.parse(line) as Ready));
    child.once("exit", (code) => reject(new Error(`bench server exited with ${code}`)));
  });
  const body = JSON.stringify({ source_bucket: "media", source_key: "in/photo.png" });
  const load = async (): Promise<Figures> => {
    const r = await autocannon({
      url: ready.api,
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": ready.apiKey },
      body,
      connections: CONNECTIONS,
      duration: DURATION,
    });
    return {
      rps: r.requests.average,
      p50: r.latency.p50,
      p99: r.latency.p99,
      errors: r.non2xx + r.errors + r.timeouts,
    };
  };
  const quiet: Figures[] = [];
  const busy: Figures[] = [];
  let inFlightAtEnd = 0;
  try {
    await autocannon({
      url: ready.api,
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": ready.apiKey },
      body,
      duration: 2,
      connections: CONNECTIONS,
    });
    for (let round = 1; round <= ROUNDS; round++) {
      quiet.push(await load());
      const before = received;
      await fetch(`${ready.control}/prime`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ n: WEBHOOKS, url: receiverUrl }),
      });
      busy.push(await load());
      inFlightAtEnd = WEBHOOKS - (received - before);
      console.error(
        `round ${round}/${ROUNDS}: quiet p99 ${quiet.at(-1)!.p99} ms, with webhooks p99 ${busy.at(-1)!.p99} ms (${received - before}/${WEBHOOKS} webhooks received by then)`,
      );
      // Let the round's webhooks drain before the next quiet round.
      while (received - before < WEBHOOKS) await new Promise((r) => setTimeout(r, 500));
      await new Promise((r) => setTimeout(r, RECEIVER_DELAY_MS + 500));
    }
  } finally {
    child.kill("SIGTERM");
    receiver.closeAllConnections();
    receiver.close();
  }
  const median = (runs: Figures[], key: keyof Figures) =>
    [...runs].map((r) => r[key]).sort((a, b) => a - b)[Math.floor(runs.length / 2)]!;
  const q = {
    rps: median(quiet, "rps"),
    p50: median(quiet, "p50"),
    p99: median(quiet, "p99"),
    errors: median(quiet, "errors"),
  };
  const b = {
    rps: median(busy, "rps"),
    p50: median(busy, "p50"),
    p99: median(busy, "p99"),
    errors: median(busy, "errors"),
  };
  console.log(
    `\nAPI submit latency, no webhooks vs ${WEBHOOKS} webhooks to a receiver answering in ${RECEIVER_DELAY_MS} ms`,
  );
  console.log(
    `(API and notifier in one process; ${CONNECTIONS} connections, ${DURATION} s per round, ${ROUNDS} alternating rounds, medians)\n`,
  );
  console.table({
    "no webhooks": { "req/s": Math.round(q.rps), "p50 ms": q.p50, "p99 ms": q.p99, errors: q.errors },
    [`${WEBHOOKS} webhooks in progress`]: {
      "req/s": Math.round(b.rps),
      "p50 ms": b.p50,
      "p99 ms": b.p99,
      errors: b.errors,
    },
  });
  console.log(`webhooks still undelivered when the last busy round ended: ${inFlightAtEnd}`);
  console.log(`p99 ratio busy/quiet:        ${(b.p99 / Math.max(q.p99, 1)).toFixed(2)} (target <= 1.10)`);
  console.log(`throughput ratio busy/quiet: ${(b.rps / Math.max(q.rps, 1)).toFixed(2)}`);
}
