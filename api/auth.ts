import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";

/**
 * API key check as the interface defines it: `X-API-Key` first, then `Authorization: Bearer`; any
 * configured key passes. Keys are compared as SHA-256 digests with timingSafeEqual against every
 * configured key, so neither the key's length nor which key matched shows in the timing.
 */
export class ApiKeyVerifier {
  private readonly digests: Buffer[];

  constructor(keys: string[]) {
    this.digests = keys.map(digest);
  }

  get enabled(): boolean {
    return this.digests.length > 0;
  }

  verify(presented: string): boolean {
    const candidate = digest(presented);
    let match = false;
    for (const known of this.digests) match = timingSafeEqual(candidate, known) || match;
    return match;
  }
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
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

export function authHook(verifier: ApiKeyVerifier) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    if (!verifier.enabled) return;
    const key = presentedKey(request);
    if (key !== undefined && verifier.verify(key)) return;
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
