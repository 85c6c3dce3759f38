// Who may call the API: server.clients and server.api_keys as one list of clients.
import { ConfigError } from "./errors.js";
import type { ApiClientConfig } from "./schema.js";
import type { Resolved } from "./settings.js";

/** A caller of the API: its name, the keys it presents, whether it sees every client's jobs. */
export type ApiClient = Resolved<typeof ApiClientConfig>;

/** The client server.api_keys stand for when named clients are configured beside them. */
export const DEFAULT_CLIENT = "default";

/**
 * server.clients and server.api_keys as one list. Without named clients the api_keys are one client
 * that sees everything (admin); beside named clients they are the client "default". A name or a key
 * given twice is refused: a key must say who is calling.
 */
export function apiClients(apiKeys: string[], named: ApiClient[]): ApiClient[] {
  const plain = apiKeys.filter((k) => k.length > 0);
  const clients: ApiClient[] = named.map((c, i) => {
    const keys = c.keys.filter((k) => k.length > 0);
    if (keys.length === 0) {
      throw new ConfigError(
        `invalid configuration: server.clients[${i}].keys: client "${c.name}" has no key`,
      );
    }
    return { ...c, keys };
  });
  if (plain.length > 0) {
    if (clients.some((c) => c.name === DEFAULT_CLIENT)) {
      throw new ConfigError(
        `invalid configuration: server.api_keys are the client "${DEFAULT_CLIENT}", and server.clients names another client "${DEFAULT_CLIENT}": move the keys into that client or rename it`,
      );
    }
    clients.push({ name: DEFAULT_CLIENT, keys: plain, admin: named.length === 0, weight: 1 });
  }
  const names = new Set<string>();
  const keys = new Map<string, string>();
  for (const client of clients) {
    if (names.has(client.name)) {
      throw new ConfigError(`invalid configuration: server.clients: the name "${client.name}" is used twice`);
    }
    names.add(client.name);
    for (const key of client.keys) {
      const other = keys.get(key);
      if (other !== undefined) {
        // The key itself is a secret: name the clients, not the key.
        throw new ConfigError(
          `invalid configuration: server.clients: a key of client "${client.name}" is also a key of client "${other}"`,
        );
      }
      keys.set(key, client.name);
    }
  }
  return clients;
}
