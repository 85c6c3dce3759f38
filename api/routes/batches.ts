import type { Static } from "@sinclair/typebox";
import {
  assertWebhookUrl,
  buildJobSpec,
  checkJobSpec,
  normalizeParameters,
  specLimits,
  type JobSpec,
} from "../../core/jobs/spec.js";
import { addLogContext } from "../access-log.js";
import type { ApiContext, App } from "../context.js";
import {
  BatchCreateBody,
  BatchCreateResponse,
  type BatchEntry,
  BatchGetQuery,
  BatchGetResponse,
  BatchListQuery,
  BatchListResponse,
  ErrorRef,
  IdParams,
} from "../schemas.js";

function specFromEntry(entry: Static<typeof BatchEntry>, index: number, requestId: string): JobSpec {
  const parameters = normalizeParameters(entry.type, entry.parameters ?? {}, `jobs[${index}].parameters`);
  return buildJobSpec(entry.type, entry, parameters, requestId);
}

export function batchRoutes(app: App, ctx: ApiContext): void {
  const limits = specLimits(ctx.config);
  app.post(
    "/jobs/batch",
    {
      schema: {
        summary: "Submit a batch of 1 to 100 jobs",
        description:
          "All jobs are recorded atomically: on any invalid entry nothing is written. With options.fail_fast, the first failure cancels the batch's remaining jobs.",
        tags: ["batches"],
        body: BatchCreateBody,
        response: { 201: BatchCreateResponse, 400: ErrorRef, 401: ErrorRef, 409: ErrorRef, 503: ErrorRef },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const specs = body.jobs.map((entry, i) => {
        const spec = specFromEntry(entry, i, request.id);
        checkJobSpec(spec, limits, `jobs[${i}]`);
        return spec;
      });
      const webhookUrl = body.options?.webhook_url;
      if (webhookUrl !== undefined) assertWebhookUrl(webhookUrl, "options.webhook_url");
      const submitted = await ctx.store.submit(specs, {
        ...(body.batch_id !== undefined ? { id: body.batch_id } : {}),
        failFast: body.options?.fail_fast ?? false,
        ...(webhookUrl !== undefined ? { webhookUrl } : {}),
      });
      addLogContext(request, { batch_id: submitted.batchId, jobs: specs.length });
      return reply.code(201).send({
        batch_id: submitted.batchId!,
        total_jobs: specs.length,
        job_ids: submitted.jobIds,
        status: "queued" as const,
      });
    },
  );

  app.get(
    "/jobs/batch/:id",
    {
      schema: {
        summary: "Get a batch",
        tags: ["batches"],
        params: IdParams,
        querystring: BatchGetQuery,
        response: { 200: BatchGetResponse, 400: ErrorRef, 401: ErrorRef, 404: ErrorRef },
      },
    },
    async (request, reply) => {
      const batch = await ctx.store.getBatch(request.params.id);
      if (!batch) return reply.code(404).send({ error: `batch ${request.params.id} not found` });
      if (!request.query.include_jobs) return { batch };
      return { batch, jobs: await ctx.store.batchJobs(batch.id) };
    },
  );

  app.get(
    "/jobs/batch",
    {
      schema: {
        summary: "List batches, newest first",
        tags: ["batches"],
        querystring: BatchListQuery,
        response: { 200: BatchListResponse, 400: ErrorRef, 401: ErrorRef },
      },
    },
    async (request) => ctx.store.listBatches({ status: request.query.status, limit: request.query.limit }),
  );
}
