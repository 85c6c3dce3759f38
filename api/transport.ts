import type { Duplex } from "node:stream";
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from "fastify";

// Below the routes: what Node's HTTP parser refuses, the Host header, a body that stops arriving.

const CLIENT_ERRORS: Record<
  string,
  { status: number; reason: string; error: (readTimeoutMs: number) => string }
> = {
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    reason: "Request Timeout",
    error: (ms) => `request not received within ${ms / 1000} s (server.read_timeout)`,
  },
  HPE_HEADER_OVERFLOW: {
    status: 431,
    reason: "Request Header Fields Too Large",
    error: () => "request headers too large",
  },
};

/**
 * Errors Node's HTTP parser meets before there is a request (bad framing, oversized headers, a
 * request that does not arrive within server.read_timeout) get the interface's `{error}` body too,
 * instead of Fastify's own. Logged at debug: scanners send these by the thousand.
 */
export function clientErrorHandler(readTimeoutMs: number) {
  return function (this: FastifyInstance, err: Error & { code?: string }, socket: Duplex): void {
    if (err.code === "ECONNRESET" || socket.destroyed) return;
    const known = err.code ? CLIENT_ERRORS[err.code] : undefined;
    const status = known?.status ?? 400;
    const reason = known?.reason ?? "Bad Request";
    const error = known
      ? known.error(readTimeoutMs)
      : `malformed HTTP request (${err.code ?? "parse error"})`;
    this.log.debug({ status, code: err.code, error }, "client error");
    if (socket.writable) {
      const body = JSON.stringify({ error });
      socket.write(
        `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy(err);
  };
}

class BodyTimeoutError extends Error {
  readonly statusCode = 408;
  readonly code = "MEDIA_BODY_TIMEOUT";
}

/**
 * The first onRequest hook of every request, one hook for three checks (each hook is a dispatch
 * of its own on every request):
 * - the answer says which request it was (X-Request-ID), set first so that early answers carry it;
 * - HTTP/1.1 requires a Host header: Node answers its absence with an empty 400 of its own, which
 *   the server turns off (requireHostHeader) so that this answers it in the interface's form;
 * - a request body must arrive within server.read_timeout of the request's start: Node's own
 *   request timeout ends such a connection without an answer once the request has reached the
 *   routes; this ends the body read with a 408 (errors.ts answers it and closes the connection).
 */
export function requestPreamble(readTimeoutMs: number) {
  const message = `request body not received within ${readTimeoutMs / 1000} s (server.read_timeout)`;
  return (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    reply.header("x-request-id", request.id);
    const raw = request.raw;
    if (request.headers.host === undefined && raw.httpVersion === "1.1") {
      void reply.code(400).send({ error: "missing Host header: HTTP/1.1 requires one" });
      return;
    }
    if (raw.complete || (raw.headers["content-length"] === undefined && !raw.headers["transfer-encoding"])) {
      return done();
    }
    const timer = setTimeout(() => {
      if (raw.complete || raw.destroyed || raw.listenerCount("error") === 0) return;
      raw.emit("error", new BodyTimeoutError(message));
    }, readTimeoutMs);
    timer.unref();
    // A request emits close once its body is read (or the connection is gone).
    raw.on("close", () => clearTimeout(timer));
    done();
  };
}
