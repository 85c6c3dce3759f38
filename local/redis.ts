// A private redis-server child process for the all-in-one local stack (`npm start` without REDIS_URL)
// and, through `spawnRedisServer`, for the test suite (test/support/redis.ts).
import { spawn, type ChildProcess } from "node:child_process";
import { isRunning } from "../core/start-state.js";
import { randomBytes } from "node:crypto";
import { constants as fsConstants } from "node:fs";
import { access, chmod, mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { delimiter, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import type { Logger } from "pino";
import { onFreePorts, PortTakenError } from "../core/net.js";

const HOST = "127.0.0.1";
const DEFAULT_FALLBACKS = ["/usr/bin/redis-server", "/usr/sbin/redis-server"];
const INSTALL_HINT =
  "install it with `sudo apt-get install -y redis-server` (Debian/Ubuntu) or `brew install redis` (macOS), " +
  "or set REDIS_URL to an existing Redis";
const STOP_GRACE_MS = 5_000;
const OUTPUT_TAIL_LINES = 40;
const PORT_ATTEMPTS = 5;

export class RedisServerNotFoundError extends Error {
  constructor(where = "on PATH") {
    super(`redis-server was not found ${where}; ${INSTALL_HINT}`);
    this.name = "RedisServerNotFoundError";
  }
}

// redis-server started but did not become ready (exited early, or did not answer PING in time).
// `output` holds the last lines redis-server printed (its log goes to stdout, errors to stderr).
export class RedisStartError extends Error {
  constructor(
    message: string,
    readonly output: string[],
  ) {
    super(
      output.length > 0 ? `${message}\nredis-server output (last lines):\n${output.join("\n")}` : message,
    );
    this.name = "RedisStartError";
  }
}

export interface RedisBinaryLookup {
  // Absolute path of the redis-server executable; skips the lookup below.
  binary?: string;
  // PATH-style list of directories to search; default process.env.PATH.
  searchPath?: string;
  // Absolute paths tried after searchPath; default /usr/bin/redis-server and /usr/sbin/redis-server.
  fallbacks?: string[];
}

export interface SpawnRedisOptions extends RedisBinaryLookup {
  // Extra redis-server arguments (persistence, --dir, ...). Bind address, port, protected mode and
  // daemonize are always set by spawnRedisServer.
  args?: string[];
  // Clients must AUTH with it. It reaches redis-server on its standard input, never its command line
  // (which every user of the machine can read), and is part of the returned url.
  password?: string;
  // Default: a free port chosen by the OS (retried with a new port if redis-server fails to bind it).
  port?: number;
  // Working directory of the child; default the current one.
  cwd?: string;
  // redis-server's stdout/stderr lines are logged here at debug level.
  logger?: Logger;
  // How long to wait for PONG (AOF loading answers -LOADING until done); default 15 s.
  readyTimeoutMs?: number;
}

export interface RedisServerProcess {
  // redis://[:password@]127.0.0.1:port
  url: string;
  port: number;
  pid: number;
  // SIGTERM, wait for exit; SIGKILL after 5 s. Idempotent. A function property, not a method: it is
  // an arrow that uses no `this`, so it can be passed on by itself (startLocalRedis does).
  stop: () => Promise<void>;
}

export interface LocalRedisOptions extends RedisBinaryLookup {
  dataDir: string;
  port?: number;
  logger: Logger;
  readyTimeoutMs?: number;
}

export interface LocalRedis {
  url: string;
  port: number;
  stop: () => Promise<void>;
}

async function isExecutableFile(path: string): Promise<boolean> {
  try {
    if (!(await stat(path)).isFile()) return false;
    await access(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export async function findRedisServer(lookup: RedisBinaryLookup = {}): Promise<string> {
  if (lookup.binary !== undefined) {
    if (await isExecutableFile(lookup.binary)) return lookup.binary;
    throw new RedisServerNotFoundError(`at ${lookup.binary}`);
  }
  const dirs = (lookup.searchPath ?? process.env.PATH ?? "").split(delimiter).filter((d) => d !== "");
  const candidates = [
    ...dirs.map((d) => join(d, "redis-server")),
    ...(lookup.fallbacks ?? DEFAULT_FALLBACKS),
  ];
  for (const candidate of candidates) {
    if (await isExecutableFile(candidate)) return candidate;
  }
  throw new RedisServerNotFoundError();
}

// Children still running when this process exits get SIGTERM (redis-server flushes the AOF and exits on
// it). One listener for all children, installed on first use.
const liveChildren = new Set<ChildProcess>();
let exitHookInstalled = false;
function track(child: ChildProcess): void {
  liveChildren.add(child);
  child.once("exit", () => liveChildren.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on("exit", () => {
      for (const c of liveChildren) {
        try {
          c.kill("SIGTERM");
        } catch {
          // already gone
        }
      }
    });
  }
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface Probe {
  // PING's reply line: "+PONG" when ready, "-LOADING ..." while the AOF is being loaded.
  ping: string;
  // process_id from INFO server: tells our child apart from another redis-server that won the race
  // for the port (our child then exits with "Address already in use").
  pid: number | undefined;
}

const bulk = (s: string) => `$${Buffer.byteLength(s)}\r\n${s}\r\n`;

// Sends [AUTH,] PING and INFO server over a raw socket (no client library: it must fail fast and
// quietly). AUTH is answered even while the AOF loads, so the first reply after it is PING's.
function probe(port: number, timeoutMs: number, password: string | undefined): Promise<Probe> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: HOST, port });
    let buffer = "";
    const done = (err: Error | null, result?: Probe) => {
      socket.destroy();
      if (err || !result) reject(err ?? new Error("no reply"));
      else resolve(result);
    };
    socket.setTimeout(timeoutMs, () => done(new Error(`no reply to PING within ${timeoutMs} ms`)));
    socket.once("error", (err) => done(err));
    const auth = password === undefined ? "" : `*2\r\n${bulk("AUTH")}${bulk(password)}`;
    socket.once("connect", () =>
      socket.write(`${auth}*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n`),
    );
    let authReplied = password === undefined;
    socket.on("data", (chunk: Buffer) => {
      buffer += chunk.toString("latin1");
      if (!authReplied) {
        const end = buffer.indexOf("\r\n");
        if (end < 0) return;
        const reply = buffer.slice(0, end);
        if (!reply.startsWith("+OK")) return done(null, { ping: `AUTH: ${reply}`, pid: undefined });
        buffer = buffer.slice(end + 2);
        authReplied = true;
      }
      const first = buffer.indexOf("\r\n");
      if (first < 0) return;
      const ping = buffer.slice(0, first);
      const rest = buffer.slice(first + 2);
      const header = rest.indexOf("\r\n");
      if (header < 0) return;
      if (!rest.startsWith("$")) return done(null, { ping, pid: undefined }); // e.g. an error reply
      const length = Number(rest.slice(1, header));
      const body = rest.slice(header + 2);
      if (body.length < length) return;
      const match = /^process_id:(\d+)\r?$/m.exec(body.slice(0, length));
      done(null, { ping, pid: match ? Number(match[1]) : undefined });
    });
    socket.once("end", () => done(new Error("connection closed before the PING reply")));
  });
}

function waitForExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = waitForExit(child);
  child.kill("SIGTERM");
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = await Promise.race([
    exited.then(() => false),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), STOP_GRACE_MS);
    }),
  ]);
  clearTimeout(timer);
  if (timedOut) {
    child.kill("SIGKILL");
    await exited;
  }
}

type Attempt = { ok: true; server: RedisServerProcess } | { ok: false; bindFailed: boolean; error: Error };

async function attempt(binary: string, port: number, opts: SpawnRedisOptions): Promise<Attempt> {
  const args = [
    "--bind",
    HOST,
    "--port",
    String(port),
    "--protected-mode",
    "yes",
    "--daemonize",
    "no",
    ...(opts.args ?? []),
  ];
  if (opts.password !== undefined) args.push("-"); // the rest of the configuration from stdin
  // A process group of its own: Ctrl-C on a terminal signals the whole foreground group, and Redis
  // must outlive the processes that still write to it while they stop; its parent stops it last.
  const child = spawn(binary, args, { cwd: opts.cwd, stdio: ["pipe", "pipe", "pipe"], detached: true });
  track(child);
  child.stdin?.on("error", () => undefined); // an early exit is reported below, with its output
  child.stdin?.end(opts.password === undefined ? "" : `requirepass "${opts.password}"\n`);

  const output: string[] = [];
  for (const [stream, readable] of [
    ["stdout", child.stdout],
    ["stderr", child.stderr],
  ] as const) {
    if (!readable) continue;
    createInterface({ input: readable, crlfDelay: Infinity }).on("line", (line) => {
      output.push(line);
      if (output.length > OUTPUT_TAIL_LINES) output.shift();
      opts.logger?.debug({ stream }, line);
    });
  }

  let spawnError: Error | undefined;
  child.once("error", (err) => {
    spawnError = err;
  });
  // "close" comes after "exit" once stdout/stderr are drained, so the output tail is complete.
  let closed = false;
  const whenClosed = new Promise<null>((resolve) =>
    child.once("close", () => {
      closed = true;
      resolve(null);
    }),
  );

  const timeoutMs = opts.readyTimeoutMs ?? 15_000;
  const deadline = Date.now() + timeoutMs;
  let lastReply = "no reply yet";
  for (;;) {
    if (spawnError) {
      liveChildren.delete(child);
      return {
        ok: false,
        bindFailed: false,
        error: new RedisStartError(`could not start ${binary}: ${spawnError.message}`, output),
      };
    }
    if (closed) {
      const bindFailed = output.some((l) => /Address already in use|Failed listening on port/i.test(l));
      const how = child.exitCode !== null ? `exit code ${child.exitCode}` : `signal ${child.signalCode}`;
      return {
        ok: false,
        bindFailed,
        error: new RedisStartError(`redis-server exited during startup (${how}) on port ${port}`, output),
      };
    }
    // Race the probe against the child's exit, so a failed start is reported at once.
    const reply = await Promise.race([
      probe(port, 1_000, opts.password).catch((err: Error) => ({ ping: `(${err.message})`, pid: undefined })),
      whenClosed,
    ]);
    if (reply === null) continue;
    if (reply.ping.startsWith("+PONG") && reply.pid === child.pid) break;
    lastReply =
      reply.pid === undefined || reply.pid === child.pid ? reply.ping : `answered by pid ${reply.pid}`;
    if (Date.now() >= deadline) {
      await terminate(child);
      return {
        ok: false,
        bindFailed: false,
        error: new RedisStartError(
          `redis-server on port ${port} did not answer PING within ${timeoutMs} ms (last: ${lastReply})`,
          output,
        ),
      };
    }
    await delay(50);
  }

  let stopping: Promise<void> | undefined;
  return {
    ok: true,
    server: {
      url: `redis://${opts.password === undefined ? "" : `:${opts.password}@`}${HOST}:${port}`,
      port,
      pid: child.pid ?? -1,
      stop: () => (stopping ??= terminate(child)),
    },
  };
}

// Spawns redis-server bound to 127.0.0.1 only and resolves once it answers PING.
export async function spawnRedisServer(opts: SpawnRedisOptions = {}): Promise<RedisServerProcess> {
  const binary = await findRedisServer(opts);
  if (opts.port !== undefined) {
    const result = await attempt(binary, opts.port, opts);
    if (result.ok) return result.server;
    throw result.error;
  }
  // Only a lost race for an OS-chosen port is worth retrying.
  return onFreePorts(
    1,
    PORT_ATTEMPTS,
    async ([port]) => {
      const result = await attempt(binary, port!, opts);
      if (result.ok) return result.server;
      if (!result.bindFailed) throw result.error;
      opts.logger?.debug({ port }, "redis-server could not bind the port, retrying with another one");
      throw new PortTakenError(result.error.message, { cause: result.error });
    },
    HOST,
  );
}

// A redis-server left running by a previous run that was killed hard (SIGKILL skips the exit hook)
// would keep writing the same AOF files; stop it before starting a new one on the same directory.
async function reapStaleServer(pidFile: string, logger: Logger): Promise<void> {
  let pid: number;
  try {
    pid = Number.parseInt((await readFile(pidFile, "utf8")).trim(), 10);
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid) return;
  if (!isRunning(pid)) return; // a stale pid file
  let cmdline: string;
  try {
    cmdline = (await readFile(`/proc/${pid}/cmdline`, "utf8")).replaceAll("\0", " ");
  } catch {
    throw new Error(
      `${pidFile} names process ${pid}, which is still running; stop it if it is a redis-server using this data directory, or delete the pid file`,
    );
  }
  if (!cmdline.includes("redis-server") && !cmdline.includes("redis-check-rdb")) return; // pid reused
  logger.warn({ pid, pidFile }, "stopping a redis-server left over from a previous run");
  process.kill(pid, "SIGTERM");
  const deadline = Date.now() + STOP_GRACE_MS;
  for (;;) {
    await delay(100);
    if (!isRunning(pid)) return;
    if (Date.now() >= deadline) {
      process.kill(pid, "SIGKILL");
      return;
    }
  }
}

// The password of the local stack's Redis: made at the first start, kept in <dir>/password (0600).
async function localPassword(dir: string): Promise<string> {
  const file = join(dir, "password");
  try {
    const kept = (await readFile(file, "utf8")).trim();
    if (/^[A-Za-z0-9_-]{32,}$/.test(kept)) {
      await chmod(file, 0o600);
      return kept;
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  const password = randomBytes(32).toString("base64url");
  await writeFile(file, `${password}\n`, { mode: 0o600 });
  return password;
}

// The local stack's Redis: on loopback, with a password, persistent (AOF, fsync every second, no RDB
// snapshots) under <dataDir>/redis.
export async function startLocalRedis(opts: LocalRedisOptions): Promise<LocalRedis> {
  // Absolute: redis-server resolves --dir and --pidfile against its own working directory.
  const dir = resolve(opts.dataDir, "redis");
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const pidFile = join(dir, "redis-server.pid");
  await reapStaleServer(pidFile, opts.logger);
  const password = await localPassword(dir);
  const server = await spawnRedisServer({
    binary: opts.binary,
    searchPath: opts.searchPath,
    fallbacks: opts.fallbacks,
    port: opts.port,
    logger: opts.logger,
    readyTimeoutMs: opts.readyTimeoutMs ?? 60_000,
    password,
    cwd: dir,
    args: [
      "--dir",
      dir,
      "--pidfile",
      pidFile,
      "--appendonly",
      "yes",
      "--appendfsync",
      "everysec",
      "--save",
      "",
    ],
  });
  opts.logger.info({ address: `${HOST}:${server.port}`, dir }, "local redis-server started");
  return { url: server.url, port: server.port, stop: server.stop };
}
