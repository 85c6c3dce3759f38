import rateLimit from "@fastify/rate-limit";
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from "fastify";
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
  const windowText = describeWindow(settings.windowMs);

  await app.register(rateLimit, {
    global: false,
    store: rateLimitStore(counts),
    timeWindow: settings.windowMs,
    errorResponseBuilder: (request, context) => {
      const client = request.apiClient;
      const key = client ? `client:${client.name}` : request.ip;
      const window = Math.floor(Date.now() / settings.windowMs);
      if (warned.get(key) !== window) {
        warned.set(key, window);
        if (warned.size > 10_000) warned.clear();
        request.log.warn(
          {
            event: "rate_limited",
            ...(client ? { client: client.name } : { ip: request.ip }),
            max: context.max,
            window: windowText,
          },
          "rate limit reached: further requests in this window are refused with 429 (logged at debug)",
        );
      }
      const who = client ? `client ${client.name}` : "this address";
      const err = new Error(
        `rate limit exceeded: ${context.max} requests per ${windowText} for ${who}; retry in ${Math.max(1, Math.ceil(context.ttl / 1000))} s`,
      ) as Error & { statusCode: number };
      err.statusCode = 429;
      return err;
    },
  });

  // One limiter per client and one for addresses, each with its budget as a number and the
  // address one with the plugin's own key (the address, IPv6 by /64): the plugin awaits a
  // function it is given for either, on every request.
  const byClient = new Map(
    config.server.clients.map((client) => [
      client,
      app.rateLimit({
        max: client.rateLimit ?? settings.perClient,
        keyGenerator: () => `client:${client.name}`,
      }),
    ]),
  );
  const byAddress = app.rateLimit({
    max: authenticationOff ? settings.perClient : settings.perAddress,
  });
  const hook = function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
    const limit = (request.apiClient && byClient.get(request.apiClient)) || byAddress;
    return limit.call(this, request, reply);
  } as onRequestAsyncHookHandler;
  return { hook, close: () => counts.close() };
}

function describeWindow(ms: number): string {
  if (ms % 3_600_000 === 0) return ms === 3_600_000 ? "hour" : `${ms / 3_600_000} hours`;
  if (ms % 60_000 === 0) return ms === 60_000 ? "minute" : `${ms / 60_000} minutes`;
  return ms === 1000 ? "second" : `${ms / 1000} seconds`;
}
