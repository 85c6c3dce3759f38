import type { FastifyInstance, FastifyRequest } from "fastify";
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
  app.addHook("onResponse", (request, reply, done) => {
    const fields = {
      method: request.method,
      url: clip(request.url),
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 100) / 100,
      ...(request.apiClient ? { client: request.apiClient.name } : {}),
      ...request.logContext,
    };
    // Probes, scrapes and rate-limited requests (a flood is told once, by the limiter) log at debug.
    if (QUIET.test(request.url) || reply.statusCode === 429) request.log.debug(fields, "request");
    else request.log.info(fields, "request");
    done();
  });
}

export function addLogContext(request: FastifyRequest, fields: Record<string, unknown>): void {
  request.logContext = { ...request.logContext, ...fields };
}
