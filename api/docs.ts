import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { App } from "./context.js";
import { RESULT_SCHEMAS } from "./schemas.js";

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
        { name: "operations", description: "Health, queue statistics, metrics" },
      ],
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json.$id === "string" ? json.$id : `def-${i}`,
    },
  });
  await app.register(swaggerUi, {
    routePrefix: docsPath,
    uiConfig: { docExpansion: "list", deepLinking: true },
  });
}
