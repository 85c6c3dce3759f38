import { Type } from "../../core/typebox.js";
import { JobLinks, TimelineEntry } from "../../core/jobs/records.js";
import { WRITES_OUTPUT } from "../../core/jobs/types.js";
import { presignedGet } from "../../core/storage/s3.js";
import { viewerOf } from "../auth.js";
import type { ApiContext, App } from "../context.js";
import { API_KEY_SECURITY, errorResponses, IdParams } from "../schemas.js";

/** A job's timeline and the links to its objects: what a page showing one job needs. */
export function jobDetailRoutes(app: App, ctx: ApiContext): void {
  app.get(
    "/jobs/:id/events",
    {
      schema: {
        summary: "A job's timeline",
        description:
          "What happened to the job, oldest first: submitted, claimed (by which executor), started (each run), progress (the latest report of a run), requeued (why), completed, failed or cancelled (the error), and each webhook delivery attempt. Kept as long as the job.",
        tags: ["jobs"],
        security: API_KEY_SECURITY,
        params: IdParams,
        response: {
          200: Type.Object({ events: Type.Array(Type.Ref(TimelineEntry)) }),
          ...errorResponses(400, 404),
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const events = await ctx.store.jobTimeline(id, viewerOf(request));
      if (!events) return reply.code(404).send({ error: `job ${id} not found` });
      return { events };
    },
  );

  app.get(
    "/jobs/:id/links",
    {
      schema: {
        summary: "Links to a job's source and output",
        description:
          "Presigned GET URLs of the job's source object and, once it has completed, of its output object (for a type that writes one), valid for `storage.output_link_expiry`: for an <img> or <audio> element, which cannot send an API key.",
        tags: ["jobs"],
        security: API_KEY_SECURITY,
        params: IdParams,
        response: { 200: JobLinks, ...errorResponses(400, 404) },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const job = await ctx.store.getJob(id, viewerOf(request));
      if (!job) return reply.code(404).send({ error: `job ${id} not found` });
      const expiryMs = ctx.config.storage.outputLinkExpiryMs;
      const expires_at = new Date(Date.now() + expiryMs).toISOString();
      const link = async (bucket: string, key: string) => ({
        url: await presignedGet(ctx.s3, bucket, key, expiryMs),
        expires_at,
      });
      const withOutput =
        job.status === "completed" && WRITES_OUTPUT[job.type] && job.dest_bucket && job.dest_key;
      reply.header("cache-control", "no-store");
      return {
        source: await link(job.source_bucket, job.source_key),
        ...(withOutput ? { output: await link(job.dest_bucket!, job.dest_key!) } : {}),
      };
    },
  );
}
