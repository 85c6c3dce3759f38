// Embedded S3-protocol server for the local stack: lets `npm start` run on a machine that has only
// Node by serving path-style S3 (http://host:port/bucket/key) from a data directory. Any S3 client
// (aws cli, @aws-sdk/client-s3 with forcePathStyle, rclone) works against it unchanged.
//
// Module map:
//   server.ts      HTTP lifecycle: parse the request target, authenticate, route, error documents,
//                  100-continue, request logging, start/close
//   router.ts      (method, bucket, key, query) -> operation
//   ops-*.ts       the operations (bucket-level, object, multipart)
//   sigv4.ts       Signature V4 verification (header, presigned URL, chunk and trailer signatures)
//   payload.ts     request body intake and integrity checks (SHA-256, Content-MD5, checksums)
//   chunked.ts     aws-chunked decoding
//   checksum.ts    CRC32 / CRC32C / CRC64NVME / SHA-1 / SHA-256 flexible checksums
//   storage.ts     buckets, objects and listings: atomic commits under locks
//   uploads.ts     multipart uploads (parts, completion, abort, listing)
//   layout.ts      where everything lives in the data directory
//   record.ts      one object or part = one file (content, then metadata); temp files
//   model.ts       the metadata kept and the rules on names and ETags
//   keyindex.ts    sorted key index behind ListObjects
//   locks.ts       per-key mutex and per-bucket readers-writer lock
//   xml.ts         response documents; xml-parse.ts request documents
//   http.ts        Range, conditional requests, object headers; errors.ts S3 error codes

import { createHash, randomBytes } from "node:crypto";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { pino, type Logger } from "pino";
import type { RequestContext } from "./context.js";
import {
  AnonymousRequestDenied,
  S3Error,
  internalError,
  invalidBucketName,
  invalidUri,
  keyTooLong,
  noSuchBucket,
} from "./errors.js";
import { header } from "./http.js";
import { route } from "./router.js";
import { authenticate, decodePathComponent, parseQuery, type AuthResult } from "./sigv4.js";
import { isValidBucketName } from "./model.js";
import { Storage } from "./storage.js";
import { renderError, type Owner } from "./xml.js";

export interface EmbeddedS3Options {
  /** Interface to listen on; default 127.0.0.1. */
  host?: string;
  /** TCP port; 0 picks a free one (see EmbeddedS3.port). */
  port: number;
  /** Directory that holds the buckets; created if missing. */
  dataDir: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Region reported for buckets created without a LocationConstraint; default us-east-1. */
  region?: string;
  /** Buckets created at start when they do not exist yet. */
  buckets?: string[];
  logger?: Logger;
}

export interface EmbeddedS3 {
  /** Endpoint URL for S3 clients (use path-style addressing). */
  url: string;
  port: number;
  /** Stop accepting connections, close idle keep-alive connections, wait for in-flight requests. */
  close(): Promise<void>;
}

/**
 * A request answered before its body was read (an error found from the headers alone) has its body
 * read and discarded, up to this many bytes and this long after the answer, so the connection stays
 * usable. Closing at once would reset a connection the client is still writing to, and a reset
 * drops the answer the client has not read yet: it would see a broken pipe instead of, say,
 * NoSuchBucket. Past either bound the connection is cut.
 */
const LINGER_MAX_BYTES = 64 * 1024 * 1024;
const LINGER_MAX_MS = 10_000;
/** Sockets with no traffic for this long are closed (stalled clients, abandoned uploads). */
const SOCKET_IDLE_TIMEOUT_MS = 5 * 60 * 1000;
/** How long close() lets in-flight requests finish before cutting their connections. */
const CLOSE_GRACE_MS = 3000;

const AUTH_ERRORS = new Set([
  "AccessDenied",
  "InvalidAccessKeyId",
  "SignatureDoesNotMatch",
  "RequestTimeTooSkewed",
]);
const CLIENT_GONE_CODES = new Set([
  "ECONNRESET",
  "EPIPE",
  "ECONNABORTED",
  "ERR_STREAM_PREMATURE_CLOSE",
  "ERR_STREAM_DESTROYED",
]);

function isClientGone(err: unknown, req: IncomingMessage, res: ServerResponse): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return (
    (code !== undefined && CLIENT_GONE_CODES.has(code)) ||
    (err as Error | undefined)?.message === "aborted" ||
    (req.destroyed && !req.complete) ||
    (res.destroyed && !res.writableFinished)
  );
}

/** Reads and discards the rest of an answered request's body, within the lingering bounds. */
function lingerOnBody(req: IncomingMessage): void {
  let discarded = 0;
  const cut = () => req.socket.destroy();
  const timer = setTimeout(cut, LINGER_MAX_MS);
  timer.unref();
  const done = () => {
    clearTimeout(timer);
    req.off("data", count);
  };
  const count = (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > LINGER_MAX_BYTES) {
      done();
      cut();
    }
  };
  req.on("data", count);
  req.once("end", done);
  req.once("close", done);
}

export async function startEmbeddedS3(opts: EmbeddedS3Options): Promise<EmbeddedS3> {
  const log = (opts.logger ?? pino({ level: "silent" })).child({ component: "embedded-s3" });
  // The storage is opened only once the port is ours (see below); requests wait for it.
  let openStorage!: (storage: Storage) => void;
  const storageReady = new Promise<Storage>((resolve) => (openStorage = resolve));
  const credentials = { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey };
  const region = opts.region ?? "us-east-1";
  const owner: Owner = {
    id: createHash("sha256").update(opts.accessKeyId).digest("hex"),
    displayName: "embedded-s3",
  };
  const inflight = new Set<Promise<void>>();

  async function handle(req: IncomingMessage, res: ServerResponse, expectContinue: boolean): Promise<void> {
    const started = process.hrtime.bigint();
    const requestId = randomBytes(8).toString("hex").toUpperCase();
    const method = req.method ?? "GET";
    const target = req.url ?? "/";
    const q = target.indexOf("?");
    const rawPath = q < 0 ? target : target.slice(0, q);
    const rawQuery = q < 0 ? "" : target.slice(q + 1);
    let operation = "Unknown";
    let errorCode: string | undefined;
    let continueSent = false;
    let resource = rawPath;

    res.setHeader("x-amz-request-id", requestId);
    res.setHeader("x-amz-id-2", randomBytes(24).toString("base64"));
    res.setHeader("Server", "EmbeddedS3");

    res.once("close", () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const entry = {
        requestId,
        method,
        path: rawPath,
        operation,
        status: res.statusCode,
        ms: Math.round(ms * 10) / 10,
        ...(errorCode ? { code: errorCode } : {}),
      };
      if (!res.writableFinished)
        log.warn({ ...entry, aborted: true }, "embedded-s3 request aborted by client");
      else if (res.statusCode >= 500 && errorCode !== "NotImplemented")
        log.error(entry, "embedded-s3 request failed");
      else if (errorCode && (AUTH_ERRORS.has(errorCode) || errorCode === "NotImplemented"))
        log.warn(entry, "embedded-s3 request rejected");
      else log.debug(entry, "embedded-s3 request");
    });

    try {
      if (!rawPath.startsWith("/")) throw invalidUri();
      const slash = rawPath.indexOf("/", 1);
      const bucket = decodePathComponent(slash < 0 ? rawPath.slice(1) : rawPath.slice(1, slash));
      const key = slash < 0 ? "" : decodePathComponent(rawPath.slice(slash + 1));
      resource = key === "" ? `/${bucket}` : `/${bucket}/${key}`;
      const query = new Map<string, string>();
      for (const [name, value] of parseQuery(rawQuery)) if (!query.has(name)) query.set(name, value);

      if (method === "OPTIONS") {
        // A CORS preflight is never signed. This server has no CORS configuration: answer as S3
        // does for a bucket without one, instead of failing the (absent) signature.
        operation = "PreflightRequest";
        if (!req.headers.origin || !req.headers["access-control-request-method"])
          throw new S3Error("BadRequest", 400, "Insufficient information. Origin request header needed.");
        throw new S3Error("AccessForbidden", 403, "CORSResponse: CORS is not enabled for this bucket.");
      }
      const copying = header(req, "x-amz-copy-source") !== undefined;
      let auth: AuthResult;
      try {
        auth = authenticate({ method, rawPath, rawQuery, rawHeaders: req.rawHeaders }, credentials);
      } catch (err) {
        if (err instanceof AnonymousRequestDenied) {
          // An unsigned request gets what S3 says before it asks for a signature: 404 NoSuchBucket
          // for a bucket that does not exist (nothing this single-tenant store hides), and the 501
          // that names a feature this server does not offer (a browser POST form upload, ?acl).
          if (bucket !== "" && isValidBucketName(bucket) && !(await (await storageReady).bucketInfo(bucket)))
            throw noSuchBucket(bucket);
          route(method, bucket, key, query, copying);
        }
        throw err;
      }
      const storage = await storageReady;
      if (bucket !== "" && !isValidBucketName(bucket)) throw invalidBucketName(bucket);
      if (Buffer.byteLength(key, "utf8") > 1024) throw keyTooLong();
      const selected = route(method, bucket, key, query, copying);
      operation = selected.operation;

      const ctx: RequestContext = {
        req,
        res,
        requestId,
        bucket,
        key,
        query,
        auth,
        storage,
        owner,
        region,
        log,
        operation,
        beginBody() {
          if (expectContinue && !continueSent) {
            continueSent = true;
            res.writeContinue();
          }
        },
      };
      await selected.handler(ctx);
    } catch (err) {
      if (isClientGone(err, req, res)) {
        errorCode = "ClientDisconnected";
        res.destroy();
        return;
      }
      const e = err instanceof S3Error ? err : internalError();
      errorCode = e.code;
      if (!(err instanceof S3Error))
        log.error({ err, requestId, method, path: rawPath, operation }, "embedded-s3 internal error");
      if (res.headersSent) {
        // Failed mid-response: cut the connection so the client sees a truncated body, not a short success.
        res.destroy();
        return;
      }
      if (!req.complete) {
        if (expectContinue && !continueSent) {
          // The client waits for "100 Continue" and never sends the body: the connection cannot be
          // reused, and nothing is in flight towards us, so closing after the answer loses nothing.
          res.setHeader("Connection", "close");
        } else {
          lingerOnBody(req);
        }
      }
      const body = Buffer.from(renderError(e.code, e.message, resource, requestId, e.detail), "utf8");
      res.writeHead(e.status, { "Content-Type": "application/xml", "Content-Length": body.length });
      res.end(method === "HEAD" ? undefined : body);
    }
  }

  // requestTimeout 0: an upload of several GB may legitimately take long; stalled sockets are
  // caught by the idle timeout instead. A long keep-alive makes it rare for a client to reuse a
  // connection at the moment the server closes it.
  const server = http.createServer({ requestTimeout: 0, headersTimeout: 60_000, keepAliveTimeout: 60_000 });
  server.setTimeout(SOCKET_IDLE_TIMEOUT_MS);
  const dispatch = (req: IncomingMessage, res: ServerResponse, expectContinue: boolean) => {
    const task = handle(req, res, expectContinue).catch((err: unknown) => {
      log.error({ err }, "embedded-s3 unhandled error");
      res.destroy();
    });
    inflight.add(task);
    void task.finally(() => inflight.delete(task));
  };
  server.on("request", (req: IncomingMessage, res: ServerResponse) => dispatch(req, res, false));
  server.on("checkContinue", (req: IncomingMessage, res: ServerResponse) => dispatch(req, res, true));
  // Any other Expect value (S3 ignores it): without this listener Node answers 417 by itself.
  server.on("checkExpectation", (req: IncomingMessage, res: ServerResponse) => dispatch(req, res, false));
  server.on("clientError", (err: NodeJS.ErrnoException, socket) => {
    if (err.code !== "ECONNRESET" && socket.writable)
      socket.end("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    else socket.destroy();
  });

  const host = opts.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  // Only now touch the data directory (Storage.open clears its temp area): had another instance
  // been serving on this port, listen() would have failed and its in-flight uploads survive.
  let storage: Storage;
  try {
    storage = await Storage.open(opts.dataDir, log);
  } catch (err) {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    throw err;
  }
  openStorage(storage);
  try {
    for (const bucket of opts.buckets ?? []) {
      if (!(await storage.bucketInfo(bucket))) await storage.createBucket(bucket, "");
    }
  } catch (err) {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  log.info({ url, dataDir: storage.dataDir }, "embedded S3 server listening");

  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    close() {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const timer = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
        timer.unref();
        await closed;
        clearTimeout(timer);
        await Promise.allSettled([...inflight]);
        log.info("embedded S3 server stopped");
      })();
      return closing;
    },
  };
}
