// The unit tier's guard, loaded into every test process by scripts/run-tests.mjs
// (`--import ./test/support/pure.ts`). In a test file under test/unit/ it makes every way out of the
// process throw: spawning a child process (a redis-server, ffmpeg, helm, node), opening a server or
// a client socket (TCP, Unix, UDP; ioredis, fetch and the AWS SDK all go through node:net). A test
// that needs one of them belongs in test/component/ (one part on real Redis, S3, sharp, ffmpeg, files)
// or test/integration/ (the whole stack), and the error says so. Elsewhere (the test runner's own
// process, the other tiers' files, processes they start) it does nothing.
import childProcess from "node:child_process";
import dgram from "node:dgram";
import { syncBuiltinESMExports } from "node:module";
import net from "node:net";
import { relative, resolve, sep } from "node:path";

const ROOT = resolve(import.meta.dirname, "../..");
const entry = process.argv[1];
const file = entry === undefined ? undefined : relative(ROOT, resolve(entry)).split(sep).join("/");

/** The error a unit test gets for `what`, naming the tier and where such a test goes. */
export function impureError(what: string, testFile = file ?? "a test under test/unit/"): Error {
  return new Error(
    `${testFile} is in the unit tier (test/unit/: pure code, no processes, sockets, Redis or S3), ` +
      `and it ${what}: move it to test/component/ (one part on real Redis, S3, sharp, ffmpeg) ` +
      `or test/integration/ (the whole stack)`,
  );
}

if (file?.startsWith("test/unit/")) {
  const refuse = (what: (args: unknown[]) => string) =>
    function refused(...args: unknown[]): never {
      throw impureError(what(args));
    };
  const command = (args: unknown[]) => {
    const name = typeof args[0] === "string" ? args[0] : "a program";
    return `starts a child process (${name.split(/\s/)[0]})`;
  };
  const target = (args: unknown[]): string => {
    // net.connect() hands Socket#connect its arguments normalized, as one array.
    const [first, second] = Array.isArray(args[0]) ? (args[0] as unknown[]) : args;
    const text = (value: unknown) =>
      typeof value === "string" || typeof value === "number" ? String(value) : "?";
    if (typeof first === "object" && first !== null) {
      const o = first as { port?: unknown; host?: unknown; path?: unknown };
      if (o.path !== undefined) return text(o.path);
      return `${typeof o.host === "string" ? o.host : "localhost"}:${text(o.port)}`;
    }
    if (typeof first === "number") return `${typeof second === "string" ? second : "localhost"}:${first}`;
    return text(first);
  };
  for (const name of [
    "spawn",
    "spawnSync",
    "exec",
    "execSync",
    "execFile",
    "execFileSync",
    "fork",
  ] as const) {
    (childProcess as unknown as Record<string, unknown>)[name] = refuse(command);
  }
  net.Socket.prototype.connect = refuse((args) => `opens a socket to ${target(args)}`);
  net.Server.prototype.listen = refuse((args) => `listens on ${target(args)}`);
  dgram.Socket.prototype.bind = refuse((args) => `binds a UDP socket to ${target(args)}`);
  dgram.Socket.prototype.send = refuse(() => "sends a UDP datagram");
  // ESM imports of node:child_process see the functions as they were when first imported, unless
  // told: this updates the named exports (`import { spawn } from "node:child_process"`).
  syncBuiltinESMExports();
}
