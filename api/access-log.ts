import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Logger } from "../core/logger.js";
import { clip } from "../core/text.js";

declare module "fastify" {
  interface FastifyRequest {
    /** Fields a handler adds to the request's access-log line (job_id, batch_id). */
    logContext: Record<string, unknown> | null;
  }
}

const QUIET = /^\/(health|metrics)(\/|$|\?)/;

/**
 * One line per request, written when the response is sent: method, path, status, time, and what
 * the handler added (job_id, batch_id), and the calling client's name.
 */
export function installAccessLog(app: FastifyInstance): void {
  app.decorateRequest("logContext", null);
  // Through the server's logger with the request id as a field: the same line as through
  // request.log, without making the request a child logger (request-logger.ts).
  const log = app.log as unknown as Logger;
  app.addHook("onResponse", (request, reply, done) => {
    const quiet = QUIET.test(request.url) || reply.statusCode === 429 || reply.statusCode === 503;
    if (!log.isLevelEnabled(quiet ? "debug" : "info")) return done();
    const fields = {
      request_id: request.id,
      method: request.method,
      url: clip(request.url),
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 100) / 100,
      ...(request.apiClient ? { client: request.apiClient.name } : {}),
      ...request.logContext,
    };
    // Probes, scrapes, rate-limited requests (a flood is told once, by the limiter) and requests
    // refused while the queue store is down or the API stops (told once, by the connection) log at
    // debug.
    if (quiet) log.debug(fields, "request");
    else log.info(fields, "request");
    done();
  });
}

export function addLogContext(request: FastifyRequest, fields: Record<string, unknown>): void {
  request.logContext = { ...request.logContext, ...fields };
}
