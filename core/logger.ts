import { createRequire } from "node:module";
import { register as onExit, unregister as unregisterExit } from "on-exit-leak-free";
import { pino, type DestinationStream, type Logger, type LoggerOptions } from "pino";

export type { Logger };

export interface LoggerSettings {
  level?: string;
  name?: string;
  /** auto: readable lines when stdout is a terminal, JSON lines otherwise (default). */
  format?: "auto" | "json" | "pretty";
  /** Where JSON lines go: a file descriptor or path; default stdout. */
  destination?: number | string;
}

/** JSON lines are written in blocks of about this many bytes, and at least this often. */
const LOG_BLOCK_BYTES = 4096;
const LOG_FLUSH_MS = 250;

// Where a credential could sit in what is logged: request headers, and the secret settings by name,
// at the top of a logged object or under their section's name.
const SECRET_NAMES = ["api_keys", "keys", "secret_access_key", "password", "signing_secret", "api_key"];
const REDACTED_PATHS = [
  "req.headers.authorization",
  'req.headers["x-api-key"]',
  "headers.authorization",
  'headers["x-api-key"]',
  "authorization",
  ...SECRET_NAMES,
  ...["server", "storage", "redis", "webhooks", "ai", "config"].flatMap((section) =>
    SECRET_NAMES.map((name) => `${section}.${name}`),
  ),
];

// pino's isoTime makes a Date and its ISO string for every line; lines of one millisecond share them.
let lastMs = -1;
let lastTime = "";
function isoTime(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastTime = `,"time":"${new Date(now).toISOString()}"`;
  }
  return lastTime;
}

// One event per line: JSON for machines (off a terminal: containers, files, log shippers), readable
// for a person at a terminal. Secrets never reach a log line: the redaction list covers every place a
// credential can appear in what we log (request headers, config dumps), in both formats.
export function createLogger(settings: LoggerSettings = {}): Logger {
  const options: LoggerOptions = {
    level: settings.level ?? process.env.LOG_LEVEL ?? "info",
    base: { service: "media-service", ...(settings.name ? { role: settings.name } : {}) },
    timestamp: isoTime,
    // Exact paths only: a wildcard path (`*.password`) makes pino walk every logged object, which
    // cost 10 µs a line, more than the rest of the line; nothing logs configuration objects whole.
    redact: {
      paths: REDACTED_PATHS,
      censor: "[redacted]",
    },
  };
  const format = settings.format ?? "auto";
  const pretty = format === "pretty" || (format === "auto" && process.stdout.isTTY === true);
  return pretty ? pino(options, prettyStream()) : pino(options, jsonStream(settings.destination ?? 1));
}

// JSON lines are gathered into blocks rather than written one syscall each: under load the API logs
// a line per request, and a write per line cost it more than the rest of its logging. A block is
// written synchronously, in the thread that logs: handing each one to libuv's thread pool
// (sync: false) cost 3 µs a line more, as much as making the line. A quiet process still writes
// within LOG_FLUSH_MS, and whatever is buffered is written when the process exits.
function jsonStream(dest: number | string): DestinationStream {
  const out = pino.destination({ dest, sync: true });
  const blocks = new LineBlocks(out);
  onExit(blocks, flushAtExit);
  out.once("close", () => {
    blocks.stop();
    unregisterExit(blocks);
  });
  return blocks;
}

/**
 * Lines kept as a list and joined once per block, then written by sonic-boom (which owns the file
 * descriptor, short writes and EAGAIN). sonic-boom's own buffering (minLength) appends each line to
 * one string and measures that string's UTF-8 length on every write: 1 µs a line at 4 KB blocks.
 */
class LineBlocks implements DestinationStream {
  private lines: string[] = [];
  private chars = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly out: ReturnType<typeof pino.destination>) {
    this.timer = setInterval(() => this.writeBlock(), LOG_FLUSH_MS);
    this.timer.unref();
  }

  write(line: string): boolean {
    this.lines.push(line);
    this.chars += line.length;
    if (this.chars >= LOG_BLOCK_BYTES) this.writeBlock();
    return true;
  }

  flush(done?: (err?: Error) => void): void {
    this.writeBlock();
    done?.();
  }

  /** pino calls this for a fatal line and at its own final flush. */
  flushSync(): void {
    this.writeBlock();
    this.out.flushSync();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private writeBlock(): void {
    if (this.lines.length === 0) return;
    const block = this.lines.length === 1 ? this.lines[0]! : this.lines.join("");
    this.lines = [];
    this.chars = 0;
    this.out.write(block);
  }
}

function flushAtExit(blocks: LineBlocks): void {
  try {
    blocks.flushSync();
  } catch {
    // A closed or broken destination at exit: nothing more can be written to it.
  }
}

// pino-pretty as a synchronous stream in this thread (no worker, nothing lost at exit), loaded only
// when used: a runner writing JSON never pays for it.
function prettyStream(): DestinationStream {
  const require = createRequire(import.meta.url);
  const build = require("pino-pretty") as (options: Record<string, unknown>) => DestinationStream;
  return build({
    sync: true,
    singleLine: true,
    colorize: process.stdout.isTTY === true,
    translateTime: "SYS:HH:MM:ss.l",
    ignore: "pid,hostname,service,role",
    messageFormat: "{if role}{role}{end}{if component}/{component}{end} {msg}",
    hideObject: false,
  });
}
