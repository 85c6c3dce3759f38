// Templates as the API uses them: found by name for a client (the configuration's first, then the
// client's own), and applied to a submission before its route's schema validates it.
import { randomUUID } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { JobSpec, TemplateRef } from "../core/jobs/spec.js";
import { JOB_TYPES, type JobType } from "../core/jobs/types.js";
import {
  applyTemplate,
  isTemplateName,
  TemplateUseError,
  type Template,
  type TemplateRoute,
} from "../core/jobs/templates.js";
import { SUBMIT_ROUTES } from "./schemas.js";
import type { ApiContext, App } from "./context.js";
import { addLogContext } from "./access-log.js";

declare module "fastify" {
  interface FastifyRequest {
    /** The templates a submission used (TemplateUse); null for one that names none. */
    templateUse: TemplateUse | null;
  }
}

/**
 * The templates a submission used: for each of its jobs (one, or a batch's entries in order), the
 * template and version and the id the job gets ({job_id}), or undefined for a job without one; and
 * the body as it was sent, before the templates filled it in (what its Idempotency-Key fingerprints).
 */
export interface TemplateUse {
  jobs: Array<{ template: TemplateRef; jobId: string } | undefined>;
  sent: unknown;
}

/** Whose templates a request reads and writes: its client's name, undefined without authentication. */
export function templateOwner(request: FastifyRequest): string | undefined {
  return request.apiClient?.name;
}

/** The configuration's template of that name, if any. */
export function configTemplate(ctx: ApiContext, name: string): Template | undefined {
  return ctx.config.templates.find((t) => t.name === name);
}

/**
 * A template as `owner` sees it: the configuration's (every client's), else the client's own; its
 * current version or `version`. undefined when the client has none of that name (or not that
 * version): another client's templates are not seen at all.
 */
export async function findTemplate(
  ctx: ApiContext,
  owner: string | undefined,
  name: string,
  version?: number,
): Promise<Template | undefined> {
  const configured = configTemplate(ctx, name);
  if (configured) return version === undefined || version === configured.version ? configured : undefined;
  return ctx.store.storedTemplate(owner, name, version);
}

/** The 404 of a template a client does not have (or not at that version). */
export function templateNotFound(name: string, version?: number): { error: string } {
  return {
    error:
      version === undefined ? `template ${name} not found` : `template ${name} has no version ${version}`,
  };
}

/** Adds request.templateUse (null until a submission names a template). */
export function decorateTemplateUse(app: App): void {
  app.decorateRequest("templateUse", null);
}

/** A job's spec with the template it used (its id and `template`), if any. */
export function withTemplate(spec: JobSpec, use: TemplateUse["jobs"][number]): JobSpec {
  return use ? { ...spec, id: use.jobId, template: use.template } : spec;
}

/** Finds a template for the request's client (findTemplate). */
type Find = (name: string, version: number | undefined) => Promise<Template | undefined>;

/** findTemplate for a request's client, each name and version read once however many entries name it. */
function finder(ctx: ApiContext, request: FastifyRequest): Find {
  const found = new Map<string, Promise<Template | undefined>>();
  return (name, version) => {
    const key = `${name}@${version ?? ""}`;
    let template = found.get(key);
    if (!template) {
      template = findTemplate(ctx, templateOwner(request), name, version);
      found.set(key, template);
    }
    return template;
  };
}

/** A submission the template cannot make: its status and its answer. */
type Refusal = { status: 400 | 404; error: string };

/**
 * One job's body with its template applied (applyTemplate), or the refusal: a template the client
 * does not have (404), one of another type than `type` (when given), a parameter it does not let a
 * submission override, a destination it cannot make (400). Undefined when the body names no template
 * (or names it in a shape its schema will refuse).
 */
async function resolveOne(
  find: Find,
  body: Record<string, unknown>,
  route: TemplateRoute & { type: string },
): Promise<
  { body: Record<string, unknown>; use: { template: TemplateRef; jobId: string } } | Refusal | undefined
> {
  // A template_version without a template is left to the route's schema, which refuses it.
  if (body.template === undefined) return undefined;
  const version = body.template_version;
  if (!isTemplateName(body.template)) return undefined;
  if (version !== undefined && !(Number.isSafeInteger(version) && (version as number) >= 1)) return undefined;
  const name = body.template;
  const template = await find(name, version as number | undefined);
  if (!template) return { status: 404, ...templateNotFound(name, version as number | undefined) };
  if (template.type !== route.type) {
    const path = SUBMIT_ROUTES.find((r) => r.type === template.type)?.path;
    return {
      status: 400,
      error: `template ${name} is a ${template.type} template, not ${route.type}: submit it to POST /api/v1${path ?? ""}`,
    };
  }
  const jobId = randomUUID();
  try {
    return {
      body: applyTemplate(template, body, route, jobId),
      use: { template: { name, version: template.version }, jobId },
    };
  } catch (err) {
    if (err instanceof TemplateUseError) return { status: 400, error: err.message };
    throw err;
  }
}

/**
 * preValidation of a submit route: a body that names a `template` (and optionally its
 * `template_version`) becomes the body it stands for (applyTemplate), which the route's schema then
 * validates as any submission.
 */
export function templateHook(ctx: ApiContext, route: TemplateRoute & { type: string }) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const sent = request.body;
    if (!isObject(sent)) return undefined;
    const resolved = await resolveOne(finder(ctx, request), sent, route);
    if (resolved === undefined) return undefined;
    if ("status" in resolved) return reply.code(resolved.status).send({ error: resolved.error });
    request.body = resolved.body;
    request.templateUse = { jobs: [resolved.use], sent };
    addLogContext(request, {
      template: resolved.use.template.name,
      template_version: resolved.use.template.version,
    });
    return undefined;
  };
}

/** What a batch entry's template needs of its type: its parameters' names, whether it takes dest_prefix. */
export type EntryRoutes = (type: JobType) => TemplateRoute;

/**
 * preValidation of the batch route: each entry that names a template becomes the entry it stands
 * for, as a single submit's body does; its `type` may be left out (the template's). Its parameters
 * (overrides) are in its `parameters`, as an entry's are. A refusal names the entry (`jobs[3]: …`).
 */
export function batchTemplateHook(ctx: ApiContext, routeOf: EntryRoutes) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const sent = request.body;
    if (!isObject(sent) || !Array.isArray(sent.jobs)) return undefined;
    const entries = sent.jobs as unknown[];
    if (!entries.some((e) => isObject(e) && (e.template !== undefined || e.template_version !== undefined))) {
      return undefined;
    }
    const find = finder(ctx, request);
    const jobs: TemplateUse["jobs"] = [];
    const resolvedEntries: unknown[] = [];
    for (const [i, entry] of entries.entries()) {
      if (!isObject(entry) || (entry.template === undefined && entry.template_version === undefined)) {
        jobs.push(undefined);
        resolvedEntries.push(entry);
        continue;
      }
      // An entry without a type is of its template's (that version's).
      const version = Number.isSafeInteger(entry.template_version)
        ? (entry.template_version as number)
        : undefined;
      const found = isTemplateName(entry.template) ? await find(entry.template, version) : undefined;
      if (entry.type === undefined && found === undefined && isTemplateName(entry.template)) {
        return reply
          .code(404)
          .send({ error: `jobs[${i}]: ${templateNotFound(entry.template, version).error}` });
      }
      const type = (entry.type ?? found?.type) as JobType | undefined;
      if (type === undefined || !JOB_TYPES.includes(type) || !isObject(entry.parameters ?? {})) {
        jobs.push(undefined);
        resolvedEntries.push(entry);
        continue;
      }
      const { parameters, type: _type, ...fields } = entry;
      const flat = { ...fields, ...(parameters as Record<string, unknown> | undefined) };
      const route = { ...routeOf(type), type };
      const resolved = await resolveOne(find, flat, route);
      if (resolved !== undefined && "status" in resolved) {
        return reply.code(resolved.status).send({ error: `jobs[${i}]: ${resolved.error}` });
      }
      if (resolved === undefined) {
        jobs.push(undefined);
        resolvedEntries.push(entry);
        continue;
      }
      const own: Record<string, unknown> = { type };
      const params: Record<string, unknown> = {};
      for (const [name, value] of Object.entries(resolved.body)) {
        if (route.parameterNames.has(name)) params[name] = value;
        else own[name] = value;
      }
      resolvedEntries.push({ ...own, parameters: params });
      jobs.push(resolved.use);
    }
    request.body = { ...sent, jobs: resolvedEntries };
    request.templateUse = { jobs, sent };
    return undefined;
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
