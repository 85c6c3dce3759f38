import type {
  FastifyInstance,
  FastifyBaseLogger,
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
} from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { Registry } from "prom-client";
import type { Config } from "../core/config/load.js";
import type { CoreServices } from "../core/services.js";

/**
 * What the API needs from the rest of the process: the core services it uses (the store, job events, the store's events stream,
 * the health checks, S3 to sign output links), the configuration and its metrics registry.
 */
export type ApiContext = Pick<CoreServices, "store" | "events" | "storeEvents" | "health" | "s3"> & {
  config: Config;
  metrics: Registry;
};

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;
