import type { FastifyBaseLogger } from "fastify";
import type { Bindings, ChildLoggerOptions, LogFn, Logger } from "pino";

type Level = "fatal" | "error" | "warn" | "info" | "debug" | "trace";

/**
 * A request's logger (request.log), made when the request first logs. Most requests log only their
 * access-log line, which is written through the parent with the request id as a field
 * (access-log.ts); making a pino child for each of them (it serialises its bindings) cost more than
 * the line. Lines written through it are the same as through the child: bindings first.
 */
export class LazyRequestLogger {
  private made: Logger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private get logger(): Logger {
    this.made ??= this.parent.child(this.bindings, this.options);
    return this.made;
  }

  get level(): string {
    return this.made?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  // Methods on the prototype, not arrow-function fields: a request's logger is made per request.
  fatal(...args: Parameters<LogFn>): void {
    this.write("fatal", args);
  }
  error(...args: Parameters<LogFn>): void {
    this.write("error", args);
  }
  warn(...args: Parameters<LogFn>): void {
    this.write("warn", args);
  }
  info(...args: Parameters<LogFn>): void {
    this.write("info", args);
  }
  debug(...args: Parameters<LogFn>): void {
    this.write("debug", args);
  }
  trace(...args: Parameters<LogFn>): void {
    this.write("trace", args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }

  isLevelEnabled(level: string): boolean {
    return (this.made ?? this.parent).isLevelEnabled(level);
  }

  private write(level: Level, args: Parameters<LogFn>): void {
    // A line below the level makes no child.
    if (!this.isLevelEnabled(level)) return;
    this.logger[level](...args);
  }
}

/**
 * The server's logger as Fastify is given it: the process's logger, whose children are lazy. Fastify
 * makes a request's logger with its own factory through `child`; a factory of ours
 * (childLoggerFactory) would have Fastify check the logger it returns on every request.
 */
export function serverLogger(logger: Logger): FastifyBaseLogger {
  const server = Object.create(logger) as Logger;
  server.child = ((bindings: Bindings, options?: ChildLoggerOptions) =>
    new LazyRequestLogger(logger, bindings, options ?? {})) as unknown as Logger["child"];
  return server;
}
