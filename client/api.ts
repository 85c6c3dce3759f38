import { CliError, UsageError } from "./errors.js";

/** Where the API is and how to present oneself to it (the global options). */
export interface ApiTarget {
  url: string;
  apiKey?: string | undefined;
}

/** An answer of the API that is not a success: its status and its `{"error": …}` message. */
export class ApiError extends CliError {
  override name = "ApiError";
  constructor(
    readonly status: number,
    readonly apiMessage: string,
    hint = "",
  ) {
    super(`${status}: ${apiMessage}${hint}`);
  }
}

/** The API could not be reached, or the connection broke: trying again may help. */
export class NetworkError extends CliError {
  override name = "NetworkError";
}

type Query = Record<string, string | number | boolean | undefined>;

export interface RequestOptions {
  query?: Query;
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** How long a plain request may take; the job stream has no such limit. */
const REQUEST_TIMEOUT_MS = 60_000;

/** The HTTP/JSON API under /api/v1, with the key in X-API-Key. */
export class ApiClient {
  readonly baseUrl: string;
  private readonly apiKey: string | undefined;

  constructor(target: ApiTarget) {
    this.baseUrl = apiBaseUrl(target.url);
    this.apiKey = target.apiKey || undefined;
  }

  /** A JSON request; a non-2xx answer is an ApiError, an unreachable API a CliError. */
  async json<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const response = await this.send(method, path, {
      ...options,
      signal: options.signal ?? AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text === "" ? undefined : JSON.parse(text);
    } catch {
      throw this.unexpected(response, text);
    }
    if (!response.ok) throw this.failed(response, parsed, text);
    return parsed as T;
  }

  /** The raw answer of a request that succeeded (the event stream); failures as json() reports them. */
  async open(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const response = await this.send(method, path, options);
    if (response.ok) return response;
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw this.unexpected(response, text);
    }
    throw this.failed(response, parsed, text);
  }

  private async send(method: string, path: string, options: RequestOptions): Promise<Response> {
    const url = new URL(`${this.baseUrl}/api/v1${path}`);
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = { accept: "application/json", ...options.headers };
    if (this.apiKey) headers["x-api-key"] = this.apiKey;
    let body: string | undefined;
    if (options.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(options.body);
    }
    try {
      return await fetch(url, { method, headers, body, signal: options.signal, redirect: "manual" });
    } catch (err) {
      throw new NetworkError(`cannot reach the API at ${this.baseUrl}: ${networkReason(err)}`);
    }
  }

  private failed(response: Response, parsed: unknown, text: string): ApiError {
    const message =
      parsed && typeof parsed === "object" && typeof (parsed as { error?: unknown }).error === "string"
        ? (parsed as { error: string }).error
        : text.trim().slice(0, 200) || response.statusText || "no message";
    let hint = "";
    if (response.status === 401 && !this.apiKey) {
      hint = " (no API key given: set MEDIA_SERVICE_API_KEY or pass --api-key)";
    }
    return new ApiError(response.status, message, hint);
  }

  private unexpected(response: Response, text: string): CliError {
    const type = response.headers.get("content-type") ?? "no content type";
    const excerpt = text.trim().replace(/\s+/g, " ").slice(0, 80);
    return new CliError(
      `unexpected answer from ${this.baseUrl}: HTTP ${response.status} (${type})${excerpt ? `: ${excerpt}` : ""}; is --url the media-service API?`,
    );
  }
}

/** The API's base URL from --url / MEDIA_SERVICE_URL: http or https, without a trailing slash. */
export function apiBaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(
      `--url must be an http:// or https:// URL such as http://localhost:8080; got "${raw}"`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UsageError(
      `--url must be an http:// or https:// URL such as http://localhost:8080; got "${raw}"`,
    );
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}

/** Why a request did not reach the API, in words (fetch reports it as a cause with a code). */
export function networkReason(err: unknown): string {
  if (err instanceof Error && err.name === "TimeoutError") return "no answer in time";
  if (err instanceof Error && err.name === "AbortError") return "the request was aborted";
  const cause = (err as { cause?: { code?: string; message?: string; errors?: Array<{ code?: string }> } })
    .cause;
  const code = cause?.code ?? cause?.errors?.find((e) => e.code)?.code;
  switch (code) {
    case "ECONNREFUSED":
      return "connection refused (is media-service start running?)";
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return "host not found";
    case "ECONNRESET":
    case "UND_ERR_SOCKET":
      return "the connection was closed";
    case "ETIMEDOUT":
    case "UND_ERR_CONNECT_TIMEOUT":
      return "connection timed out";
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return "host unreachable";
    case "CERT_HAS_EXPIRED":
    case "DEPTH_ZERO_SELF_SIGNED_CERT":
    case "SELF_SIGNED_CERT_IN_CHAIN":
    case "UNABLE_TO_VERIFY_LEAF_SIGNATURE":
      return `TLS certificate not trusted (${code})`;
  }
  const message = cause?.message ?? (err instanceof Error ? err.message : String(err));
  return code && !message.includes(code) ? `${message} (${code})` : message;
}
