import { DASHBOARD_PATH } from "../core/config/exposure.js";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, extname, join, relative, sep } from "node:path";
import { brotliCompressSync, constants as zlib, gzipSync } from "node:zlib";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { App } from "./context.js";

/**
 * The dashboard: the static files `npm run build` writes to dist/ui (Vite, from ui/), served at /ui.
 * Every file is read into memory once (the whole dashboard is a few tens of kilobytes), with its
 * content type and a strong ETag. A text file above 512 bytes is compressed (Brotli, else gzip, as
 * the request accepts) the first time an encoding of it is asked for, and that encoding is kept for
 * every later request. Hashed assets
 * (/ui/assets/*) are cached for a year as immutable; index.html and the other files are revalidated
 * on every use (no-cache with an ETag), so a new build shows at the next load. A path that names no
 * file and no asset is a client-side route: it gets index.html.
 *
 * The pages carry no data of their own and need no API key: the dashboard asks for the key and
 * sends it with its API calls. Their Content-Security-Policy allows scripts, styles and API calls
 * from the API's own origin only (nothing inline), images and audio the dashboard read from the API
 * itself (blob: URLs of previews and downloads fetched with the key), and from the object store
 * whose presigned links the dashboard offers besides.
 *
 * When the dashboard has not been built (the API runs from its sources, as the tests do), /ui
 * answers 503 saying so; each request looks again, so a build made meanwhile is served.
 */

export const UI_PREFIX = DASHBOARD_PATH;

/** Where `npm run build` puts the dashboard, seen from this module in the sources or in dist/. */
export function defaultUiDir(): string {
  const root = join(import.meta.dirname, "..");
  return basename(root) === "dist" ? join(root, "ui") : join(root, "dist", "ui");
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".webmanifest": "application/manifest+json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".webp": "image/webp",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
};
const COMPRESSIBLE = new Set([
  ".html",
  ".js",
  ".mjs",
  ".css",
  ".json",
  ".webmanifest",
  ".map",
  ".svg",
  ".txt",
]);
const IMMUTABLE = "public, max-age=31536000, immutable";
const REVALIDATE = "no-cache";

interface UiFile {
  body: Buffer;
  /** Worth compressing (text, above 512 bytes): compressed once, when first asked for. */
  compressible: boolean;
  gzip?: Buffer;
  br?: Buffer;
  type: string;
  etag: string;
  cacheControl: string;
}

/** The Content-Security-Policy of the dashboard's pages; `storage` is the origin presigned links use. */
export function dashboardCsp(storage: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src 'self' blob: ${storage}`,
    `media-src blob: ${storage}`,
    "connect-src 'self'",
    "font-src 'self'",
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "require-trusted-types-for 'script'",
    "trusted-types 'none'",
  ].join("; ");
}

/**
 * What every page the API serves to a browser (the dashboard, the API reference at /docs) sends
 * beside its Content-Security-Policy: no MIME sniffing, no framing, no referrer, its own browsing
 * context group, its resources for its own origin only, no powerful features.
 */
export function securityHeaders(reply: FastifyReply, csp: string): FastifyReply {
  return reply
    .header("Content-Security-Policy", csp)
    .header("X-Content-Type-Options", "nosniff")
    .header("X-Frame-Options", "DENY")
    .header("Referrer-Policy", "no-referrer")
    .header("Cross-Origin-Opener-Policy", "same-origin")
    .header("Cross-Origin-Resource-Policy", "same-origin")
    .header("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=()");
}

/**
 * The origin a browser loads presigned object links from: the configured storage endpoint's, or
 * any AWS S3 host (bucket.s3.region.amazonaws.com) when none is configured.
 */
export function storageOrigin(endpoint: string | undefined): string {
  if (!endpoint) return "https://*.amazonaws.com";
  try {
    return new URL(endpoint).origin;
  } catch {
    return "https://*.amazonaws.com";
  }
}

function loadFiles(dir: string): Map<string, UiFile> | undefined {
  if (!existsSync(join(dir, "index.html"))) return undefined;
  const files = new Map<string, UiFile>();
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) {
        walk(path);
        continue;
      }
      const rel = relative(dir, path).split(sep).join("/");
      // Vite's manifest and other dot files are the build's, not the browser's.
      if (rel.split("/").some((part) => part.startsWith("."))) continue;
      const ext = extname(name).toLowerCase();
      const body = readFileSync(path);
      const file: UiFile = {
        body,
        type: TYPES[ext] ?? "application/octet-stream",
        etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`,
        cacheControl: rel.startsWith("assets/") ? IMMUTABLE : REVALIDATE,
        compressible: COMPRESSIBLE.has(ext) && body.length > 512,
      };
      files.set(rel, file);
    }
  };
  walk(dir);
  return files;
}

// At the highest levels, once per file, encoding and process, when first asked for: the API's start
// compresses nothing (all the files at these levels take ~70 ms), and the first Brotli request of the
// dashboard's script takes ~55 ms, once (docs/performance.md).
const brotli = (file: UiFile) =>
  (file.br ??= brotliCompressSync(file.body, {
    params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: file.body.length },
  }));
const gzip = (file: UiFile) => (file.gzip ??= gzipSync(file.body, { level: 9 }));

/** Registers GET /ui, /ui/* and the redirect of / to /ui/. */
export function uiRoutes(app: App, options: { dir: string; storageEndpoint: string | undefined }): void {
  const csp = dashboardCsp(storageOrigin(options.storageEndpoint));
  let files = loadFiles(options.dir);
  const current = () => (files ??= loadFiles(options.dir));

  const security = (reply: FastifyReply) => securityHeaders(reply, csp);

  const send = (request: FastifyRequest, reply: FastifyReply, file: UiFile) => {
    security(reply)
      .header("Content-Type", file.type)
      .header("Cache-Control", file.cacheControl)
      .header("ETag", file.etag)
      .header("Vary", "Accept-Encoding");
    const match = request.headers["if-none-match"];
    if (match && match.split(",").some((tag) => tag.trim().replace(/^W\//, "") === file.etag)) {
      return reply.code(304).send();
    }
    const accepted = String(request.headers["accept-encoding"] ?? "");
    if (file.compressible) {
      if (/\bbr\b/.test(accepted)) return reply.header("Content-Encoding", "br").send(brotli(file));
      if (/\bgzip\b/.test(accepted)) return reply.header("Content-Encoding", "gzip").send(gzip(file));
    }
    return reply.send(file.body);
  };

  const notBuilt = (reply: FastifyReply) =>
    reply.code(503).header("Cache-Control", "no-store").header("Retry-After", "60").send({
      error:
        "the dashboard has not been built: run `npm run build` (it writes dist/ui), then reload this page",
    });

  const serve = async (request: FastifyRequest<{ Params: { "*"?: string } }>, reply: FastifyReply) => {
    const built = current();
    if (!built) return notBuilt(reply);
    const path = request.params["*"] ?? "";
    const file = built.get(path);
    if (file && path !== "index.html") return send(request, reply, file);
    // A missing asset or file (a name with an extension) is a 404, never the page: a stale hashed
    // asset must not be answered with HTML.
    if (path.startsWith("assets/") || extname(path) !== "") {
      return security(reply)
        .code(404)
        .header("Cache-Control", "no-store")
        .send({ error: `no dashboard file ${UI_PREFIX}/${path}` });
    }
    return send(request, reply, built.get("index.html")!);
  };

  const hidden = { schema: { hide: true } };
  app.get(UI_PREFIX, hidden, serve);
  app.get(`${UI_PREFIX}/*`, hidden, serve);
  // Nothing else answers /: a browser pointed at the API lands on the dashboard.
  app.get("/", hidden, async (_request, reply) => reply.redirect(`${UI_PREFIX}/`, 302));
}
