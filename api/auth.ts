import { hash, timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { ApiClient } from "../core/config/load.js";
import type { Viewer } from "../core/store/visibility.js";

declare module "fastify" {
  interface FastifyRequest {
    /** The client whose key the request presents; null without a (valid) key. */
    apiClient: ApiClient | null;
  }
}

/**
 * Who is calling, from the key presented: `X-API-Key` first, then `Authorization: Bearer`. Keys are
 * compared as SHA-256 digests with timingSafeEqual against every configured key, so neither the key's
 * length nor which key (or client) matched shows in the timing.
 */
export class ClientDirectory {
  private readonly entries: Array<{ digest: Buffer; client: ApiClient }>;

  constructor(clients: ApiClient[]) {
    this.entries = clients.flatMap((client) => client.keys.map((key) => ({ digest: digest(key), client })));
  }

  /** False when no key is configured: authentication is off. */
  get enabled(): boolean {
    return this.entries.length > 0;
  }

  identify(presented: string): ApiClient | undefined {
    const candidate = digest(presented);
    let found: ApiClient | undefined;
    for (const entry of this.entries) {
      const match = timingSafeEqual(candidate, entry.digest);
      found = match ? entry.client : found;
    }
    return found;
  }
}

function digest(value: string): Buffer {
  return hash("sha256", value, "buffer");
}

/** The key a request presents, or undefined. */
export function presentedKey(request: FastifyRequest): string | undefined {
  const header = request.headers["x-api-key"];
  const apiKey = Array.isArray(header) ? header[0] : header;
  if (apiKey) return apiKey;
  const authorization = request.headers.authorization;
  const match = authorization ? /^Bearer\s+(.+)$/i.exec(authorization.trim()) : null;
  return match ? match[1]!.trim() : undefined;
}

/** Adds request.apiClient (null until identifyClient runs). */
export function decorateClient(app: FastifyInstance): void {
  app.decorateRequest("apiClient", null);
}

/** onRequest: records who is calling, refuses nothing (requireClient does, after the rate limit). */
export function identifyClient(directory: ClientDirectory) {
  return async (request: FastifyRequest) => {
    if (!directory.enabled) return;
    const key = presentedKey(request);
    request.apiClient = key === undefined ? null : (directory.identify(key) ?? null);
  };
}

/** onRequest: 401 for a request without a valid key (when keys are configured). */
export function requireClient(directory: ClientDirectory) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    if (!directory.enabled || request.apiClient) return;
    const key = presentedKey(request);
    // Never log the presented key, not even part of it.
    request.log.warn(
      {
        event: "auth_failed",
        reason: key === undefined ? "missing" : "invalid",
        ip: request.ip,
        url: request.url,
      },
      key === undefined ? "request without API key refused" : "invalid API key refused",
    );
    reply.header("WWW-Authenticate", 'Bearer realm="media-service"');
    await reply.code(401).send({
      error:
        key === undefined
          ? "missing API key: send it in the X-API-Key header or as Authorization: Bearer <key>"
          : "invalid API key",
    });
  };
}

/**
 * Whose jobs a request may see: undefined (all of them) when authentication is off or the client is
 * an admin, else its own.
 */
export function viewerOf(request: FastifyRequest): Viewer {
  const client = request.apiClient;
  return client && !client.admin ? { client: client.name } : { all: true };
}

/** The name recorded on what a request submits (undefined when authentication is off). */
export function submitterOf(request: FastifyRequest): string | undefined {
  return request.apiClient?.name;
}
