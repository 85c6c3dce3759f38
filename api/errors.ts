import type { FastifyError, FastifyInstance } from "fastify";
import { ClientLimitError } from "../core/jobs/client-limits.js";
import { InvalidJobError } from "../core/jobs/spec.js";
import { CLIENT_LIMIT_RETRY_AFTER_SECONDS } from "../core/policy.js";
import {
  ConflictError,
  IllegalTransitionError,
  NotFoundError,
  SearchTooBroadError,
} from "../core/store/errors.js";
import { clip } from "../core/text.js";

const REDIS_DOWN =
  /ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EHOSTUNREACH|Connection is closed|Stream isn't writeable|MaxRetriesPerRequest|enableOfflineQueue/;

export function isStoreUnavailable(err: unknown): boolean {
  const e = err as { name?: string; message?: string; code?: string };
  return e?.name === "MaxRetriesPerRequestError" || REDIS_DOWN.test(`${e?.code ?? ""} ${e?.message ?? ""}`);
}

/** Every error leaves as `{error: string}` with the right status; never a stack trace. */
export function installErrorHandlers(app: FastifyInstance, limits: { maxBodyBytes: number }): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const status = statusOf(err);
    // A client that went away (or whose body stalled until server.read_timeout) cannot be answered;
    // that is the client's business, not an operator's.
    if (request.raw.socket?.destroyed) {
      request.log.info({ status, error: clip(err.message) }, "request abandoned by the client");
      return;
    }
    const message =
      status >= 500 ? publicMessage(status) : clip(clientMessage(err, limits.maxBodyBytes), MAX_ERROR_CHARS);
    if (status === 503 && isStoreUnavailable(err)) {
      // The outage is logged once by the connection, when it goes down and when it is back
      // (core/services.ts), not once per request it refuses: a client retrying in a loop would
      // otherwise write a line with a stack per attempt.
      request.log.debug({ status, error: clip(err.message) }, "request refused: queue store unavailable");
    } else if (status >= 500) {
      request.log.error({ err: loggableError(err) }, "request failed");
    } else if (err instanceof ClientLimitError) {
      // An operator sees which client meets which limit; the client is told the same.
      request.log.info({ status, limit: err.limit, error: message }, "request refused by a client's limit");
    } else if (status === 429) {
      // The rate limiter has said so once for this window (api/rate-limit.ts).
      request.log.debug({ status, error: message }, "request refused");
    } else {
      request.log.info({ status, error: message }, "request refused");
    }
    if (status === 503) reply.header("Retry-After", "5");
    if (err instanceof ClientLimitError && status === 429) {
      reply.header("Retry-After", String(CLIENT_LIMIT_RETRY_AFTER_SECONDS));
    }
    // The rest of a body that timed out may still arrive: it must not be read as the next request.
    if (status === 408) reply.header("Connection", "close");
    return reply.code(status).send({ error: message });
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error: `no route ${request.method} ${clip(request.url.split("?")[0]!)}` }),
  );
}

/** The longest error message a client gets (and a log line repeats): values in it are cut. */
const MAX_ERROR_CHARS = 1000;

function statusOf(err: FastifyError): number {
  if (err instanceof InvalidJobError || err instanceof SearchTooBroadError) return 400;
  if (err instanceof ClientLimitError) return err.status;
  if (err instanceof ConflictError) return 409;
  if (err instanceof NotFoundError) return 404;
  if (err instanceof IllegalTransitionError) return 409;
  if (err.validation) return 400;
  // A 4xx Fastify set itself (a body cut off with ECONNRESET is a 400) is the client's doing, even
  // when its message looks like a lost connection.
  const code = err.statusCode;
  if (code && code >= 400 && code < 500) return code;
  if (isStoreUnavailable(err)) return 503;
  if (code && code >= 500 && code < 600) return code;
  return 500;
}

function clientMessage(err: FastifyError, maxBodyBytes: number): string {
  switch (err.code) {
    case "FST_ERR_CTP_INVALID_JSON_BODY":
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return `malformed JSON body: ${err.message.replace(/^Body is not valid JSON but content-type is set to 'application\/json'/, "not valid JSON")}`;
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return "request body is empty: send a JSON object";
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return `request body exceeds the limit of ${maxBodyBytes} bytes`;
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return "unsupported Content-Type: send application/json";
    default:
      if (err instanceof SyntaxError) return `malformed JSON body: ${err.message}`;
      return err.message;
  }
}

function publicMessage(status: number): string {
  if (status === 503) return "queue store unavailable, try again shortly";
  return "internal server error";
}

const LOGGED_MESSAGE_CHARS = 1000;

/**
 * An error as a log line may show it: its kind, code, message (cut) and stack. Nothing else: other
 * properties can carry what the request held (an ioredis ReplyError keeps the command and its
 * arguments, a whole job with its webhook URL).
 */
export function loggableError(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { message: String(err).slice(0, LOGGED_MESSAGE_CHARS) };
  const code = (err as { code?: unknown }).code;
  return {
    type: err.name,
    ...(typeof code === "string" ? { code } : {}),
    message: err.message.slice(0, LOGGED_MESSAGE_CHARS),
    ...(err.stack ? { stack: err.stack.slice(0, 4 * LOGGED_MESSAGE_CHARS) } : {}),
  };
}
