// Every call the dashboard makes to the API: JSON over fetch, with the key of this browser session
// in X-API-Key. A 401 forgets the key and sends the user to the login view.
import { Store } from "./store.js";

const KEY_ITEM = "media-service.api-key";

export type SessionState =
  /** Finding out whether the API needs a key, and whether the stored one is good. */
  | { kind: "checking" }
  /** A key is needed: the login view. `notice` says why we are here again. */
  | { kind: "login"; notice?: string }
  /** Signed in, or the API needs no key (`keyRequired` false). */
  | { kind: "ready"; keyRequired: boolean }
  /** The API did not answer as expected. */
  | { kind: "unreachable"; message: string };

export const session = new Store<SessionState>({ kind: "checking" });

export function storedKey(): string | null {
  try {
    return sessionStorage.getItem(KEY_ITEM);
  } catch {
    return null;
  }
}

function rememberKey(key: string | null): void {
  try {
    if (key === null) sessionStorage.removeItem(KEY_ITEM);
    else sessionStorage.setItem(KEY_ITEM, key);
  } catch {
    // Storage refused (private mode with storage off): the key lives as long as the page.
  }
  memoryKey = key;
}
let memoryKey: string | null = storedKey();

export class ApiError extends Error {
  /** Seconds to wait before asking again, when the API said so (Retry-After). */
  retryAfter?: number | undefined;
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Headers for an API call: the key, when there is one. */
export function authHeaders(extra: Record<string, string> = {}): Record<string, string> {
  const key = memoryKey ?? storedKey();
  return key ? { ...extra, "X-API-Key": key } : extra;
}

/** The key was refused: forget it and ask for it again. */
export function unauthorized(): void {
  const hadKey = (memoryKey ?? storedKey()) !== null;
  rememberKey(null);
  session.set({
    kind: "login",
    ...(hadKey
      ? { notice: "The API refused the key (it may have been rotated). Enter a key to go on." }
      : {}),
  });
}

async function errorOf(res: Response): Promise<ApiError> {
  let message = `${res.status} ${res.statusText}`;
  try {
    const body = (await res.json()) as { error?: unknown };
    if (typeof body.error === "string") message = body.error;
  } catch {
    // not JSON: the status line says it
  }
  return new ApiError(res.status, message);
}

/** A JSON call to /api/v1`path`; throws ApiError on any answer but 2xx. */
export async function api<T>(
  path: string,
  init: { method?: string; signal?: AbortSignal; json?: unknown } = {},
): Promise<T> {
  let res: Response;
  try {
    res = await fetch(`/api/v1${path}`, {
      method: init.method ?? "GET",
      headers: authHeaders({
        Accept: "application/json",
        ...(init.json !== undefined ? { "Content-Type": "application/json" } : {}),
      }),
      ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
      ...(init.signal ? { signal: init.signal } : {}),
    });
  } catch (err) {
    if ((err as Error).name === "AbortError") throw err;
    throw new ApiError(0, "the API could not be reached; check the connection and try again");
  }
  if (res.status === 401) {
    unauthorized();
    throw await errorOf(res);
  }
  if (!res.ok) throw await errorOf(res);
  return (await res.json()) as T;
}

/**
 * A file from /api/v1`path` (a preview, a download) as a Blob, read with the key as every call is:
 * an <img> or <a> pointed at the API could not send it. Throws ApiError on any answer but 2xx; a
 * 503's Retry-After (in seconds) is in `retryAfter`.
 */
export async function apiBlob(path: string, signal?: AbortSignal): Promise<Blob> {
  let res: Response;
  try {
    res = await fetch(`/api/v1${path}`, { headers: authHeaders(), ...(signal ? { signal } : {}) });
  } catch (err) {
    if ((err as Error).name === "AbortError") throw err;
    throw new ApiError(0, "the API could not be reached; check the connection and try again");
  }
  if (res.status === 401) unauthorized();
  if (!res.ok) {
    const error = await errorOf(res);
    error.retryAfter = Number(res.headers.get("retry-after")) || undefined;
    throw error;
  }
  return res.blob();
}

/** A query string from the fields that have a value. */
export function query(fields: Record<string, string | number | boolean | undefined | null>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) {
    if (value !== undefined && value !== null && value !== "") params.set(name, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

/**
 * Whether the API needs a key and whether this session has a good one: one cheap authenticated
 * read. Without a stored key, a 200 means the API has no keys configured: no login at all.
 */
export async function checkSession(): Promise<void> {
  const key = memoryKey ?? storedKey();
  try {
    const res = await fetch("/api/v1/queue/stats", { headers: authHeaders({ Accept: "application/json" }) });
    if (res.status === 401) {
      rememberKey(null);
      session.set({
        kind: "login",
        ...(key ? { notice: "The stored key is no longer accepted. Enter a key to go on." } : {}),
      });
      return;
    }
    if (!res.ok) {
      session.set({ kind: "unreachable", message: (await errorOf(res)).message });
      return;
    }
    session.set({ kind: "ready", keyRequired: key !== null });
  } catch {
    session.set({ kind: "unreachable", message: "the API could not be reached" });
  }
}

/** Tries a key; keeps it for this browser session when the API accepts it. */
export async function signIn(key: string): Promise<string | null> {
  let res: Response;
  try {
    res = await fetch("/api/v1/queue/stats", { headers: { Accept: "application/json", "X-API-Key": key } });
  } catch {
    return "The API could not be reached. Check the connection and try again.";
  }
  if (res.status === 401) return "The API did not accept this key.";
  if (!res.ok) return (await errorOf(res)).message;
  rememberKey(key);
  session.set({ kind: "ready", keyRequired: true });
  return null;
}

export function signOut(): void {
  rememberKey(null);
  session.set({ kind: "login" });
}
