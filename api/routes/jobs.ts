import { Type } from "../../core/typebox.js";
import { schemaBounds, type SchemaBounds } from "../../core/jobs/bounds.js";
import { buildJobSpec, retrySpec, type JobSpec, type SubmissionFields } from "../../core/jobs/spec.js";
import { WRITES_OUTPUT, type JobType } from "../../core/jobs/types.js";
import { presignedGet } from "../../core/storage/s3.js";
import type { Submitted } from "../../core/store/store.js";
import { CANCELLED_BY_REQUEST } from "../../core/policy.js";
import { addLogContext } from "../access-log.js";
import { submitterOf, viewerOf } from "../auth.js";
import type { ApiContext, App } from "../context.js";
import { listFilter, nextCursor } from "../listing.js";
import { jobFilter } from "../search.js";
import {
  API_KEY_SECURITY,
  BODY_ERRORS,
  errorResponses,
  IDEMPOTENCY_ERRORS,
  IdempotencyHeaders,
  IdParams,
  Job,
  JobListQuery,
  JobListResponse,
  NON_PARAMETER_FIELDS,
  RetriedAlreadyResponse,
  RetryBody,
  SUBMIT_ROUTES,
  submitBodySchema,
  SubmitResponse,
  submitResponse,
} from "../schemas.js";
import { answerSubmit } from "../idempotency.js";
import { decorateTemplateUse, templateHook, withTemplate } from "../templates.js";
import { parameterNames } from "../../core/jobs/templates.js";
import type { FastifyRequest } from "fastify";

type Body = Record<string, unknown>;

/**
 * A single-job body split into the job's record: locations, parameters, options. The route's
 * schema (the type's parameter schema inside the body's, with the configuration's bounds and the
 * rules that span fields) has validated the body and applied the defaults.
 */
export function specFromBody(
  type: JobType,
  body: Body,
  requestId: string,
  bounds?: SchemaBounds,
  use?: FastifyRequest["templateUse"],
): JobSpec {
  const parameters: Body = {};
  for (const name in body) {
    if (!NON_PARAMETER_FIELDS.has(name)) parameters[name] = body[name];
  }
  return withTemplate(
    buildJobSpec(type, body as unknown as SubmissionFields, parameters, requestId, bounds),
    use?.jobs[0],
  );
}

export function jobRoutes(app: App, ctx: ApiContext): void {
  const bounds = schemaBounds(ctx.config);
  decorateTemplateUse(app);

  for (const route of SUBMIT_ROUTES) {
    const body = submitBodySchema(route.type, bounds);
    app.post(
      route.path,
      {
        // A body naming a template becomes the body it stands for before the schema validates it.
        preValidation: templateHook(ctx, {
          type: route.type,
          parameterNames: new Set(parameterNames(route.type, bounds)),
          takesPrefix: "dest_prefix" in body.properties,
        }),
        schema: {
          summary: route.summary,
          tags: ["jobs"],
          operationId: `submit_${route.type}`,
          security: API_KEY_SECURITY,
          headers: IdempotencyHeaders,
          body,
          response: {
            202: submitResponse("Accepted: the job is queued", Type.Ref(SubmitResponse)),
            ...errorResponses(...BODY_ERRORS, ...IDEMPOTENCY_ERRORS, 403, 404),
          },
        },
      },
      async (request, reply) =>
        answerSubmit(ctx, request, reply, {
          ...QUEUED,
          submit: (idempotency) =>
            ctx.store.submit(
              [specFromBody(route.type, request.body, request.id, bounds, request.templateUse)],
              undefined,
              submitterOf(request),
              idempotency,
            ),
        }),
    );
  }

  app.get(
    "/jobs/:id",
    {
      schema: {
        summary: "Get a job",
        tags: ["jobs"],
        security: API_KEY_SECURITY,
        params: IdParams,
        response: { 200: Type.Ref(Job), ...errorResponses(400, 404) },
      },
    },
    async (request, reply) => {
      const job = await ctx.store.getJob(request.params.id, viewerOf(request));
      if (!job) return reply.code(404).send({ error: `job ${request.params.id} not found` });
      return job;
    },
  );

  app.post(
    "/jobs/:id/cancel",
    {
      schema: {
        summary: "Cancel a job",
        description:
          "A pending job fails at once and never starts; a processing job has its runner stopped (nothing is uploaded) and fails. Its error is `cancelled by request`, `cancelled_at` is set, SSE sends `complete` and its webhook fires as for a failed job. Cancelling a cancelled job changes nothing (200); a completed or otherwise failed job is 409.",
        tags: ["jobs"],
        security: API_KEY_SECURITY,
        params: IdParams,
        response: { 200: Type.Ref(Job), ...errorResponses(400, 404, 409) },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      addLogContext(request, { job_id: id });
      const viewer = viewerOf(request);
      if (!(await ctx.store.getJob(id, viewer)))
        return reply.code(404).send({ error: `job ${id} not found` });
      const outcome = await ctx.store.cancel("job", id, CANCELLED_BY_REQUEST);
      if (outcome !== "cancelled" && outcome !== "unchanged") {
        return reply.code(409).send({
          error: `job ${id} has already ${outcome === "completed" ? "completed" : "failed"}; only a pending or processing job can be cancelled`,
        });
      }
      if (outcome === "cancelled") request.log.info({ job_id: id }, "job cancelled by request");
      const job = await ctx.store.getJob(id, viewer);
      if (!job) return reply.code(404).send({ error: `job ${id} not found` });
      return job;
    },
  );

  app.post(
    "/jobs/:id/retry",
    {
      schema: {
        summary: "Retry a failed job",
        description:
          'A failed job (a cancelled one included) is submitted again as a new job of the same type, locations, parameters, webhook, resources and timeout, whose record carries `retry_of`; the failed job\'s record carries `retried_as`, written in the same step. A job retried before is not retried again: the answer is 200 with its existing retry (`job_id`), and nothing is made, however many retries arrive at once; the body `{"force": true}` makes another retry, which `retried_as` then names. The body is optional. A completed or unfinished job is 409.',
        tags: ["jobs"],
        security: API_KEY_SECURITY,
        headers: IdempotencyHeaders,
        params: IdParams,
        body: RetryBody,
        response: {
          200: Type.Ref(RetriedAlreadyResponse),
          202: submitResponse("Accepted: the new job is queued", Type.Ref(SubmitResponse)),
          ...errorResponses(400, 403, 404, ...IDEMPOTENCY_ERRORS, 413, 415),
        },
      },
      // The body is optional: none is {} (no force), for validation and the Idempotency-Key alike.
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const force = request.body?.force === true;
      const viewer = viewerOf(request);
      return answerSubmit(ctx, request, reply, {
        status: 202,
        render: (submitted) => queued(submitted, ` (retry of ${id})`),
        logContext: (submitted) => ({ ...QUEUED.logContext(submitted), retry_of: id }),
        submit: async (idempotency) => {
          const job = await ctx.store.getJob(id, viewer);
          if (!job) {
            void reply.code(404).send({ error: `job ${id} not found` });
            return undefined;
          }
          if (job.status !== "failed") {
            void reply
              .code(409)
              .send({ error: `job ${id} is ${job.status}; only a failed job can be retried` });
            return undefined;
          }
          const outcome = await ctx.store.retry(retrySpec(job, request.id, bounds), {
            force,
            by: submitterOf(request),
            ...(idempotency ? { idempotency } : {}),
          });
          if ("retriedAs" in outcome) {
            const existing = await ctx.store.getJob(outcome.retriedAs, viewer);
            addLogContext(request, { job_id: id, retried_as: outcome.retriedAs });
            void reply.code(200).send({
              job_id: outcome.retriedAs,
              status: existing?.status ?? "failed",
              message: `job ${id} was retried already as ${outcome.retriedAs}; send {"force": true} to retry it again`,
            });
            return undefined;
          }
          return outcome;
        },
      });
    },
  );

  app.get(
    "/jobs/:id/output",
    {
      schema: {
        summary: "Download a job's output",
        description:
          "302 to a presigned GET URL of the completed job's output object, valid for `storage.output_link_expiry`. 409 while the job has not completed (or when it failed); 404 for a job type that writes no file.",
        tags: ["jobs"],
        security: API_KEY_SECURITY,
        params: IdParams,
        response: {
          302: Type.Null({ description: "Found: the `Location` header is the presigned URL" }),
          ...errorResponses(400, 404, 409),
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const job = await ctx.store.getJob(id, viewerOf(request));
      if (!job) return reply.code(404).send({ error: `job ${id} not found` });
      if (!WRITES_OUTPUT[job.type] || !job.dest_bucket || !job.dest_key) {
        return reply.code(404).send({ error: `job ${id} is ${job.type}, which writes no output file` });
      }
      if (job.status !== "completed") {
        return reply
          .code(409)
          .send({ error: `job ${id} is ${job.status}; its output exists once it has completed` });
      }
      const url = await presignedGet(
        ctx.s3,
        job.dest_bucket,
        job.dest_key,
        ctx.config.storage.outputLinkExpiryMs,
      );
      reply.header("cache-control", "no-store");
      return reply.redirect(url, 302);
    },
  );

  app.get(
    "/jobs",
    {
      schema: {
        summary: "List jobs, newest first",
        description:
          "Filters combine (status, state, type, batch_id, client, created_after/created_before, and the search terms q, id_prefix, request_id, source_prefix, dest_prefix); `total` counts every job matching them. Page with `cursor`: each answer with more jobs after it carries `next_cursor`. A search reads the search indexes: at most 10000 of their entries a call, beyond which it is refused (400) with what to give instead (docs/api.md#search).",
        tags: ["jobs"],
        security: API_KEY_SECURITY,
        querystring: JobListQuery,
        response: { 200: JobListResponse, ...errorResponses(400, 403) },
      },
    },
    async (request) => {
      const viewer = viewerOf(request);
      const { jobs, total, next } = await ctx.store.listJobs({
        ...listFilter(request.query, viewer),
        ...jobFilter(request.query, viewer),
      });
      return { jobs, total, ...nextCursor(next) };
    },
  );
}

/** The answer to a request that queued one job: its id, where it stands in its queue. */
function queued(submitted: Submitted, note = "") {
  return {
    job_id: submitted.jobIds[0]!,
    status: "pending" as const,
    message: `${submitted.types[0]!} job queued${note}`,
    queue_position: submitted.queuePositions[0]!,
  };
}

/** How a route that queues one job answers (answerSubmit), first and on a replay. */
const QUEUED = {
  status: 202,
  render: (submitted: Submitted) => queued(submitted),
  logContext: (submitted: Submitted) => ({ job_id: submitted.jobIds[0]!, type: submitted.types[0]! }),
} as const;
