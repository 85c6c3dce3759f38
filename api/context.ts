import type {
  FastifyInstance,
  FastifyBaseLogger,
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
} from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { S3Client } from "@aws-sdk/client-s3";
import type { Registry } from "prom-client";
import type { Config } from "../core/config/load.js";
import type { DependencyChecker } from "../core/health/dependencies.js";
import type { JobEventHub } from "../core/store/job-events.js";
import type { JobStore } from "../core/store/store.js";

/** What the API needs from the rest of the process. */
export interface ApiContext {
  config: Config;
  store: JobStore;
  events: JobEventHub;
  health: DependencyChecker;
  metrics: Registry;
  /** Signs the links of GET /jobs/{id}/output. */
  s3: S3Client;
}

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;
