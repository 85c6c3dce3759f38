import { createHash } from "node:crypto";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifySchema } from "fastify";
import type { App } from "./context.js";
import { toOpenApi30 } from "./openapi30.js";
import { RESULT_SCHEMAS } from "./schemas.js";
import { securityHeaders } from "./ui.js";

/**
 * The one inline style Swagger UI needs: the <style> of the logo its top bar draws as an inline SVG
 * (swagger-ui-standalone-preset.js). Allowed by its hash, so no other inline style is.
 */
export const SWAGGER_LOGO_STYLE = ".logo_small_svg__cls-2{fill:#fff}.logo_small_svg__cls-3{fill:#85ea2d}";

/**
 * The Content-Security-Policy of the API reference (Swagger UI, @fastify/swagger-ui): its page
 * loads its scripts and styles as files of its own (no inline script: the package's csp.json lists
 * no hash to allow), its logo's inline style by hash, the favicon and images as its own files or
 * data: URLs, and calls the API on the same origin ("Try it out"). React sets styles through the
 * DOM, which style-src does not govern. Trusted Types are not required: Swagger UI writes sanitised
 * Markdown with innerHTML.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  `style-src 'self' 'sha256-${createHash("sha256").update(SWAGGER_LOGO_STYLE).digest("base64")}'`,
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

/** The OpenAPI 3 document, generated from the route schemas, and the interactive reference. */
export async function registerDocs(app: App, docsPath: string, version: string): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: "3.0.3",
      info: {
        title: "media-service",
        version,
        description:
          "Asynchronous media processing: submit jobs, follow them by polling, Server-Sent Events or webhooks. Every /api/v1 route needs an API key.",
      },
      components: {
        securitySchemes: {
          ApiKey: { type: "apiKey", in: "header", name: "X-API-Key" },
          Bearer: { type: "http", scheme: "bearer" },
        },
        schemas: Object.fromEntries(
          Object.entries(RESULT_SCHEMAS).map(([name, schema]) => [name, JSON.parse(JSON.stringify(schema))]),
        ),
      },
      tags: [
        { name: "jobs", description: "Submit and follow jobs" },
        { name: "batches", description: "Batches of up to 100 jobs" },
        {
          name: "templates",
          description: "Named recipes of jobs a submit reuses: a type and its parameters",
        },
        { name: "operations", description: "Health, queue statistics, metrics" },
      ],
    },
    transform: nameWildcard,
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json.$id === "string" ? json.$id : `def-${i}`,
    },
  });
  // Every answer under the prefix (the page, its files, the document) carries the dashboard's kind of
  // headers, with a policy of its own; the package's static files take no hooks of their own.
  const under = (url: string) =>
    url === docsPath || url.startsWith(`${docsPath}/`) || url.startsWith(`${docsPath}?`);
  app.addHook("onRequest", (request, reply, done) => {
    if (under(request.url)) securityHeaders(reply, DOCS_CSP);
    done();
  });
  await app.register(swaggerUi, {
    routePrefix: docsPath,
    // No validator badge: it would send the document's address to validator.swagger.io.
    uiConfig: { docExpansion: "list", deepLinking: true, validatorUrl: null },
  });
}

/**
 * A route as the document states it: its body's rules across fields in `x-rules`
 * (api/openapi30.ts), and a wildcard route (`/jobs/:id/ladder/*`) documented with a named parameter, `{path}`, as
 * OpenAPI names every path parameter (the route's own `*` would read as a parameter named "*").
 */
function nameWildcard({ schema, url }: { schema: FastifySchema; url: string }): {
  schema: FastifySchema;
  url: string;
} {
  if (schema?.body) schema = { ...schema, body: toOpenApi30(schema.body) };
  const params = schema?.params as { properties?: Record<string, unknown>; required?: string[] } | undefined;
  const rest = params?.properties?.["*"];
  if (!url.endsWith("/*") || !params || rest === undefined) return { schema, url };
  const { "*": _, ...named } = params.properties!;
  const required = (params.required ?? []).map((name) => (name === "*" ? "path" : name));
  return {
    schema: { ...schema, params: { ...params, properties: { ...named, path: rest }, required } },
    url: `${url.slice(0, -1)}:path`,
  };
}
