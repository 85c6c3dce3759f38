import { systemReport } from "../../core/health/dependencies.js";
import type { ApiContext, App } from "../context.js";
import { HealthResponse, LiveResponse, ReadyResponse } from "../schemas.js";

/** Public, unversioned: /health, /health/live, /health/ready, /metrics. */
export function operationsRoutes(app: App, ctx: ApiContext, state: { draining: boolean }): void {
  app.get(
    "/health",
    {
      schema: {
        summary: "Health report",
        description: "Always 200; `status` says healthy, degraded or unhealthy.",
        tags: ["operations"],
        response: { 200: HealthResponse },
      },
    },
    async () => {
      const [report, system] = await Promise.all([ctx.health.check(), systemReport(ctx.config.dataDir)]);
      return {
        status: report.status,
        timestamp: report.timestamp,
        system,
        dependencies: report.dependencies,
      };
    },
  );

  app.get(
    "/health/live",
    { schema: { summary: "Liveness", tags: ["operations"], response: { 200: LiveResponse } } },
    async () => ({ status: "alive", timestamp: new Date().toISOString() }),
  );

  app.get(
    "/health/ready",
    {
      schema: {
        summary: "Readiness",
        description:
          "200 when the queue store and the object store answer; 503 otherwise or while shutting down.",
        tags: ["operations"],
        response: { 200: ReadyResponse, 503: ReadyResponse },
      },
    },
    async (_request, reply) => {
      const report = await ctx.health.check();
      const ready = report.status !== "unhealthy" && !state.draining;
      return reply.code(ready ? 200 : 503).send({
        status: ready ? "ready" : "not_ready",
        timestamp: report.timestamp,
        dependencies: report.dependencies,
      });
    },
  );

  app.get(
    "/metrics",
    {
      schema: {
        summary: "Metrics in the Prometheus text exposition format",
        tags: ["operations"],
        produces: ["text/plain"],
        response: { 200: { type: "string" } },
      },
    },
    async (_request, reply) => reply.type(ctx.metrics.contentType).send(await ctx.metrics.metrics()),
  );
}
