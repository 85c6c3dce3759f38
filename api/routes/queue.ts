import { Type } from "../../core/typebox.js";
import type { ApiContext, App } from "../context.js";
import { History } from "../../core/jobs/records.js";
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

export function queueRoutes(app: App, ctx: ApiContext): void {
  app.get(
    "/stats/history",
    {
      schema: {
        summary: "Throughput, failures, durations and queue depth per minute (or per `step` minutes)",
        description:
          "One point per minute, oldest first, the current minute last: the jobs that completed and failed in it, the median and 95th percentile duration of the completed ones (estimated from the duration histogram's buckets), the depth of the queues as it ended; in total and per job type. With the webhook delivery counters. Kept for a day.",
        tags: ["operations"],
        security: API_KEY_SECURITY,
        querystring: optionalDefaults(HistoryQuery),
        response: { 200: Type.Ref(History), ...errorResponses(400, 500) },
      },
    },
    async (request, reply) => {
      try {
        return await ctx.store.history(request.query.minutes, request.query.step);
      } catch (err) {
        request.log.error({ err }, "history unavailable");
        return reply.code(500).send({ error: "history unavailable: the queue store did not answer" });
      }
    },
  );

  app.get(
    "/queue/stats",
    {
      schema: {
        summary: "Queue statistics",
        description: "Counts per queue (one per job type) and in total. 500 when they cannot be read.",
        tags: ["operations"],
        security: API_KEY_SECURITY,
        response: { 200: Type.Ref(QueueStats), ...errorResponses(500) },
      },
    },
    async (request, reply) => {
      try {
        return await ctx.store.queueStats();
      } catch (err) {
        request.log.error({ err }, "queue statistics unavailable");
        return reply
          .code(500)
          .send({ error: "queue statistics unavailable: the queue store did not answer" });
      }
    },
  );
}
