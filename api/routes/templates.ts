import { Type, type TSchema } from "../../core/typebox.js";
import { schemaBounds } from "../../core/jobs/bounds.js";
import {
  expandShorthand,
  PIPELINE_TYPE,
  templateBodySchema,
  templateRuleProblem,
  TEMPLATE_NAME_PATTERN,
  TemplateSchema,
  type Template,
  type TemplateBody,
} from "../../core/jobs/templates.js";
import { JOB_TYPES } from "../../core/jobs/types.js";
import { ERROR_MESSAGE } from "../../core/jobs/bounds.js";
import { addLogContext } from "../access-log.js";
import type { ApiContext, App } from "../context.js";
import { API_KEY_SECURITY, BODY_ERRORS, errorResponses, optionalDefaults } from "../schemas.js";
import { configTemplate, findTemplate, templateNotFound, templateOwner } from "../templates.js";

const TemplateName = Type.String({
  pattern: TEMPLATE_NAME_PATTERN,
  description: "The template's name: lower-case letters, digits, `.`, `_`, `-`; up to 64",
  [ERROR_MESSAGE]: "must be a template name (lower-case letters, digits, . _ -; up to 64), not {value}",
});
const TemplateParams = Type.Object({ name: TemplateName });

/** The body of PUT /templates/{name}: a template of one type, `type` choosing its schema. */
function templatePutBody(ctx: ApiContext): TSchema {
  const bounds = schemaBounds(ctx.config);
  return Type.Unsafe<TemplateBody>({
    type: "object",
    required: ["type"],
    discriminator: { propertyName: "type" },
    oneOf: JOB_TYPES.map((type) => templateBodySchema(type, bounds, optionalDefaults)),
    description: `A job type and its parameters, as a submit of the type takes them${
      (JOB_TYPES as readonly string[]).includes(PIPELINE_TYPE)
        ? '; `{"steps": {…}, "keep_partial": …}` without `type` is a pipeline\'s'
        : ""
    }`,
  });
}

/** Whose template a name is, for a request that would write it: the configuration's are read-only. */
function readOnly(ctx: ApiContext, name: string): { error: string } | undefined {
  return configTemplate(ctx, name)
    ? {
        error: `template ${name} is the configuration's (templates.${name}): it is read-only; store yours under another name`,
      }
    : undefined;
}

export function templateRoutes(app: App, ctx: ApiContext): void {
  const TemplateRef = Type.Ref(TemplateSchema);

  app.put(
    "/templates/:name",
    {
      schema: {
        summary: "Store a template",
        description:
          "Stores the next version of the client's template (201 for its first, 200 after), validated as a submit of its type is (its parameters with the configuration's bounds, the type's rules): a bad template is refused now, naming the field. Earlier versions stay readable (`?version=`), the newest `limits.template_versions` of them. A name of the configuration's templates is refused (409), and so is a new name when the client has `limits.templates_per_client` templates.",
        tags: ["templates"],
        security: API_KEY_SECURITY,
        params: TemplateParams,
        body: templatePutBody(ctx),
        response: { 200: TemplateRef, 201: TemplateRef, ...errorResponses(...BODY_ERRORS, 409) },
      },
      preValidation: async (request) => {
        request.body = expandShorthand(request.body);
      },
    },
    async (request, reply) => {
      const { name } = request.params;
      const refused = readOnly(ctx, name);
      if (refused) return reply.code(409).send(refused);
      const body = request.body as TemplateBody;
      const problem = templateRuleProblem(body, schemaBounds(ctx.config));
      if (problem) return reply.code(400).send({ error: problem });
      const { templatesPerClient, templateVersions } = ctx.config.limits;
      const stored = await ctx.store.putTemplate(templateOwner(request), name, body, {
        perClient: templatesPerClient,
        versions: templateVersions,
      });
      if ("refused" in stored) {
        const owner = templateOwner(request);
        request.log.warn(
          { template: name, templates: stored.refused },
          "template refused: too many templates",
        );
        return reply.code(409).send({
          error: `${owner === undefined ? "this service" : `client ${owner}`} has ${stored.refused} templates, the most limits.templates_per_client allows: delete one, or store this as a version of one`,
        });
      }
      addLogContext(request, { template: name, template_version: stored.version });
      // Read back for its created_at; a DELETE in between leaves what was stored to answer.
      const template = (await ctx.store.storedTemplate(templateOwner(request), name, stored.version)) ?? {
        name,
        version: stored.version,
        source: "api" as const,
        ...body,
      };
      return reply.code(stored.created ? 201 : 200).send(template);
    },
  );

  app.get(
    "/templates/:name",
    {
      schema: {
        summary: "Get a template",
        description:
          "Its current version, or the one `version` names. Another client's templates are not found (404).",
        tags: ["templates"],
        security: API_KEY_SECURITY,
        params: TemplateParams,
        querystring: Type.Object(
          {
            version: Type.Optional(
              Type.Integer({ minimum: 1, description: "A version other than the current one" }),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: TemplateRef, ...errorResponses(400, 404) },
      },
    },
    async (request, reply) => {
      const { name } = request.params;
      const { version } = request.query;
      const template = await findTemplate(ctx, templateOwner(request), name, version);
      return template ?? reply.code(404).send(templateNotFound(name, version));
    },
  );

  app.delete(
    "/templates/:name",
    {
      schema: {
        summary: "Delete a template",
        description:
          "Deletes the client's template and its versions (jobs that used it keep what they ran). Its name's next PUT makes a version after the last one. The configuration's templates are read-only (409).",
        tags: ["templates"],
        security: API_KEY_SECURITY,
        params: TemplateParams,
        response: {
          200: Type.Object({
            name: Type.String(),
            version: Type.Integer({ description: "The version the name stood for" }),
            deleted: Type.Literal(true),
          }),
          ...errorResponses(400, 404, 409),
        },
      },
    },
    async (request, reply) => {
      const { name } = request.params;
      const refused = readOnly(ctx, name);
      if (refused) return reply.code(409).send(refused);
      const version = await ctx.store.deleteTemplate(templateOwner(request), name);
      if (version === undefined) return reply.code(404).send(templateNotFound(name));
      addLogContext(request, { template: name, template_version: version });
      return { name, version, deleted: true as const };
    },
  );

  app.get(
    "/templates",
    {
      schema: {
        summary: "List templates",
        description:
          "The configuration's templates (`source: config`, every client's) and the client's own (`source: api`), each at its current version, in name order.",
        tags: ["templates"],
        security: API_KEY_SECURITY,
        response: {
          200: Type.Object({ templates: Type.Array(TemplateRef) }),
          ...errorResponses(),
        },
      },
    },
    async (request) => {
      const own = await ctx.store.storedTemplates(templateOwner(request));
      const configured = new Set(ctx.config.templates.map((t) => t.name));
      const templates: Template[] = [...ctx.config.templates, ...own.filter((t) => !configured.has(t.name))];
      templates.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      return { templates };
    },
  );
}
