import { Redis, type RedisOptions } from "ioredis";
import { parseRedisTarget } from "./redis-target.js";

export interface RedisConnectOptions {
  connectTimeoutMs: number;
  /**
   * redis.socket_timeout: nothing received this long after a command was sent drops the connection
   * (its commands fail, a new one is made); a lost Redis node sends no refusal to notice otherwise.
   */
  socketTimeoutMs?: number;
  /** Fail commands at once while disconnected instead of queueing them (readiness, API). */
  failFast?: boolean;
  name?: string;
}

export function connectRedis(url: string, options: RedisConnectOptions): Redis {
  const target = parseRedisTarget(url);
  const common: RedisOptions = {
    connectTimeout: options.connectTimeoutMs,
    ...(options.socketTimeoutMs ? { socketTimeout: options.socketTimeoutMs } : {}),
    connectionName: options.name,
    lazyConnect: false,
    enableOfflineQueue: !options.failFast,
    maxRetriesPerRequest: options.failFast ? 1 : 20,
    retryStrategy: (times) => Math.min(times * 200, 2000),
  };
  return "url" in target ? new Redis(target.url, common) : new Redis({ ...target.options, ...common });
}

/**
 * A connection of its own for blocking reads (XREADGROUP … BLOCK), from a fail-fast one: what it sends
 * before its first connection is up waits for it instead of failing, so a reader started with its
 * process does not fail (and warn) at once. Once Redis is lost, a command fails after one reconnect
 * attempt, as on the fail-fast connection, so a reader stopping while Redis is down is not left
 * waiting on it.
 */
export function blockingConnection(redis: Redis, name: string): Redis {
  const connection = redis.duplicate({
    connectionName: name,
    enableOfflineQueue: true,
    maxRetriesPerRequest: 1,
  });
  // A lost Redis is logged once by the process's own connection, and every command sent here fails
  // to its caller; without a listener ioredis would print each reconnect error to stderr.
  connection.on("error", () => undefined);
  return connection;
}
