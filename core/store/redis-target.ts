import type { RedisOptions } from "ioredis";

/**
 * `redis.url` names either one server (`redis://`, `rediss://`, passed to ioredis as is) or a
 * Sentinel group: `redis-sentinel://[[user]:password@]host1:26379,host2:26379/<master name>[/<db>]`
 * (`rediss-sentinel://` for TLS to the master). ioredis takes Sentinels as options, not as a URL,
 * and has no URL form of its own, so the form is parsed here.
 */
export type RedisTarget = { url: string } | { options: RedisOptions };

export function parseRedisTarget(url: string): RedisTarget {
  const match = /^(rediss?)-sentinel:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/]+)\/([^/?]+)(?:\/(\d+))?\/?$/.exec(
    url,
  );
  if (!match) {
    if (/^[a-z+-]*sentinel/i.test(url)) {
      throw new Error(
        `redis.url ${redact(url)} is not a valid Sentinel URL: expected redis-sentinel://[password@]host:port[,host:port...]/<master name>[/<db>]`,
      );
    }
    return { url };
  }
  const [, scheme, username, password, hosts, name, db] = match;
  const sentinels = hosts!.split(",").map((entry) => {
    const [host, port] = entry.trim().split(":");
    if (!host) throw new Error(`redis.url ${redact(url)}: empty Sentinel host`);
    return { host, port: port ? Number(port) : 26379 };
  });
  return {
    options: {
      sentinels,
      name: decodeURIComponent(name!),
      ...(username ? { username: decodeURIComponent(username) } : {}),
      ...(password
        ? { password: decodeURIComponent(password), sentinelPassword: decodeURIComponent(password) }
        : {}),
      ...(db ? { db: Number(db) } : {}),
      ...(scheme === "rediss" ? { tls: {}, enableTLSForSentinelMode: true } : {}),
    },
  };
}

export function redact(url: string): string {
  return url.replace(/\/\/([^@/]*)@/, "//***@");
}
