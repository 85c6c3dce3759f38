// A real HTTP server that receives webhooks for tests: it records every request and answers as the
// test says (status, headers, or holding the request until released).
import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedWebhook {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  json: unknown;
  /** The status this request was answered with (0 while it is held). */
  status: number;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  /** Hold the request until release() is called. */
  hold?: boolean;
}

export interface WebhookReceiver {
  url: string;
  port: number;
  received: ReceivedWebhook[];
  /** Requests answered 2xx. */
  accepted(): ReceivedWebhook[];
  /** Answers held requests (with 200) and stops holding new ones. */
  release(): void;
  /** Resolves once `count` requests have arrived (bounded: a missing webhook fails the test). */
  waitFor(count: number, limitMs?: number): Promise<ReceivedWebhook[]>;
  close(): Promise<void>;
}

/**
 * `answer(n)` decides the reply to the n-th request (0-based); 200 by default. `port` reuses a port
 * (a receiver that comes back after being down).
 */
export async function startWebhookReceiver(
  options: { answer?: (n: number, path: string) => Answer; port?: number; host?: string } = {},
): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const held: Array<{ res: ServerResponse; entry: ReceivedWebhook }> = [];
  let holding = true;
  let waiters: Array<() => void> = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const n = received.length;
      const answer = options.answer?.(n, req.url ?? "/") ?? { status: 200 };
      const hold = answer.hold === true && holding;
      const entry: ReceivedWebhook = {
        path: req.url ?? "/",
        headers: req.headers,
        body,
        json,
        status: hold ? 0 : answer.status,
      };
      received.push(entry);
      for (const wake of waiters) wake();
      if (hold) {
        held.push({ res, entry });
        return;
      }
      res.writeHead(answer.status, answer.headers ?? {}).end();
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    accepted: () => received.filter((r) => r.status >= 200 && r.status < 300),
    release: () => {
      holding = false;
      for (const { res, entry } of held.splice(0)) {
        entry.status = 200;
        res.writeHead(200).end();
      }
    },
    waitFor: async (count, limitMs = 30_000) => {
      const deadline = Date.now() + limitMs;
      while (received.length < count) {
        const left = deadline - Date.now();
        if (left <= 0) assert.fail(`expected ${count} webhook requests, got ${received.length}`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, 200));
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
        waiters = [];
      }
      return received.slice(0, count);
    },
    close: async () => {
      holding = false;
      for (const { res } of held.splice(0)) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
