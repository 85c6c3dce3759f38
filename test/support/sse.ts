// A small Server-Sent Events client for tests, on node:http (no library), parsing the stream as the
// HTML Living Standard describes it (https://html.spec.whatwg.org/multipage/server-sent-events.html):
// lines end in CRLF, LF or CR; `:` starts a comment; `event:`, `data:`, `id:`, `retry:` are fields
// (one optional space after the colon is dropped); a blank line dispatches the event; an event with
// no data is not dispatched. It does not reconnect: a test wants to see exactly what one connection
// carried. Each stream has its own socket (no agent), so close() ends exactly that connection.
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from "node:http";

export interface SseEvent {
  /** The event type (`message` when the block had no `event:` field). */
  event: string;
  /** The data lines of the block, joined with "\n". */
  data: string;
  /** The `id:` field of this event's block, when it had one (not the inherited last event id). */
  id?: string;
  /** `data` parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
}

export interface SseStream {
  status: number;
  headers: IncomingHttpHeaders;
  /** Every event dispatched so far, in arrival order. */
  events: SseEvent[];
  /** Text of every comment line (without the leading colon), e.g. heartbeats. */
  comments: string[];
  /** The last `retry:` value the server sent, in milliseconds. */
  retry?: number;
  /** The whole body, for responses that are not an event stream (e.g. a 404 with a JSON error). */
  body: string;
  /** Whether the connection has ended (by the server, by close(), or by an error). */
  readonly ended: boolean;
  /** A transport error seen after the response started (e.g. the socket was reset), if any. */
  readonly error: Error | undefined;
  /** Resolves when the connection has ended, for whatever reason; never rejects. */
  closed: Promise<void>;
  /**
   * Resolves with the first event (already received or still to come) that matches; rejects
   * after timeoutMs, or when the stream ends without one, naming what it did see.
   */
  waitFor(predicate: (e: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>;
  /** Resolves once `count` comment lines arrived; rejects after timeoutMs or at the end of the stream. */
  waitForComments(count: number, timeoutMs?: number): Promise<string[]>;
  /** Events one at a time, from the first; ends when the stream ends. */
  [Symbol.asyncIterator](): AsyncIterator<SseEvent>;
  /** Tears the connection down from the client side (destroys the socket). */
  close(): void;
}

export interface OpenStreamOptions {
  /** How long to wait for the response head; default 5 s. */
  timeoutMs?: number;
}

/** Incremental parser: feed it decoded text, it calls back with events, comments and retry values. */
export class SseParser {
  private buffer = "";
  private pendingCR = false;
  private sawFirstChunk = false;
  private eventType = "";
  private data: string[] = [];
  private id: string | undefined;
  private hasData = false;

  constructor(
    private readonly on: {
      event(e: SseEvent): void;
      comment(text: string): void;
      retry(ms: number): void;
    },
  ) {}

  push(text: string): void {
    if (!this.sawFirstChunk && text.length > 0) {
      this.sawFirstChunk = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    // A CR that ended the previous chunk already ended a line; an LF right after it is the same line end.
    if (this.pendingCR && text.startsWith("\n")) text = text.slice(1);
    this.pendingCR = false;
    this.buffer += text;
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const ch = this.buffer[i];
      if (ch !== "\n" && ch !== "\r") continue;
      this.line(this.buffer.slice(start, i));
      if (ch === "\r") {
        if (i + 1 < this.buffer.length) {
          if (this.buffer[i + 1] === "\n") i++;
        } else {
          this.pendingCR = true;
        }
      }
      start = i + 1;
    }
    this.buffer = this.buffer.slice(start);
  }

  private line(line: string): void {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return this.on.comment(line.slice(1).replace(/^ /, ""));
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
    switch (field) {
      case "event":
        this.eventType = value;
        break;
      case "data":
        this.data.push(value);
        this.hasData = true;
        break;
      case "id":
        if (!value.includes("\0")) this.id = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.on.retry(Number(value));
        break;
      default:
        // Unknown fields are ignored.
        break;
    }
  }

  private dispatch(): void {
    const { eventType, data, id, hasData } = this;
    this.eventType = "";
    this.data = [];
    this.id = undefined;
    this.hasData = false;
    if (!hasData) return;
    const text = data.join("\n");
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    this.on.event({ event: eventType || "message", data: text, ...(id !== undefined ? { id } : {}), json });
  }
}

/**
 * Opens `url` with `Accept: text/event-stream` (unless headers say otherwise) and resolves once the
 * response head arrived, whatever its status; the body keeps being read in the background.
 */
export function openStream(
  url: string,
  headers: Record<string, string> = {},
  options: OpenStreamOptions = {},
): Promise<SseStream> {
  const timeoutMs = options.timeoutMs ?? 5000;
  const target = new URL(url);
  const requestHeaders: Record<string, string> = { accept: "text/event-stream", ...lowerKeys(headers) };

  return new Promise<SseStream>((resolve, reject) => {
    const req = httpRequest(target, { method: "GET", headers: requestHeaders, agent: false });
    const headTimer = setTimeout(() => {
      req.destroy(new Error(`no response head from ${url} within ${timeoutMs} ms`));
    }, timeoutMs);
    req.once("error", (err) => {
      clearTimeout(headTimer);
      reject(err);
    });
    req.once("response", (res: IncomingMessage) => {
      clearTimeout(headTimer);
      resolve(wrap(req, res));
    });
    req.end();
  });
}

function wrap(req: ReturnType<typeof httpRequest>, res: IncomingMessage): SseStream {
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const wakers = new Set<() => void>();
  const wakeAll = () => {
    for (const wake of [...wakers]) wake();
  };
  let ended = false;
  let transportError: Error | undefined;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => (resolveClosed = resolve));
  const end = () => {
    if (ended) return;
    ended = true;
    resolveClosed();
    wakeAll();
  };

  const stream: SseStream = {
    status: res.statusCode ?? 0,
    headers: res.headers,
    events,
    comments,
    body: "",
    get ended() {
      return ended;
    },
    get error() {
      return transportError;
    },
    closed,
    waitFor: (predicate, timeoutMs = 5000) =>
      until(
        () => events.find(predicate),
        timeoutMs,
        () => `no matching event; saw ${describe(events)}${ended ? " and the stream ended" : ""}`,
      ),
    waitForComments: (count, timeoutMs = 5000) =>
      until(
        () => (comments.length >= count ? comments.slice() : undefined),
        timeoutMs,
        () =>
          `expected ${count} comment lines, got ${comments.length}${ended ? " and the stream ended" : ""}`,
      ),
    [Symbol.asyncIterator]() {
      let next = 0;
      return {
        next: async (): Promise<IteratorResult<SseEvent>> => {
          for (;;) {
            if (next < events.length) return { value: events[next++]!, done: false };
            if (ended) return { value: undefined, done: true };
            await new Promise<void>((resolve) => {
              const wake = () => {
                wakers.delete(wake);
                resolve();
              };
              wakers.add(wake);
            });
          }
        },
        return: async (): Promise<IteratorResult<SseEvent>> => ({ value: undefined, done: true }),
      };
    },
    close() {
      req.destroy();
      res.destroy();
      end();
    },
  };

  /** Polls `probe` after every arrival until it yields a value, the stream ends, or time is up. */
  function until<T>(probe: () => T | undefined, timeoutMs: number, explain: () => string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const check = () => {
        const value = probe();
        if (value !== undefined) {
          finish();
          resolve(value);
        } else if (ended) {
          finish();
          reject(new Error(explain()));
        }
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`timed out after ${timeoutMs} ms: ${explain()}`));
      }, timeoutMs);
      const finish = () => {
        clearTimeout(timer);
        wakers.delete(check);
      };
      wakers.add(check);
      check();
    });
  }

  const isEventStream = /^text\/event-stream\b/i.test(String(res.headers["content-type"] ?? ""));
  const parser = new SseParser({
    event: (e) => {
      events.push(e);
      wakeAll();
    },
    comment: (text) => {
      comments.push(text);
      wakeAll();
    },
    retry: (ms) => {
      stream.retry = ms;
    },
  });
  const decoder = new TextDecoder("utf-8");
  res.on("data", (chunk: Buffer) => {
    const text = decoder.decode(chunk, { stream: true });
    if (isEventStream) parser.push(text);
    else stream.body += text;
  });
  res.once("end", () => {
    const rest = decoder.decode();
    if (isEventStream) parser.push(rest);
    else stream.body += rest;
    end();
  });
  res.once("error", (err) => {
    transportError ??= err;
    end();
  });
  res.once("close", end);
  req.on("error", (err) => {
    transportError ??= err;
    end();
  });
  return stream;
}

function lowerKeys(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
}

function describe(events: SseEvent[]): string {
  if (events.length === 0) return "no events";
  return events.map((e) => `${e.event}${e.id !== undefined ? `#${e.id}` : ""} ${e.data}`).join(" | ");
}
