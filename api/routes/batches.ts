import { schemaBounds } from "../../core/jobs/bounds.js";
import { buildJobSpec, InvalidJobError } from "../../core/jobs/spec.js";
import { CANCELLED_BY_REQUEST } from "../../core/policy.js";
import { addLogContext } from "../access-log.js";
import { submitterOf, viewerOf } from "../auth.js";
import type { ApiContext, App } from "../context.js";
import { listFilter, nextCursor } from "../listing.js";
import {
  API_KEY_SECURITY,
  batchCreateBody,
  BatchCreateResponse,
  BatchGetQuery,
  BatchGetResponse,
  BatchListQuery,
  BatchListResponse,
  BODY_ERRORS,
  errorResponses,
  IDEMPOTENCY_ERRORS,
  IdempotencyHeaders,
  IdParams,
  submitResponse,
} from "../schemas.js";
import { answerSubmit } from "../idempotency.js";
import { batchTemplateHook, withTemplate } from "../templates.js";
import { parameterNames } from "../../core/jobs/templates.js";
import { DESTINATIONS_IN_PARAMETERS, WRITES_UNDER_PREFIX } from "../../core/jobs/types.js";

export function batchRoutes(app: App, ctx: ApiContext): void {
  // Every entry is validated by the route schema: its type's parameters with the configuration's
  // bounds, defaults applied.
  const bounds = schemaBounds(ctx.config);
  const body = batchCreateBody(bounds);
  app.post(
    "/jobs/batch",
    {
      // Entries naming a template become the entries they stand for before the schema validates them.
      preValidation: batchTemplateHook(ctx, (type) => ({
        parameterNames: new Set(parameterNames(type, bounds)),
        takesPrefix: WRITES_UNDER_PREFIX[type] || DESTINATIONS_IN_PARAMETERS[type],
      })),
      schema: {
        summary: "Submit a batch of 1 to 100 jobs",
        description:
          "All jobs are recorded atomically: on any invalid entry nothing is written. With options.fail_fast, the first failure cancels the batch's remaining jobs.",
        tags: ["batches"],
        security: API_KEY_SECURITY,
        headers: IdempotencyHeaders,
        body,
        response: {
          201: submitResponse("Created: the batch and its jobs are queued", BatchCreateResponse),
          ...errorResponses(...BODY_ERRORS, ...IDEMPOTENCY_ERRORS, 403, 404),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      return answerSubmit(ctx, request, reply, {
        status: 201,
        render: (submitted) => ({
          batch_id: submitted.batchId!,
          total_jobs: submitted.jobIds.length,
          job_ids: submitted.jobIds,
          status: "queued" as const,
        }),
        logContext: (submitted) => ({ batch_id: submitted.batchId, jobs: submitted.jobIds.length }),
        submit: (idempotency) => {
          const priority = body.options?.priority;
          const specs = body.jobs.map((entry, i) => {
            try {
              return withTemplate(
                buildJobSpec(
                  entry.type,
                  priority === undefined || entry.priority !== undefined ? entry : { ...entry, priority },
                  entry.parameters,
                  request.id,
                  bounds,
                ),
                request.templateUse?.jobs[i],
              );
            } catch (err) {
              throw err instanceof InvalidJobError ? new InvalidJobError(`jobs[${i}]: ${err.message}`) : err;
            }
          });
          const webhookUrl = body.options?.webhook_url;
          return ctx.store.submit(
            specs,
            {
              ...(body.batch_id !== undefined ? { id: body.batch_id } : {}),
              failFast: body.options?.fail_fast ?? false,
              ...(webhookUrl !== undefined ? { webhookUrl } : {}),
            },
            submitterOf(request),
            idempotency,
          );
        },
      });
    },
  );

  app.post(
    "/jobs/batch/:id/cancel",
    {
      schema: {
        summary: "Cancel a batch's unfinished jobs",
        description:
          "Every pending or processing job of the batch is cancelled as POST /jobs/{id}/cancel cancels one (its fail_fast does not apply); the batch then ends by the usual rule and carries `cancelled_at`. Cancelling it again changes nothing (200); a batch that had already ended is 409.",
        tags: ["batches"],
        security: API_KEY_SECURITY,
        params: IdParams,
        response: { 200: BatchGetResponse, ...errorResponses(400, 404, 409) },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      addLogContext(request, { batch_id: id });
      const viewer = viewerOf(request);
      const found = await ctx.store.findBatch(id, viewer);
      if (!found) return reply.code(404).send({ error: `batch ${id} not found` });
      const outcome = await ctx.store.cancel("batch", found.storedId, CANCELLED_BY_REQUEST);
      if (outcome !== "cancelled" && outcome !== "unchanged") {
        return reply
          .code(409)
          .send({ error: `batch ${id} has already ended (${outcome}); nothing to cancel` });
      }
      if (outcome === "cancelled") request.log.info({ batch_id: id }, "batch cancelled by request");
      const batch = await ctx.store.getBatch(id, viewer);
      if (!batch) return reply.code(404).send({ error: `batch ${id} not found` });
      return { batch };
    },
  );

  app.get(
    "/jobs/batch/:id",
    {
      schema: {
        summary: "Get a batch",
        tags: ["batches"],
        security: API_KEY_SECURITY,
        params: IdParams,
        querystring: BatchGetQuery,
        response: { 200: BatchGetResponse, ...errorResponses(400, 404) },
      },
    },
    async (request, reply) => {
      const viewer = viewerOf(request);
      const found = await ctx.store.findBatch(request.params.id, viewer);
      if (!found) return reply.code(404).send({ error: `batch ${request.params.id} not found` });
      const { batch, storedId } = found;
      if (!request.query.include_jobs) return { batch };
      return { batch, jobs: await ctx.store.batchJobs(storedId) };
    },
  );

  app.get(
    "/jobs/batch",
    {
      schema: {
        summary: "List batches, newest first",
        description:
          "Filters combine (status, created_after/created_before); `total` counts every batch matching them. Page with `cursor`: each answer with more batches after it carries `next_cursor`.",
        tags: ["batches"],
        security: API_KEY_SECURITY,
        querystring: BatchListQuery,
        response: { 200: BatchListResponse, ...errorResponses(400) },
      },
    },
    async (request) => {
      const { status } = request.query;
      const { batches, total, next } = await ctx.store.listBatches({
        ...listFilter(request.query, viewerOf(request)),
        ...(status ? { status } : {}),
      });
      return { batches, total, ...nextCursor(next) };
    },
  );
}
