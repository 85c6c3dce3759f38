// A proxy in front of the object store that notes every request (method and path) it forwards: how
// the pipeline tests count the runner's GETs of a source. It can also answer some requests itself
// with the store's 503 (SlowDown), as a store under load does: a failure that is nobody's fault.
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface CountingProxy {
  url: string;
  /** `METHOD /path?query` of every request forwarded, in order. */
  requests: string[];
  /** Where it forwards (set once the store is up). */
  to(url: string): void;
  /** Requests (`METHOD /path?query`) answered 503 SlowDown instead of forwarded; undefined: none. */
  refuse(match: ((request: string) => boolean) | undefined): void;
  server: Server;
}

export async function countingProxy(): Promise<CountingProxy> {
  const requests: string[] = [];
  let target: URL | undefined;
  let refused: ((request: string) => boolean) | undefined;
  const server = createServer((req, res) => {
    const line = `${req.method} ${req.url}`;
    requests.push(line);
    if (refused?.(line)) {
      req.resume();
      res.writeHead(503, { "content-type": "application/xml" });
      res.end(
        '<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>' +
          "<Message>Please reduce your request rate.</Message></Error>",
      );
      return;
    }
    // Forwarded as it came, Host included: the request's signature covers it.
    const upstream = httpRequest(
      { host: target!.hostname, port: target!.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    to: (url) => (target = new URL(url)),
    refuse: (match) => (refused = match),
    server,
  };
}

/** GETs of one object (bucket/key) among a proxy's requests. */
export const getsOf = (proxy: CountingProxy, bucket: string, key: string): number =>
  proxy.requests.filter((r) => r.split("?")[0] === `GET /${bucket}/${key}`).length;
