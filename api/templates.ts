// Templates as the API uses them: found by name for a client (the configuration's first, then the
// client's own), and applied to a submission before its route's schema validates it.
import { randomUUID } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { TemplateRef } from "../core/jobs/spec.js";
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
    /**
     * The template a submission used: its name and version, the id its job gets ({job_id}), and the
     * body as it was sent, before the template filled it in (what its Idempotency-Key fingerprints).
     */
    templateUse: { template: TemplateRef; jobId: string; sent: unknown } | null;
  }
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

/**
 * preValidation of a submit route: a body that names a `template` (and optionally its
 * `template_version`) becomes the body it stands for (applyTemplate), which the route's schema then
 * validates as any submission. 404 for a template the client does not have, 400 for one of another
 * type, a parameter it does not let a submission override, or a destination it cannot make. A
 * `template` or `template_version` that is not of their schema's shape is left to the schema.
 */
export function templateHook(ctx: ApiContext, route: TemplateRoute & { type: string }) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const sent = request.body;
    if (sent === null || typeof sent !== "object" || Array.isArray(sent)) return undefined;
    const body = sent as Record<string, unknown>;
    if (body.template === undefined) {
      if (body.template_version !== undefined) {
        return reply.code(400).send({ error: "template_version goes with template: name the template" });
      }
      return undefined;
    }
    const version = body.template_version;
    if (!isTemplateName(body.template)) return undefined;
    if (version !== undefined && !(Number.isSafeInteger(version) && (version as number) >= 1))
      return undefined;
    const name = body.template;
    const template = await findTemplate(ctx, request.apiClient?.name, name, version as number | undefined);
    if (!template) return reply.code(404).send(templateNotFound(name, version as number | undefined));
    if (template.type !== route.type) {
      const path = SUBMIT_ROUTES.find((r) => r.type === template.type)?.path;
      return reply.code(400).send({
        error: `template ${name} is a ${template.type} template, not ${route.type}: submit it to POST /api/v1${path ?? ""}`,
      });
    }
    const jobId = randomUUID();
    try {
      request.body = applyTemplate(template, body, route, jobId);
    } catch (err) {
      if (err instanceof TemplateUseError) return reply.code(400).send({ error: err.message });
      throw err;
    }
    request.templateUse = { template: { name, version: template.version }, jobId, sent };
    addLogContext(request, { template: name, template_version: template.version });
    return undefined;
  };
}
