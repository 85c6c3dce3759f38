import { hash, timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from "fastify";
import type { ApiClient } from "../core/config/load.js";
import { EVERYONE, type Submitter, type Viewer } from "../core/store/visibility.js";

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

// The last key a connection presented and whom it identified: the requests of a keep-alive
// connection present the same key, so most requests skip the digest. A proxy may carry several
// callers' requests on one connection, so the key is compared with the last one in constant time
// too: the time tells nobody how much of another caller's key they guessed.
const lastOnConnection = new WeakMap<object, { key: string; client: ApiClient | null }>();

function sameKey(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  const n = Math.max(a.length, b.length);
  // Past the end of a string charCodeAt is NaN, which ^ takes as 0: no early exit, no branch.
  for (let i = 0; i < n; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** onRequest: records who is calling, refuses nothing (requireClient does, after the rate limit). */
export function identifyClient(directory: ClientDirectory) {
  return (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    if (directory.enabled) {
      const key = presentedKey(request);
      if (key === undefined) {
        request.apiClient = null;
      } else {
        const socket = request.raw.socket;
        const last = lastOnConnection.get(socket);
        if (last && sameKey(last.key, key)) {
          request.apiClient = last.client;
        } else {
          request.apiClient = directory.identify(key) ?? null;
          lastOnConnection.set(socket, { key, client: request.apiClient });
        }
      }
    }
    done();
  };
}

/** onRequest: 401 for a request without a valid key (when keys are configured). */
export function requireClient(directory: ClientDirectory) {
  return (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    if (!directory.enabled || request.apiClient) return done();
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
    void reply.code(401).send({
      error:
        key === undefined
          ? "missing API key: send it in the X-API-Key header or as Authorization: Bearer <key>"
          : "invalid API key",
    });
  };
}

/** Whose jobs a request may see: everyone's when authentication is off or the client is an admin, else its own. */
export function viewerOf(request: FastifyRequest): Viewer {
  const client = request.apiClient;
  return client && !client.admin ? { client: client.name } : EVERYONE;
}

/** Who submits what a request submits (undefined when authentication is off). */
export function submitterOf(request: FastifyRequest): Submitter | undefined {
  return request.apiClient ?? undefined;
}
