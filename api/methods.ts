import type { FastifyInstance } from "fastify";

/** The methods of HTTP itself, in the order Allow lists them. */
const STANDARD = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"];

/**
 * A request for a path the interface has, with a method it does not have there, is answered 405
 * with an Allow header listing the path's methods (RFC 9110), rather than the 404 of an unknown
 * path. Call before the routes are added (it watches them being added), then `answer` on each scope
 * once its routes are in: the 405 routes of a scope run its hooks (the API key check of /api/v1),
 * and are left out of the OpenAPI document.
 */
export function allowDeclaredMethodsOnly(app: FastifyInstance) {
  // Per scope prefix: path within the scope → its methods.
  const scopes = new Map<string, Map<string, Set<string>>>();
  app.addHook("onRoute", (route) => {
    if ((route.config as { methodNotAllowed?: boolean } | undefined)?.methodNotAllowed) return;
    if (route.schema?.hide) return;
    const paths = scopes.get(route.prefix) ?? new Map<string, Set<string>>();
    scopes.set(route.prefix, paths);
    const methods = paths.get(route.routePath) ?? new Set<string>();
    paths.set(route.routePath, methods);
    for (const method of [route.method].flat()) methods.add(method);
    if (methods.has("GET")) methods.add("HEAD");
  });
  return {
    answer(scope: FastifyInstance, prefix: string): void {
      for (const [path, methods] of scopes.get(prefix) ?? []) {
        // Every method the server knows (QUERY and WebDAV's included), standard ones first in Allow.
        const known = [...new Set([...STANDARD, ...scope.supportedMethods])];
        const missing = known.filter((m) => !methods.has(m));
        if (missing.length === 0) continue;
        const allow = known.filter((m) => methods.has(m)).join(", ");
        scope.route({
          method: missing,
          url: path,
          schema: { hide: true },
          config: { methodNotAllowed: true },
          // Answered before the body is read: a QUERY without Content-Type is a 405 here, not the
          // 400 the body parser would give it.
          onRequest: async (request, reply) =>
            reply
              .code(405)
              .header("Allow", allow)
              .send({ error: `method ${request.method} is not allowed on ${prefix}${path}: use ${allow}` }),
          handler: async () => undefined,
        });
      }
    },
  };
}
