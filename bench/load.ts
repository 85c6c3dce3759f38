// What the submit and webhooks benchmarks share: the bench server they load, a child process that
// prints its addresses as one JSON line once it listens, and autocannon POSTing one JSON body.
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import autocannon from "autocannon";

/** One round of load: requests a second, latency percentiles (ms), 2xx answers and the rest. */
export interface LoadFigures {
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  errors: number;
}

/** Starts `script` (bench/…-server.ts) under tsx and waits for its first line, the JSON of `Ready`. */
export async function startBenchServer<Ready>(
  script: string,
): Promise<{ child: ChildProcess; ready: Ready }> {
  const child = spawn(process.execPath, ["--import", "tsx", script], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const ready = await new Promise<Ready>((resolve, reject) => {
    createInterface({ input: child.stdout }).once("line", (line) => resolve(JSON.parse(line) as Ready));
    child.once("exit", (code) => reject(new Error(`bench server exited with ${code}`)));
  });
  return { child, ready };
}

/** POSTs `body` as JSON to `url` from `connections` connections for `duration` seconds. */
export async function postLoad(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: { connections: number; duration: number },
): Promise<LoadFigures> {
  const result = await autocannon({
    url,
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
    connections: options.connections,
    duration: options.duration,
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    ok: result["2xx"],
    errors: result.non2xx + result.errors + result.timeouts,
  };
}
