import { createRequire } from "node:module";
import { pino, type DestinationStream, type Logger, type LoggerOptions } from "pino";

export type { Logger };

export interface LoggerSettings {
  level?: string;
  name?: string;
  /** auto: readable lines when stdout is a terminal, JSON lines otherwise (default). */
  format?: "auto" | "json" | "pretty";
}

// One event per line: JSON for machines (off a terminal: containers, files, log shippers), readable
// for a person at a terminal. Secrets never reach a log line: the redaction list covers every place a
// credential can appear in what we log (request headers, config dumps), in both formats.
export function createLogger(settings: LoggerSettings = {}): Logger {
  const options: LoggerOptions = {
    level: settings.level ?? process.env.LOG_LEVEL ?? "info",
    base: { service: "media-service", ...(settings.name ? { role: settings.name } : {}) },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: [
        "req.headers.authorization",
        'req.headers["x-api-key"]',
        "headers.authorization",
        'headers["x-api-key"]',
        "*.api_keys",
        "*.clients[*].keys",
        "*.*.clients[*].keys",
        "*.secret_access_key",
        "*.password",
        "*.signing_secret",
        "*.api_key",
      ],
      censor: "[redacted]",
    },
  };
  const format = settings.format ?? "auto";
  const pretty = format === "pretty" || (format === "auto" && process.stdout.isTTY === true);
  return pretty ? pino(options, prettyStream()) : pino(options);
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
