// npm run bench -- webhooks: API latency with no webhooks in flight vs while 500 webhooks go to a
// receiver that takes 2 s to answer each, the API and the notifier sharing one process (as in
// `media-service start`). Alternating rounds; figures and ratios, never pass/fail: each figure the
// median [min–max] of its rounds, each ratio the median of the per-round ratios (bench/stats.ts).
// 5 rounds by default (were 2): a p99 over two rounds moved by more than the 10 % it is held to.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { postLoad, startBenchServer, type LoadFigures } from "./load.js";
import { formatRatio, formatSummary, printTable, ratio, summarize, type Summary } from "./stats.js";

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const WEBHOOKS = Number(process.env.BENCH_WEBHOOKS ?? 500);
const RECEIVER_DELAY_MS = Number(process.env.BENCH_RECEIVER_DELAY_MS ?? 2000);

type Figures = LoadFigures;

export async function webhooksBenchmark(): Promise<{ p99BusyOverQuiet: Summary; rpsBusyOverQuiet: Summary }> {
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

  type Ready = { api: string; control: string; apiKey: string };
  const { child, ready } = await startBenchServer<Ready>("bench/webhooks-server.ts");
  const body = JSON.stringify({ source_bucket: "media", source_key: "in/photo.png" });
  const headers = { "x-api-key": ready.apiKey };
  const load = () => postLoad(ready.api, headers, body, { connections: CONNECTIONS, duration: DURATION });
  const quiet: Figures[] = [];
  const busy: Figures[] = [];
  let inFlightAtEnd = 0;
  try {
    await postLoad(ready.api, headers, body, { connections: CONNECTIONS, duration: 2 });
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
  const column = (runs: Figures[], key: keyof Figures) => summarize(runs.map((r) => r[key]));
  const row = (runs: Figures[]) => ({
    "req/s": formatSummary(column(runs, "rps"), 0),
    "p50 ms": formatSummary(column(runs, "p50"), 0),
    "p99 ms": formatSummary(column(runs, "p99"), 0),
    errors: runs.reduce((n, r) => n + r.errors, 0),
  });
  const p99BusyOverQuiet = ratio(
    busy.map((r) => r.p99),
    quiet.map((r) => Math.max(r.p99, 1)),
  );
  const rpsBusyOverQuiet = ratio(
    busy.map((r) => r.rps),
    quiet.map((r) => Math.max(r.rps, 1)),
  );
  console.log(
    `\nAPI submit latency, no webhooks vs ${WEBHOOKS} webhooks to a receiver answering in ${RECEIVER_DELAY_MS} ms`,
  );
  console.log(
    `(API and notifier in one process; ${CONNECTIONS} connections, ${DURATION} s per round, ${ROUNDS} ` +
      `alternating rounds; median [min–max] of the rounds)\n`,
  );
  printTable({
    "no webhooks": row(quiet),
    [`${WEBHOOKS} webhooks in progress`]: row(busy),
  });
  console.log(`webhooks still undelivered when the last busy round ended: ${inFlightAtEnd}`);
  console.log(`p99 ratio busy/quiet:        ${formatRatio(p99BusyOverQuiet, { atMost: 1.1 })}`);
  console.log(`throughput ratio busy/quiet: ${formatRatio(rpsBusyOverQuiet)}`);
  return { p99BusyOverQuiet, rpsBusyOverQuiet };
}
