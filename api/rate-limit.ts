import rateLimit from "@fastify/rate-limit";
import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from "fastify";
import type { Config } from "../core/config/load.js";
import type { Logger } from "../core/logger.js";
import type { JobStore } from "../core/store/store.js";
import { rateLimitStore, SharedWindowStore } from "./rate-limit-store.js";

export interface RateLimiter {
  /** The onRequest hook of the /api/v1 routes; after identifyClient, before requireClient. */
  hook: onRequestAsyncHookHandler;
  close(): Promise<void>;
}

/**
 * Rate limits with @fastify/rate-limit: a client's requests count against its budget (its own
 * rate_limit, else per_client), a request without a valid key against its address's (per_address;
 * per_client when authentication is off, since every caller is then anonymous). Over the budget:
 * 429 with Retry-After and {error}; the first refusal of a key in a window is logged as a warning,
 * the rest at debug, so a flood does not flood the log.
 */
export async function installRateLimit(
  app: FastifyInstance,
  config: Config,
  store: JobStore,
  logger: Logger,
): Promise<RateLimiter | undefined> {
  const settings = config.server.rateLimit;
  if (!settings.enabled) return undefined;
  const authenticationOff = config.server.clients.length === 0;
  const counts = new SharedWindowStore(
    store.redis,
    `${store.keys.prefix}ratelimit:`,
    settings.syncIntervalMs,
    logger.child({ component: "rate-limit" }),
  );
  const warned = new Map<string, number>();
  // Asked for by the plugin twice a request (its key, its maximum): worked out once.
  const budgets = new WeakMap<FastifyRequest, { key: string; max: number }>();
  const budgetOf = (request: FastifyRequest) => {
    let budget = budgets.get(request);
    if (!budget) {
      const client = request.apiClient;
      budget = client
        ? { key: `client:${client.name}`, max: client.rateLimit ?? settings.perClient }
        : { key: `address:${request.ip}`, max: authenticationOff ? settings.perClient : settings.perAddress };
      budgets.set(request, budget);
    }
    return budget;
  };
  const windowText = describeWindow(settings.windowMs);

  await app.register(rateLimit, {
    global: false,
    store: rateLimitStore(counts),
    timeWindow: settings.windowMs,
    keyGenerator: (request) => budgetOf(request).key,
    max: (request) => budgetOf(request).max,
    errorResponseBuilder: (request, context) => {
      const { key, max } = budgetOf(request);
      const window = Math.floor(Date.now() / settings.windowMs);
      if (warned.get(key) !== window) {
        warned.set(key, window);
        if (warned.size > 10_000) warned.clear();
        request.log.warn(
          {
            event: "rate_limited",
            ...(request.apiClient ? { client: request.apiClient.name } : { ip: request.ip }),
            max,
            window: windowText,
          },
          "rate limit reached: further requests in this window are refused with 429 (logged at debug)",
        );
      }
      const who = request.apiClient ? `client ${request.apiClient.name}` : "this address";
      const err = new Error(
        `rate limit exceeded: ${context.max} requests per ${windowText} for ${who}; retry in ${Math.max(1, Math.ceil(context.ttl / 1000))} s`,
      ) as Error & { statusCode: number };
      err.statusCode = 429;
      return err;
    },
  });
  return {
    hook: app.rateLimit() as onRequestAsyncHookHandler,
    close: () => counts.close(),
  };
}

function describeWindow(ms: number): string {
  if (ms % 3_600_000 === 0) return ms === 3_600_000 ? "hour" : `${ms / 3_600_000} hours`;
  if (ms % 60_000 === 0) return ms === 60_000 ? "minute" : `${ms / 60_000} minutes`;
  return ms === 1000 ? "second" : `${ms / 1000} seconds`;
}
