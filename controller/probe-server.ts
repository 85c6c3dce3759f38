// The controller's own HTTP endpoints: /healthz (the process answers), /readyz (Redis answers and
// the executor is ready) and /metrics. Plain node:http: three fixed routes need no framework.
import { createServer, type Server } from "node:http";
import type { Registry } from "prom-client";
import type { Logger } from "../core/logger.js";

export interface ProbeServerOptions {
  host: string;
  port: number;
  registry: Registry;
  /** Resolves to a reason when not ready, undefined when ready. */
  notReady: () => Promise<string | undefined>;
  logger: Logger;
}

export interface ProbeServer {
  port: number;
  close(): Promise<void>;
}

export async function startProbeServer(options: ProbeServerOptions): Promise<ProbeServer> {
  const { registry, notReady, logger } = options;
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { "Content-Type": type, "Cache-Control": "no-store" });
      res.end(req.method === "HEAD" ? undefined : body);
    };
    if (req.method !== "GET" && req.method !== "HEAD") {
      send(405, "application/json", JSON.stringify({ error: "method not allowed" }));
      return;
    }
    if (path === "/healthz") {
      send(200, "application/json", JSON.stringify({ status: "ok" }));
    } else if (path === "/readyz") {
      notReady().then(
        (reason) =>
          reason
            ? send(503, "application/json", JSON.stringify({ status: "not ready", reason }))
            : send(200, "application/json", JSON.stringify({ status: "ready" })),
        (err: Error) =>
          send(503, "application/json", JSON.stringify({ status: "not ready", reason: err.message })),
      );
    } else if (path === "/metrics") {
      registry.metrics().then(
        (text) => send(200, registry.contentType, text),
        (err: Error) => {
          logger.warn({ err: err.message }, "metrics collection failed");
          send(500, "application/json", JSON.stringify({ error: "metrics unavailable" }));
        },
      );
    } else {
      send(404, "application/json", JSON.stringify({ error: `no route ${path}` }));
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : options.port;
  logger.info({ port }, "controller probes and metrics listening (/healthz, /readyz, /metrics)");
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
