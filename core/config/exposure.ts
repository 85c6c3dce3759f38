import ipaddr from "ipaddr.js";
import type { Config } from "./load.js";

/** The commands that listen on server.host. */
export type ListeningCommand = "start" | "api" | "controller";

/**
 * The address a command listens on: server.host (HOST) when set, else loopback for the local stack
 * (`start`, a person's machine) and every interface for `api` and `controller` (a container, where
 * the platform decides what reaches it).
 */
/**
 * Where a client on this machine reaches the API by default: `start` with its default port, which
 * is what the command-line client talks to when told no --url.
 */
export const DEFAULT_API_URL = "http://localhost:8080";

/** Where the API serves the dashboard. */
export const DASHBOARD_PATH = "/ui";

export function listenHost(config: Config, command: ListeningCommand): string {
  return config.server.host ?? (command === "start" ? "127.0.0.1" : "0.0.0.0");
}

/** True when only this machine can reach `host`: localhost, 127.0.0.0/8, ::1 (also as ::ffff:127.x). */
export function isLoopback(host: string): boolean {
  const name = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (name === "localhost" || name.endsWith(".localhost")) return true;
  if (!ipaddr.isValid(name)) return false;
  const address = ipaddr.process(name);
  return address.range() === "loopback";
}

/** True for the addresses that mean every interface (0.0.0.0, ::): reach it through loopback here. */
export function isUnspecified(host: string): boolean {
  return host === "0.0.0.0" || host === "::" || host === "[::]";
}

/**
 * Why the API must not listen as configured, or undefined. Without API keys anyone who reaches it
 * reads every job (webhook URLs included) and submits work, so that is allowed on loopback only,
 * unless server.allow_unauthenticated says the operator means it.
 */
export function apiExposureProblem(config: Config, command: "start" | "api"): string | undefined {
  const host = listenHost(config, command);
  if (config.server.clients.length > 0 || isLoopback(host) || config.server.allowUnauthenticated) {
    return undefined;
  }
  return (
    `refusing to serve the API on ${host}:${config.server.port} without authentication: anyone who can ` +
    `reach it could read every job and submit work. Set API_KEYS (server.api_keys) or server.clients, listen on loopback ` +
    `only (HOST=127.0.0.1), or set ALLOW_UNAUTHENTICATED=true (server.allow_unauthenticated) to serve ` +
    `it open anyway`
  );
}
