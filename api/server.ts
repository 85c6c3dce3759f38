import { randomUUID } from "node:crypto";
import Fastify, { LogController, type FastifyReply } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { Logger } from "../core/logger.js";
import { installAccessLog } from "./access-log.js";
import { installJsonBodyParser } from "./body.js";
import { ClientDirectory, decorateClient, identifyClient, requireClient } from "./auth.js";
import type { ApiContext, App } from "./context.js";
import { registerDocs } from "./docs.js";
import { installErrorHandlers } from "./errors.js";
import { clientErrorHandler, requestPreamble } from "./transport.js";
import { bulkRoutes } from "./routes/bulk.js";
import { batchRoutes } from "./routes/batches.js";
import { eventsRoutes } from "./routes/events.js";
import { jobDetailRoutes } from "./routes/job-details.js";
import { jobRoutes } from "./routes/jobs.js";
import { objectRoutes } from "./routes/objects.js";
import { operationsRoutes } from "./routes/operations.js";
import { queueRoutes } from "./routes/queue.js";
import { streamRoutes } from "./routes/stream.js";
import { templateRoutes } from "./routes/templates.js";
import { OpenStreams } from "./sse.js";
import { SHARED_SCHEMAS } from "./schemas.js";
import { allowDeclaredMethodsOnly } from "./methods.js";
import { installRateLimit } from "./rate-limit.js";
import { serverLogger } from "./request-logger.js";
import { formatValidationError, validatorCompiler } from "./validation.js";
import { defaultUiDir, uiRoutes } from "./ui.js";

export const API_VERSION = "1.0.0";
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface Api {
  app: App;
  /** Stops readiness, ends SSE streams, waits for in-flight requests. */
  close(): Promise<void>;
}

export interface ApiOptions {
  /** The built dashboard served at /ui; default: dist/ui (api/ui.ts). */
  uiDir?: string;
}

export async function buildApi(ctx: ApiContext, logger: Logger, options: ApiOptions = {}): Promise<Api> {
  const { server, limits } = ctx.config;
  const app = Fastify({
    loggerInstance: serverLogger(logger),
    requestIdHeader: false,
    // Fastify's two lines per request are replaced by one access-log line (access-log.ts).
    logController: new LogController({ requestIdLogLabel: "request_id", disableRequestLogging: true }),
    genReqId: (req) => {
      const given = req.headers["x-request-id"];
      return typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
    },
    bodyLimit: limits.maxBodyBytes,
    requestTimeout: server.readTimeoutMs,
    connectionTimeout: server.writeTimeoutMs,
    trustProxy: server.trustProxy,
    schemaErrorFormatter: formatValidationError,
    return503OnClosing: true,
    clientErrorHandler: clientErrorHandler(server.readTimeoutMs),
    // Node's own answer to a missing Host is an empty 400; requestPreamble (transport.ts) answers it.
    // Node checks request timeouts every 30 s by default: a read_timeout of 5 s would act at 30.
    http: {
      requireHostHeader: false,
      connectionsCheckingInterval: Math.max(100, Math.min(server.readTimeoutMs / 4, 5_000)),
    },
    forceCloseConnections: "idle",
    // Ids up to the 200 characters IdParams allows reach the handlers (and their 404).
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 256 },
    // Errors the router answers itself (bad URL encoding, over-long parameters) keep the
    // interface's error body too.
    frameworkErrors: (err, _request, reply) => {
      const status = err.code === "FST_ERR_MAX_PARAM_LENGTH" ? 404 : 400;
      const error = err.code === "FST_ERR_BAD_URL" ? "malformed URL encoding" : err.message;
      void (reply as unknown as FastifyReply).code(status).send({ error });
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  // Bodies are JSON only: text/plain is refused with 415 rather than read as a string.
  app.removeContentTypeParser("text/plain");
  installJsonBodyParser(app);
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);
  installErrorHandlers(app, limits);
  installAccessLog(app);
  // X-Request-ID on every answer, the Host header, the body's deadline (transport.ts).
  app.addHook("onRequest", requestPreamble(server.readTimeoutMs));

  await registerDocs(app, server.docsPath, API_VERSION);

  const state = { draining: false };
  const streams = new OpenStreams();
  // A method a documented path does not have is a 405 with Allow (api/methods.ts), not a 404.
  const methods = allowDeclaredMethodsOnly(app);
  operationsRoutes(app, ctx, state);
  // The dashboard's static files: public, outside /api/v1 (it sends the key with its own calls).
  uiRoutes(app, { dir: options.uiDir ?? defaultUiDir(), storageEndpoint: ctx.config.storage.endpoint });

  // Whether serving without keys is acceptable depends on where it listens: see core/config/exposure.ts.
  const directory = new ClientDirectory(server.clients);
  decorateClient(app);
  // Counted before the key is refused, so that a flood of bad keys is limited like any other.
  const limiter = await installRateLimit(app, ctx.config, ctx.store, logger);
  await app.register(
    async (v1) => {
      v1.addHook("onRequest", identifyClient(directory));
      if (limiter) v1.addHook("onRequest", limiter.hook);
      v1.addHook("onRequest", requireClient(directory));
      const api = v1.withTypeProvider<TypeBoxTypeProvider>();
      jobRoutes(api, ctx);
      batchRoutes(api, ctx);
      bulkRoutes(api, ctx);
      streamRoutes(api, ctx, streams);
      eventsRoutes(api, ctx, streams);
      jobDetailRoutes(api, ctx);
      objectRoutes(api, ctx);
      queueRoutes(api, ctx);
      templateRoutes(api, ctx);
      // Inside the scope: an undeclared method is refused after the key check, like the routes.
      methods.answer(v1, "/api/v1");
    },
    { prefix: "/api/v1" },
  );
  methods.answer(app, "");

  return {
    app,
    close: async () => {
      state.draining = true;
      streams.endAll();
      await app.close();
      await limiter?.close();
    },
  };
}
