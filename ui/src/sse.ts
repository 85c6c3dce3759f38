// Server-Sent Events over fetch. The browser's EventSource cannot send headers, and the API wants its
// key in X-API-Key, so the stream is read with fetch and parsed by eventsource-parser (a small, well
// kept parser of the format). What EventSource would do is done here: the server's `retry:` is
// honoured, the last `id:` is sent back as Last-Event-ID on reconnection, and a dropped connection is
// retried with a growing delay (up to 30 s). A 401 sends the user to the login view.
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { authHeaders, unauthorized } from "./api.js";

export type { EventSourceMessage };

export interface SseHandlers {
  onEvent(message: EventSourceMessage): void;
  /** The stream is open (again): a page may re-read what it shows, to catch up. */
  onOpen?(reconnected: boolean): void;
  /** The stream is down and will be retried in `retryMs`, or `retryMs` is null: given up (404). */
  onDown?(retryMs: number | null, reason: string): void;
}

export interface SseStream {
  close(): void;
}

const MAX_DELAY_MS = 30_000;

/** Follows /api/v1`path` until close(); `endsWhenClosed`: the server's end of the stream is final. */
export function openSse(path: string, handlers: SseHandlers, endsWhenClosed = false): SseStream {
  const abort = new AbortController();
  let lastId: string | undefined;
  let retryMs = 3000;
  let failures = 0;
  let opened = false;

  const run = async () => {
    while (!abort.signal.aborted) {
      let reason = "the connection was lost";
      try {
        const res = await fetch(`/api/v1${path}`, {
          headers: authHeaders({
            Accept: "text/event-stream",
            ...(lastId !== undefined ? { "Last-Event-ID": lastId } : {}),
          }),
          cache: "no-store",
          signal: abort.signal,
        });
        if (res.status === 401) {
          unauthorized();
          return;
        }
        if (res.status === 404) {
          handlers.onDown?.(null, "not found");
          return;
        }
        if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
        failures = 0;
        handlers.onOpen?.(opened);
        opened = true;
        const parser = createParser({
          onEvent: (message) => {
            if (message.id !== undefined) lastId = message.id;
            handlers.onEvent(message);
          },
          onRetry: (ms) => {
            retryMs = ms;
          },
        });
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          parser.feed(value);
        }
        if (endsWhenClosed) return;
        reason = "the server closed the stream";
      } catch (err) {
        if (abort.signal.aborted) return;
        reason = (err as Error).message || reason;
      }
      if (abort.signal.aborted) return;
      failures += 1;
      const delay = Math.min(MAX_DELAY_MS, retryMs * 2 ** Math.max(0, failures - 1));
      handlers.onDown?.(delay, reason);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        abort.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  };
  void run();
  return { close: () => abort.abort() };
}

/** The JSON of an event's data, or undefined when it is not JSON. */
export function dataOf<T>(message: EventSourceMessage): T | undefined {
  try {
    return JSON.parse(message.data) as T;
  } catch {
    return undefined;
  }
}
