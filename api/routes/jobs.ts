import { Type } from "@sinclair/typebox";
import {
  assertParameterRules,
  buildJobSpec,
  checkJobSpec,
  specLimits,
  type JobSpec,
  type SubmissionFields,
} from "../../core/jobs/spec.js";
import type { JobType } from "../../core/jobs/types.js";
import { addLogContext } from "../access-log.js";
import type { ApiContext, App } from "../context.js";
import {
  ErrorRef,
  IdParams,
  Job,
  JobListQuery,
  JobListResponse,
  NON_PARAMETER_FIELDS,
  SUBMIT_ROUTES,
  submitBodySchema,
  SubmitResponse,
} from "../schemas.js";

type Body = Record<string, unknown>;

/**
 * A single-job body split into the job's record: locations, parameters, options. The route's
 * schema (the type's parameter schema inside the body's) has validated the body and applied the
 * defaults; what remains are the rules that span fields.
 */
export function specFromBody(type: JobType, body: Body, requestId: string): JobSpec {
  const parameters: Body = {};
  for (const [name, value] of Object.entries(body)) {
    if (!NON_PARAMETER_FIELDS.has(name)) parameters[name] = value;
  }
  assertParameterRules(type, parameters);
  return buildJobSpec(type, body as unknown as SubmissionFields, parameters, requestId);
}

export function jobRoutes(app: App, ctx: ApiContext): void {
  const errors = { 400: ErrorRef, 401: ErrorRef, 503: ErrorRef };
  const limits = specLimits(ctx.config);

  for (const route of SUBMIT_ROUTES) {
    app.post(
      route.path,
      {
        schema: {
          summary: route.summary,
          tags: ["jobs"],
          operationId: `submit_${route.type}`,
          body: submitBodySchema(route.type),
          response: { 202: Type.Ref(SubmitResponse), ...errors },
        },
      },
      async (request, reply) => {
        const spec = specFromBody(route.type, request.body as Body, request.id);
        checkJobSpec(spec, limits);
        const submitted = await ctx.store.submit([spec]);
        const jobId = submitted.jobIds[0]!;
        addLogContext(request, { job_id: jobId, type: route.type });
        return reply.code(202).send({
          job_id: jobId,
          status: "pending" as const,
          message: `${route.type} job queued`,
          queue_position: submitted.queuePositions[0]!,
        });
      },
    );
  }

  app.get(
    "/jobs/:id",
    {
      schema: {
        summary: "Get a job",
        tags: ["jobs"],
        params: IdParams,
        response: { 200: Type.Ref(Job), 401: ErrorRef, 404: ErrorRef },
      },
    },
    async (request, reply) => {
      const job = await ctx.store.getJob(request.params.id);
      if (!job) return reply.code(404).send({ error: `job ${request.params.id} not found` });
      return job;
    },
  );

  app.get(
    "/jobs",
    {
      schema: {
        summary: "List jobs, newest first",
        tags: ["jobs"],
        querystring: JobListQuery,
        response: { 200: JobListResponse, 400: ErrorRef, 401: ErrorRef },
      },
    },
    async (request) => ctx.store.listJobs({ status: request.query.status, limit: request.query.limit }),
  );
}
