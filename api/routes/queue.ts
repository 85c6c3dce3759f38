import type { FastifyRequest } from "fastify";
import { Type } from "../../core/typebox.js";
import { clip } from "../../core/text.js";
import { viewerOf } from "../auth.js";
import { isStoreUnavailable, loggableError } from "../errors.js";
import type { ApiContext, App } from "../context.js";
import { DEFAULT_CLIENT } from "../../core/config/clients.js";
import { ANONYMOUS_CLIENT } from "../../core/jobs/fair-share.js";
import { History, type ClientFigures } from "../../core/jobs/records.js";
import type { Viewer } from "../../core/store/visibility.js";
import { HISTORY_MAX_MINUTES, HISTORY_MAX_STEP_MINUTES } from "../../core/stats/history.js";
import { API_KEY_SECURITY, errorResponses, optionalDefaults, QueueStats } from "../schemas.js";

const HistoryQuery = Type.Object(
  {
    minutes: Type.Integer({
      minimum: 1,
      maximum: HISTORY_MAX_MINUTES,
      default: 60,
      description: `How many minutes back, the current one included (at most ${HISTORY_MAX_MINUTES})`,
    }),
    step: Type.Integer({
      minimum: 1,
      maximum: HISTORY_MAX_STEP_MINUTES,
      default: 1,
      description: `How many minutes one point covers (at most ${HISTORY_MAX_STEP_MINUTES}): e.g. 20 for a day in 73 points. Points cover stretches aligned on multiples of \`step\` minutes since the epoch; the first and the last may cover fewer minutes`,
    }),
  },
  { additionalProperties: false },
);

/**
 * A read of the queue store that failed: at debug while the store is unreachable (the outage is
 * logged once, by the connection: core/services.ts), an error with what went wrong otherwise.
 */
function storeFailure(request: FastifyRequest, err: unknown, what: string): void {
  if (isStoreUnavailable(err)) request.log.debug({ error: clip((err as Error).message) }, what);
  else request.log.error({ err: loggableError(err) }, what);
}

/**
 * Each client's jobs now and its limits: every named client's (and those of jobs without one, "-",
 * while there are any) for an admin, a client's own for a client; undefined without named clients.
 */
async function clientFigures(ctx: ApiContext, viewer: Viewer): Promise<ClientFigures[] | undefined> {
  const configured = ctx.config.server.clients;
  // Without named clients there is none, or server.api_keys alone: one client that sees everything.
  if (configured.every((c) => c.name === DEFAULT_CLIENT && c.admin)) return undefined;
  const loads = await ctx.store.clientLoads();
  const shown = "client" in viewer ? configured.filter((c) => c.name === viewer.client) : configured;
  const figures: ClientFigures[] = shown.map((c) => {
    const load = loads.get(c.name);
    return {
      name: c.name,
      pending: load?.pending ?? 0,
      running: load?.running ?? 0,
      refused: load?.refused ?? {},
      weight: c.weight,
      ...(c.maxRunning !== undefined ? { max_running: c.maxRunning } : {}),
      ...(c.maxPending !== undefined ? { max_pending: c.maxPending } : {}),
      ...(c.jobTypes !== undefined ? { job_types: c.jobTypes } : {}),
      ...(c.maxPriority !== undefined ? { max_priority: c.maxPriority } : {}),
    };
  });
  const anonymous = loads.get(ANONYMOUS_CLIENT);
  if ("all" in viewer && anonymous && anonymous.pending + anonymous.running > 0) {
    figures.push({ name: ANONYMOUS_CLIENT, ...anonymous, weight: 1 });
  }
  return figures;
}

export function queueRoutes(app: App, ctx: ApiContext): void {
  app.get(
    "/stats/history",
    {
      schema: {
        summary: "Throughput, failures, durations and queue depth per minute (or per `step` minutes)",
        description:
          "One point per minute, oldest first, the current minute last: the jobs that completed and failed in it, the median and 95th percentile duration of the completed ones (estimated from the duration histogram's buckets), the depth of the queues as it ended; in total and per job type: of the API key's own jobs for a client that is not an admin, of everyone's otherwise. With the webhook delivery counters. Kept for a day.",
        tags: ["operations"],
        security: API_KEY_SECURITY,
        querystring: optionalDefaults(HistoryQuery),
        response: { 200: Type.Ref(History), ...errorResponses(400, 500) },
      },
    },
    async (request, reply) => {
      try {
        return await ctx.store.history(
          request.query.minutes,
          request.query.step,
          Date.now(),
          viewerOf(request),
        );
      } catch (err) {
        storeFailure(request, err, "history unavailable");
        return reply.code(500).send({ error: "history unavailable: the queue store did not answer" });
      }
    },
  );

  app.get(
    "/queue/stats",
    {
      schema: {
        summary: "Queue statistics",
        description:
          "Counts per queue (one per job type) and in total: of the API key's own jobs for a client that is not an admin, of everyone's otherwise; with named clients, each client's jobs waiting and running and its limits (`clients`: every client for an admin, its own for a client). 500 when they cannot be read.",
        tags: ["operations"],
        security: API_KEY_SECURITY,
        response: { 200: Type.Ref(QueueStats), ...errorResponses(500) },
      },
    },
    async (request, reply) => {
      try {
        const viewer = viewerOf(request);
        const stats = await ctx.store.queueStats(viewer);
        const clients = await clientFigures(ctx, viewer);
        return clients ? { ...stats, clients } : stats;
      } catch (err) {
        storeFailure(request, err, "queue statistics unavailable");
        return reply
          .code(500)
          .send({ error: "queue statistics unavailable: the queue store did not answer" });
      }
    },
  );
}
