import { pino, type Logger, type LoggerOptions } from "pino";

export type { Logger };

export interface LoggerSettings {
  level?: string;
  name?: string;
}

// One JSON line per event. Secrets never reach a log line: the redaction list covers every place a
// credential can appear in what we log (request headers, config dumps).
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
        "*.secret_access_key",
        "*.password",
        "*.signing_secret",
        "*.api_key",
      ],
      censor: "[redacted]",
    },
  };
  return pino(options);
}
