// A proxy in front of the object store that notes every request (method and path) it forwards: how
// the pipeline tests count the runner's GETs of a source.
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface CountingProxy {
  url: string;
  /** `METHOD /path?query` of every request forwarded, in order. */
  requests: string[];
  /** Where it forwards (set once the store is up). */
  to(url: string): void;
  server: Server;
}

export async function countingProxy(): Promise<CountingProxy> {
  const requests: string[] = [];
  let target: URL | undefined;
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
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
  return { url: `http://127.0.0.1:${port}`, requests, to: (url) => (target = new URL(url)), server };
}

/** GETs of one object (bucket/key) among a proxy's requests. */
export const getsOf = (proxy: CountingProxy, bucket: string, key: string): number =>
  proxy.requests.filter((r) => r.split("?")[0] === `GET /${bucket}/${key}`).length;
