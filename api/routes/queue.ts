import { Type } from "@sinclair/typebox";
import type { ApiContext, App } from "../context.js";
import { API_KEY_SECURITY, errorResponses, QueueStats } from "../schemas.js";

export function queueRoutes(app: App, ctx: ApiContext): void {
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
