// A client of one OpenAI-compatible provider: chat completions (with images), audio
// transcriptions, and the model list (health). Written on fetch rather than taken from the `openai`
// package: that SDK needs Node ≥ 22 (we stay runnable on 20), its retry schedule is not
// configurable, and its errors do not say which setting to fix. We use three endpoints.
import type { AiProvider, Config } from "../config/load.js";
import type { Logger } from "../logger.js";
import { nextAttemptDelay, parseRetryAfter } from "../retry.js";

/** A failed call. `permanent`: the same request will fail again (bad key, unknown model, bad input). */
export class AiProviderError extends Error {
  override name = "AiProviderError";
  constructor(
    message: string,
    readonly permanent: boolean,
    readonly status?: number,
  ) {
    super(message);
  }
}

export type ContentPart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };
export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string | ContentPart[];
}

export type ResponseFormat =
  | { type: "json_object" }
  | { type: "json_schema"; json_schema: { name: string; schema: object; strict?: boolean } };

export interface ChatAnswer {
  content: string;
  /** The model that answered, as the provider names it (else the configured one). */
  model: string;
  finishReason?: string;
}

export type AiRetrySettings = Pick<
  Config["ai"],
  "timeoutMs" | "maxAttempts" | "retryInitialDelayMs" | "retryMaxDelayMs"
>;

/** Statuses worth another attempt: the provider is busy or briefly broken. */
const RETRYABLE = new Set([408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529]);

export class AiClient {
  constructor(
    readonly provider: AiProvider,
    private readonly settings: AiRetrySettings,
    private readonly logger?: Logger,
  ) {}

  /** POST /chat/completions; the answer's text. */
  async chat(
    request: { messages: ChatMessage[]; responseFormat?: ResponseFormat | undefined; temperature?: number },
    signal: AbortSignal,
  ): Promise<ChatAnswer> {
    const body = {
      model: this.provider.model,
      messages: request.messages,
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
      ...(request.responseFormat ? { response_format: request.responseFormat } : {}),
    };
    const answer = (await this.call("POST", "/chat/completions", signal, () => ({
      body: JSON.stringify(body),
      headers: { "content-type": "application/json" },
    }))) as {
      model?: unknown;
      choices?: Array<{ message?: { content?: unknown }; finish_reason?: unknown }>;
    };
    const choice = Array.isArray(answer?.choices) ? answer.choices[0] : undefined;
    if (!choice?.message) {
      throw this.garbage("a chat completion without choices[0].message", answer);
    }
    const content = messageText(choice.message.content);
    if (content === undefined) throw this.garbage("a message without text content", answer);
    return {
      content,
      model: typeof answer.model === "string" && answer.model ? answer.model : this.provider.model,
      ...(typeof choice.finish_reason === "string" ? { finishReason: choice.finish_reason } : {}),
    };
  }

  /** POST /audio/transcriptions (multipart); the transcript. */
  async transcribe(
    audio: { data: Uint8Array; filename: string; contentType: string; language?: string },
    signal: AbortSignal,
  ): Promise<string> {
    const answer = await this.call("POST", "/audio/transcriptions", signal, () => {
      // A fresh form per attempt: a body stream is consumed by the first one.
      const form = new FormData();
      form.set("file", new Blob([audio.data], { type: audio.contentType }), audio.filename);
      form.set("model", this.provider.transcriptionModel);
      form.set("response_format", "json");
      if (audio.language) form.set("language", audio.language);
      return { body: form, headers: {} };
    });
    if (typeof answer === "string") return answer.trim();
    const text = (answer as { text?: unknown })?.text;
    if (typeof text !== "string") throw this.garbage("a transcription without text", answer);
    return text.trim();
  }

  /** GET /models: the provider answers and accepts the key. */
  async listModels(signal: AbortSignal): Promise<string[]> {
    const answer = (await this.call("GET", "/models", signal, () => ({ headers: {} }))) as {
      data?: Array<{ id?: unknown }>;
    };
    return Array.isArray(answer?.data) ? answer.data.map((m) => String(m?.id)) : [];
  }

  private async call(
    method: string,
    path: string,
    signal: AbortSignal,
    build: () => { body?: string | FormData; headers: Record<string, string> },
  ): Promise<unknown> {
    const { provider } = this;
    const { maxAttempts } = this.settings;
    const url = `${provider.baseUrl}${path}`;
    for (let attempt = 1; ; attempt++) {
      signal.throwIfAborted();
      const { body, headers } = build();
      const timeout = AbortSignal.timeout(this.settings.timeoutMs);
      let failure: { message: string; retryAfterMs?: number; status?: number };
      try {
        const response = await fetch(url, {
          method,
          headers: {
            accept: "application/json",
            ...headers,
            ...(provider.apiKey ? { authorization: `Bearer ${provider.apiKey}` } : {}),
          },
          ...(body !== undefined ? { body } : {}),
          signal: AbortSignal.any([signal, timeout]),
        });
        const text = await response.text();
        if (response.ok)
          return parseBody(text, response.headers.get("content-type"), () =>
            this.garbage("a body that is not JSON", text),
          );
        const detail = this.redact(errorDetail(text));
        if (!RETRYABLE.has(response.status)) {
          throw new AiProviderError(
            this.rejection(method, path, response.status, detail),
            true,
            response.status,
          );
        }
        failure = {
          status: response.status,
          message: `returned ${response.status}${detail ? `: ${detail}` : ""}`,
          retryAfterMs: retryAfter(response.headers),
        };
      } catch (err) {
        if (err instanceof AiProviderError) throw err;
        if (signal.aborted) throw signal.reason;
        failure = timeout.aborted
          ? { message: `did not answer within ${Math.round(this.settings.timeoutMs / 1000)} s` }
          : { message: `cannot be reached at ${provider.baseUrl}: ${networkCause(err)}` };
      }
      if (attempt >= maxAttempts) {
        const attempts = maxAttempts > 1 ? ` (${maxAttempts} attempts)` : "";
        throw new AiProviderError(
          `AI provider "${provider.name}" ${failure.message}${attempts}`,
          false,
          failure.status,
        );
      }
      const delayMs = nextAttemptDelay(
        attempt,
        failure.retryAfterMs,
        this.settings.retryInitialDelayMs,
        this.settings.retryMaxDelayMs,
      );
      this.logger?.warn(
        { provider: provider.name, path, attempt, status: failure.status, retry_in_ms: delayMs },
        `AI provider ${failure.message}; retrying`,
      );
      await sleep(delayMs, signal);
    }
  }

  /** What a user should check for each refusal. */
  private rejection(method: string, path: string, status: number, detail: string): string {
    const p = this.provider;
    const said = detail ? `: ${detail}` : "";
    const prefix = `AI provider "${p.name}" returned ${status}`;
    if (status === 401) return `${prefix}: check ${p.apiKeySetting}${said}`;
    if (status === 403)
      return `${prefix}: the key (${p.apiKeySetting}) may not use model "${this.modelOf(path)}"${said}`;
    if (status === 404) {
      return `${prefix} for ${method} ${path}: check the model "${this.modelOf(path)}" and the base URL ${p.baseUrl}${said}`;
    }
    if (status === 413) return `${prefix}: the request is too large for the provider${said}`;
    return `${prefix}${said}`;
  }

  private modelOf(path: string): string {
    return path.startsWith("/audio/") ? this.provider.transcriptionModel : this.provider.model;
  }

  private garbage(what: string, answer: unknown): AiProviderError {
    const sample = typeof answer === "string" ? answer : JSON.stringify(answer);
    return new AiProviderError(
      `AI provider "${this.provider.name}" answered with ${what} (${JSON.stringify(clip(sample ?? "", 120))}): check the base URL ${this.provider.baseUrl}`,
      true,
    );
  }

  /** Some providers echo (part of) a wrong key in their message. */
  private redact(text: string): string {
    const key = this.provider.apiKey;
    return key && key.length >= 4 ? text.split(key).join("[redacted]") : text;
  }
}

function messageText(content: unknown): string | undefined {
  if (typeof content === "string") return content;
  // Some servers answer with content parts, like the request's.
  if (Array.isArray(content)) {
    const texts = content
      .map((part: { type?: unknown; text?: unknown }) =>
        typeof part?.text === "string" ? part.text : undefined,
      )
      .filter((t): t is string => t !== undefined);
    return texts.length > 0 ? texts.join("") : undefined;
  }
  return undefined;
}

function parseBody(text: string, contentType: string | null, garbage: () => Error): unknown {
  if (contentType?.startsWith("text/plain")) return text;
  try {
    return JSON.parse(text);
  } catch {
    throw garbage();
  }
}

/** The provider's own explanation: OpenAI's `{error: {message}}`, or the body's start. */
function errorDetail(text: string): string {
  try {
    const body = JSON.parse(text) as {
      error?: { message?: unknown } | string;
      message?: unknown;
      detail?: unknown;
    };
    const message =
      typeof body.error === "string"
        ? body.error
        : typeof body.error?.message === "string"
          ? body.error.message
          : typeof body.message === "string"
            ? body.message
            : typeof body.detail === "string"
              ? body.detail
              : undefined;
    if (message) return clip(message.replace(/\s+/g, " ").trim(), 300);
  } catch {
    // not JSON: fall through to the raw text
  }
  return clip(text.replace(/\s+/g, " ").trim(), 200);
}

/** OpenAI sends `retry-after-ms` as well as the standard `retry-after`. */
function retryAfter(headers: Headers): number | undefined {
  const ms = headers.get("retry-after-ms");
  if (ms && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.round(Number(ms));
  return parseRetryAfter(headers.get("retry-after") ?? undefined);
}

function networkCause(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  if (cause?.code) return cause.code;
  if (cause?.message) return cause.message;
  return err instanceof Error ? err.message : String(err);
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * Waits `ms`, or until `signal` aborts (at once if it already has). It resolves either way: the
 * attempt loop's signal.throwIfAborted() then throws the abort's reason, as fetch does.
 */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
