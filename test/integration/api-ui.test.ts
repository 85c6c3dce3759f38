// The dashboard's static files as the API serves them at /ui (api/ui.ts): from a directory laid out
// as `npm run build` writes dist/ui, here made by the test. Before it exists, /ui says how to build
// it; once it does, it is served without a restart, with its content types, caching, compression,
// security headers and the client-side routes' fallback to index.html.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { after, before, describe, test } from "node:test";
import { defaultUiDir, storageOrigin } from "../../api/ui.js";
import { startTestStack, type TestStack } from "../support/api.js";

const KEY = "ui-test-key-0123456789";
const INDEX = `<!doctype html><html><head><script type="module" src="/ui/assets/index-AbC123.js"></script></head><body><div id="app"></div></body></html>`;
const SCRIPT = `console.log(${JSON.stringify("x".repeat(2000))});\n`;

let stack: TestStack;
let root: string;
let dir: string;

before(async () => {
  root = mkdtempSync(join(tmpdir(), "media-service-ui-"));
  dir = join(root, "ui");
  stack = await startTestStack({ apiKeys: [KEY], uiDir: dir });
});

after(async () => {
  await stack?.close();
  rmSync(root, { recursive: true, force: true });
});

function build(): void {
  mkdirSync(join(dir, "assets"), { recursive: true });
  mkdirSync(join(dir, ".vite"), { recursive: true });
  writeFileSync(join(dir, "index.html"), INDEX);
  writeFileSync(join(dir, "assets", "index-AbC123.js"), SCRIPT);
  writeFileSync(join(dir, "assets", "index-XyZ789.css"), "body{margin:0}");
  writeFileSync(join(dir, "favicon.svg"), `<svg xmlns="http://www.w3.org/2000/svg"/>`);
  writeFileSync(join(dir, ".vite", "manifest.json"), "{}");
}

const get = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${stack.baseUrl}${path}`, { headers, redirect: "manual" });

describe("the dashboard at /ui", () => {
  test("before it is built, /ui answers 503 saying to run npm run build; the API works as ever", async () => {
    for (const path of ["/ui", "/ui/", "/ui/jobs/abc"]) {
      const res = await get(path);
      assert.equal(res.status, 503, path);
      assert.match(((await res.json()) as { error: string }).error, /npm run build/);
    }
    assert.equal((await stack.request("/api/v1/queue/stats")).status, 200);
  });

  test("once built it is served without a restart, without a key, with a strict Content-Security-Policy", async () => {
    build();
    for (const path of [
      "/ui",
      "/ui/",
      "/ui/jobs",
      "/ui/jobs/4b1c-some-job",
      "/ui/batches/catalogue-2026-11",
    ]) {
      const res = await get(path);
      assert.equal(res.status, 200, path);
      assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8");
      assert.equal(await res.text(), INDEX, path);
      assert.equal(res.headers.get("cache-control"), "no-cache");
      const csp = res.headers.get("content-security-policy") ?? "";
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /script-src 'self'(;|$)/);
      assert.match(csp, /style-src 'self'(;|$)/);
      assert.match(csp, /connect-src 'self'(;|$)/);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
      // Images and audio from the object store the presigned links point at.
      const store = new URL(stack.s3.url).origin;
      assert.ok(csp.includes(`img-src 'self' blob: ${store}`), csp);
      assert.ok(csp.includes(`media-src blob: ${store}`), csp);
      assert.equal(res.headers.get("x-content-type-options"), "nosniff");
      assert.equal(res.headers.get("referrer-policy"), "no-referrer");
    }
  });

  test("hashed assets are immutable for a year; other files are revalidated; both carry an ETag", async () => {
    const script = await get("/ui/assets/index-AbC123.js");
    assert.equal(script.status, 200);
    assert.equal(script.headers.get("content-type"), "text/javascript; charset=utf-8");
    assert.equal(script.headers.get("cache-control"), "public, max-age=31536000, immutable");
    assert.equal(await script.text(), SCRIPT);
    const css = await get("/ui/assets/index-XyZ789.css");
    assert.equal(css.headers.get("content-type"), "text/css; charset=utf-8");
    const icon = await get("/ui/favicon.svg");
    assert.equal(icon.headers.get("content-type"), "image/svg+xml");
    assert.equal(icon.headers.get("cache-control"), "no-cache");

    const etag = script.headers.get("etag");
    assert.match(etag ?? "", /^"[A-Za-z0-9_-]+"$/);
    const again = await get("/ui/assets/index-AbC123.js", { "If-None-Match": etag! });
    assert.equal(again.status, 304);
    assert.equal(await again.text(), "");
    const index = await get("/ui/");
    const revalidated = await get("/ui/jobs", { "If-None-Match": index.headers.get("etag")! });
    assert.equal(revalidated.status, 304);
  });

  test("text is sent compressed to a client that accepts it", async () => {
    const raw = (path: string, encoding: string) =>
      new Promise<{ encoding: string | null; vary: string | null; body: Buffer }>((resolve, reject) => {
        // fetch decompresses by itself; node:http shows what was sent.
        import("node:http")
          .then(({ get: httpGet }) => {
            httpGet(`${stack.baseUrl}${path}`, { headers: { "Accept-Encoding": encoding } }, (res) => {
              const chunks: Buffer[] = [];
              res.on("data", (c: Buffer) => chunks.push(c));
              res.on("end", () =>
                resolve({
                  encoding: res.headers["content-encoding"] ?? null,
                  vary: res.headers.vary ?? null,
                  body: Buffer.concat(chunks),
                }),
              );
            }).on("error", reject);
          })
          .catch(reject);
      });
    const br = await raw("/ui/assets/index-AbC123.js", "gzip, deflate, br");
    assert.equal(br.encoding, "br");
    assert.equal(br.vary, "Accept-Encoding");
    assert.equal(brotliDecompressSync(br.body).toString(), SCRIPT);
    const gzip = await raw("/ui/assets/index-AbC123.js", "gzip");
    assert.equal(gzip.encoding, "gzip");
    assert.equal(gunzipSync(gzip.body).toString(), SCRIPT);
    const plain = await raw("/ui/assets/index-AbC123.js", "identity");
    assert.equal(plain.encoding, null);
    assert.equal(plain.body.toString(), SCRIPT);
  });

  test("a missing asset or file is a 404, never the page; the build's own files are not served", async () => {
    for (const path of [
      "/ui/assets/index-Old000.js",
      "/ui/assets/x",
      "/ui/logo.png",
      "/ui/.vite/manifest.json",
    ]) {
      const res = await get(path);
      assert.equal(res.status, 404, path);
      assert.match(((await res.json()) as { error: string }).error, /no dashboard file/);
    }
    const traversal = await get("/ui/..%2f..%2fpackage.json");
    assert.equal(traversal.status, 404);
  });

  test("/ redirects to the dashboard; HEAD works; the OpenAPI document does not list it", async () => {
    const root = await get("/");
    assert.equal(root.status, 302);
    assert.equal(root.headers.get("location"), "/ui/");
    const head = await fetch(`${stack.baseUrl}/ui/jobs`, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get("content-type"), "text/html; charset=utf-8");
    const doc = (await (await get("/docs/json")).json()) as { paths: Record<string, unknown> };
    assert.deepEqual(
      Object.keys(doc.paths).filter((p) => p === "/" || p.startsWith("/ui")),
      [],
    );
  });

  test("where the API looks for the build, and the object store's origin the pages may load from", () => {
    assert.equal(defaultUiDir(), join(import.meta.dirname, "..", "..", "dist", "ui"));
    assert.equal(storageOrigin("http://127.0.0.1:9000/"), "http://127.0.0.1:9000");
    assert.equal(storageOrigin("https://minio.internal:9443/base"), "https://minio.internal:9443");
    assert.equal(storageOrigin(undefined), "https://*.amazonaws.com");
  });
});
