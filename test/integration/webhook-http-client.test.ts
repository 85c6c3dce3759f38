// The webhook HTTP client against real servers on the loopback interface: the address policy applied at
// connect time (nothing reaches a refused server), and each kind of outcome.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, test } from "node:test";
import {
  WebhookClient,
  type WebhookRequest,
  type WebhookResponse,
} from "../../controller/webhooks/http-client.js";
import { freePort } from "../support/ports.js";

interface Seen {
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const BODY = JSON.stringify({ type: "job.completed", data: { id: "j-1", note: "ünïcödé" } });

describe("webhook HTTP client", () => {
  const seen: Seen[] = [];
  let connections = 0;
  let endlessClosed: Promise<void> = Promise.resolve();
  let port = 0;
  let v6 = false; // whether a server listens on [::1] as well
  const servers: http.Server[] = [];
  const clients: WebhookClient[] = [];

  const handler: http.RequestListener = (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = req.url ?? "";
      seen.push({ url: path, headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      const route = path.split("?")[0];
      if (route === "/hang") return; // never answers
      if (route === "/endless") {
        res.writeHead(200, { "content-type": "text/plain" });
        const chunk = Buffer.alloc(16 * 1024, "x");
        const pump = () => {
          while (!res.destroyed && res.write(chunk));
        };
        res.on("drain", pump);
        endlessClosed = new Promise((resolve) => res.on("close", resolve));
        pump();
        return;
      }
      if (route === "/redirect") {
        res.writeHead(302, { location: `http://127.0.0.1:${port}/secret-target` }).end();
        return;
      }
      if (route === "/retry-after-7") res.writeHead(503, { "retry-after": "7" });
      else if (route === "/retry-after-date") {
        res.writeHead(429, { "retry-after": new Date(Date.now() + 3_600_000).toUTCString() });
      } else if (route === "/retry-after-past") {
        res.writeHead(503, { "retry-after": "Sun, 06 Nov 1994 08:49:37 GMT" });
      } else if (route === "/retry-after-garbage") res.writeHead(503, { "retry-after": "soon" });
      else if (route?.startsWith("/status/")) res.writeHead(Number(route.slice("/status/".length)));
      else res.writeHead(200, { "content-type": "application/json" });
      res.end('{"ok":true}');
    });
  };

  const listen = (server: http.Server, host: string, p: number) =>
    new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(p, host, () => {
        server.off("error", reject);
        resolve((server.address() as { port: number }).port);
      });
    });

  const startServer = () => {
    const server = http.createServer(handler);
    server.on("connection", () => connections++);
    servers.push(server);
    return server;
  };

  before(async () => {
    port = await listen(startServer(), "127.0.0.1", 0);
    try {
      await listen(startServer(), "::1", port);
      v6 = true;
    } catch {
      servers.pop();
    }
  });

  after(async () => {
    for (const client of clients) client.close();
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  const client = (allowPrivate: boolean, allowedHosts: string[] = []) => {
    const c = new WebhookClient({ allowPrivate, allowedHosts });
    clients.push(c);
    return c;
  };
  const request = (url: string, extra: Partial<WebhookRequest> = {}): WebhookRequest => ({
    url,
    body: BODY,
    headers: { "webhook-id": "msg_1", "X-Custom": "yes" },
    timeoutMs: 10_000,
    ...extra,
  });
  const loopbackUrls = () => [
    `http://127.0.0.1:${port}/ok`,
    `http://localhost:${port}/ok`, // resolves to loopback: refused on the resolved address
    `http://[::1]:${port}/ok`,
    `http://[::ffff:127.0.0.1]:${port}/ok`,
  ];
  const message = (r: WebhookResponse) => ("message" in r ? r.message : "");

  test("the default policy refuses every loopback form, and nothing reaches the server", async () => {
    const strict = client(false);
    for (const url of [...loopbackUrls(), `http://0.0.0.0:${port}/ok`]) {
      const result = await strict.post(request(url));
      assert.equal(result.kind, "refused", `${url}: ${JSON.stringify(result)}`);
      assert.match(message(result), /webhooks\.allowed_hosts/, url);
    }
    assert.match(
      message(await strict.post(request(`http://localhost:${port}/ok`))),
      /is a loopback address;/,
    );
    assert.equal(seen.length, 0);
    assert.equal(connections, 0);
  });

  test("with allow_private they are delivered, body and headers intact; 0.0.0.0 never is", async () => {
    const lenient = client(true);
    for (const url of loopbackUrls()) {
      const before = seen.length;
      const result = await lenient.post(request(url));
      if (url.includes("[::1]") && !v6) {
        assert.equal(result.kind, "retryable", `${url}: ${JSON.stringify(result)}`); // nothing listens there
        continue;
      }
      assert.deepEqual(result, { kind: "delivered", statusCode: 200 }, url);
      assert.equal(seen.length, before + 1);
      const got = seen.at(-1)!;
      assert.equal(got.url, "/ok");
      assert.equal(got.body, BODY);
      assert.equal(got.headers["content-type"], "application/json");
      assert.equal(got.headers["content-length"], String(Buffer.byteLength(BODY)));
      assert.equal(got.headers["user-agent"], "media-service-webhooks");
      assert.equal(got.headers["webhook-id"], "msg_1");
      assert.equal(got.headers["x-custom"], "yes");
    }
    const before = seen.length;
    const zero = await lenient.post(request(`http://0.0.0.0:${port}/ok`));
    assert.equal(zero.kind, "refused");
    assert.match(message(zero), /never a webhook target/);
    assert.equal(seen.length, before);
  });

  test("allowed_hosts [localhost] allows localhost but not 127.0.0.1", async () => {
    const c = client(false, ["localhost"]);
    assert.deepEqual(await c.post(request(`http://localhost:${port}/ok`)), {
      kind: "delivered",
      statusCode: 200,
    });
    const direct = await c.post(request(`http://127.0.0.1:${port}/ok`));
    assert.equal(direct.kind, "refused");
    assert.match(message(direct), /127\.0\.0\.1 is not in webhooks\.allowed_hosts/);
  });

  describe("outcomes", () => {
    const base = () => `http://127.0.0.1:${port}`;
    let c: WebhookClient;
    before(() => {
      c = client(true);
    });

    test("500 is retryable, and the message carries the origin but not the path or query", async () => {
      const result = await c.post(request(`${base()}/status/500?token=SECRET`));
      assert.equal(result.kind, "retryable");
      assert.equal("statusCode" in result && result.statusCode, 500);
      assert.equal("retryAfterMs" in result, false);
      assert.match(message(result), new RegExp(`^${base().replace(/\./g, "\\.")} answered 500`));
      assert.doesNotMatch(message(result), /SECRET|status/);
    });

    test("503 with Retry-After: 7 is retryable after 7000 ms", async () => {
      const result = await c.post(request(`${base()}/retry-after-7`));
      assert.deepEqual(result, {
        kind: "retryable",
        statusCode: 503,
        retryAfterMs: 7000,
        message: `${base()} answered 503 Service Unavailable`,
      });
    });

    test("429 with an HTTP-date Retry-After", async () => {
      const result = await c.post(request(`${base()}/retry-after-date`));
      assert.equal(result.kind, "retryable");
      assert.equal("statusCode" in result && result.statusCode, 429);
      const ms = "retryAfterMs" in result ? result.retryAfterMs : undefined;
      assert.ok(ms !== undefined && ms > 3_000_000 && ms <= 3_600_000, `retryAfterMs ${ms}`);
    });

    test("a past date gives 0, garbage is ignored", async () => {
      const past = await c.post(request(`${base()}/retry-after-past`));
      assert.equal("retryAfterMs" in past && past.retryAfterMs, 0);
      const garbage = await c.post(request(`${base()}/retry-after-garbage`));
      assert.equal(garbage.kind, "retryable");
      assert.equal("retryAfterMs" in garbage, false);
    });

    test("404 and 400 are rejected", async () => {
      for (const status of [404, 400]) {
        const result = await c.post(request(`${base()}/status/${status}`));
        assert.equal(result.kind, "rejected", String(status));
        assert.equal("statusCode" in result && result.statusCode, status);
      }
    });

    test("302 is rejected and its Location is not fetched", async () => {
      const result = await c.post(request(`${base()}/redirect`));
      assert.equal(result.kind, "rejected");
      assert.equal("statusCode" in result && result.statusCode, 302);
      assert.match(message(result), /redirects are not followed/);
      assert.equal(
        seen.some((s) => s.url.startsWith("/secret-target")),
        false,
      );
    });

    test("a server that never answers: retryable once the time is up", async () => {
      const result = await c.post(request(`${base()}/hang?token=SECRET`, { timeoutMs: 300 }));
      assert.equal(result.kind, "retryable");
      assert.equal("statusCode" in result, false);
      assert.equal(message(result), `no response from ${base()} within 0.3 s`);
    });

    test("an endless body does not hold the attempt: the connection is dropped", async () => {
      const result = await c.post(request(`${base()}/endless`));
      assert.deepEqual(result, { kind: "delivered", statusCode: 200 });
      await endlessClosed; // the server saw the connection go
    });

    test("connection refused is retryable", async () => {
      const closed = await freePort();
      const result = await c.post(request(`http://127.0.0.1:${closed}/ok`));
      assert.equal(result.kind, "retryable");
      assert.match(message(result), /ECONNREFUSED/);
    });

    test("a name that does not resolve is retryable", async () => {
      const result = await c.post(request("http://webhook-target.invalid/ok", { timeoutMs: 5_000 }));
      assert.equal(result.kind, "retryable");
    });

    test("other protocols and bad URLs are refused", async () => {
      assert.deepEqual(await c.post(request(`ftp://127.0.0.1:${port}/ok`)), {
        kind: "refused",
        message: "webhook URLs must use http: or https:, not ftp:",
      });
      assert.equal((await c.post(request("file:///etc/passwd"))).kind, "refused");
      assert.equal((await c.post(request("not a url"))).kind, "refused");
    });

    test("a bad header is refused without throwing", async () => {
      const result = await c.post(request(`${base()}/ok`, { headers: { "bad header": "x" } }));
      assert.equal(result.kind, "refused");
    });

    test("consecutive posts reuse the kept-alive connection", async () => {
      const before = connections;
      for (let i = 0; i < 3; i++) {
        assert.equal((await c.post(request(`${base()}/ok`))).kind, "delivered");
      }
      assert.ok(connections - before <= 1, `${connections - before} new connections`);
    });
  });
});
