// versitygw (the Versity S3 Gateway, Apache-2.0) on its posix backend: an S3-protocol server that is
// not ours, for the tests run against an outside object store (npm run test:s3-compat) and for
// comparisons with the embedded store. Each call starts a process of its own on a free port of
// 127.0.0.1, with a temporary root directory (one sub-directory a bucket) and credentials of its own;
// stop() ends it and removes the directory, as does the exit of this process.
//
// The binary is built once from its Go module and cached outside the repository:
//   bash scripts/provision.sh versitygw
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { accessSync, constants as fsConstants, rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { onFreePorts, PortTakenError } from "./ports.js";

export const VERSITYGW_VERSION = "1.8.0";
export const VERSITYGW_PROVISION = "bash scripts/provision.sh versitygw";

const HOST = "127.0.0.1";
const REGION = "us-east-1";
const READY_TIMEOUT_MS = 15_000;
const STOP_GRACE_MS = 5_000;
const PORT_ATTEMPTS = 5;
const OUTPUT_TAIL_LINES = 40;

export interface Versitygw {
  /** http://127.0.0.1:<port>; buckets are addressed by path. */
  url: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  pid: number;
  /** SIGTERM (SIGKILL after 5 s), then the root directory is removed. Idempotent. */
  stop(): Promise<void>;
}

/** Where scripts/provision.sh caches the build (the same directory it installs into). */
export function versitygwCacheDir(): string {
  const cache = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(cache, "media-service", `versitygw-${VERSITYGW_VERSION}`);
}

/** The cached versitygw binary; an error naming the provisioning command when it is not built. */
export function versitygwBinary(): string {
  const binary = join(versitygwCacheDir(), "versitygw");
  try {
    accessSync(binary, fsConstants.X_OK);
  } catch {
    throw new Error(
      `versitygw ${VERSITYGW_VERSION} is not built (no executable ${binary}); build it once with: ${VERSITYGW_PROVISION}`,
    );
  }
  return binary;
}

// Servers and root directories still there when this process exits: SIGKILL (the exit hook cannot
// wait) and the directory removed.
const live = new Map<ChildProcess, string>();
let exitHookInstalled = false;
function track(child: ChildProcess, root: string): void {
  live.set(child, root);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const [c, dir] of live) {
      c.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

/** Starts versitygw and resolves once it answers on its health path. */
export async function startVersitygw(): Promise<Versitygw> {
  const binary = versitygwBinary();
  // Only a lost race for the free port is worth another try.
  return onFreePorts(
    1,
    PORT_ATTEMPTS,
    async ([port]) => {
      const result = await attempt(binary, port!);
      if ("server" in result) return result.server;
      if (result.bindFailed) throw new PortTakenError(result.error.message, { cause: result.error });
      throw result.error;
    },
    HOST,
  );
}

async function attempt(
  binary: string,
  port: number,
): Promise<{ server: Versitygw } | { error: Error; bindFailed: boolean }> {
  const root = await mkdtemp(join(tmpdir(), "media-service-versitygw-"));
  const accessKeyId = `vgw${randomBytes(8).toString("hex")}`;
  const secretAccessKey = randomBytes(24).toString("base64url");
  const url = `http://${HOST}:${port}`;
  // The credentials reach it through its environment, not its command line. Connections are kept
  // alive, as S3 services (and the embedded store) keep them; versitygw closes each one by default.
  const args = ["--port", `${HOST}:${port}`, "--region", REGION, "--health", "/health", "--keep-alive"];
  const child = spawn(binary, [...args, "--quiet", "posix", root], {
    env: { ...process.env, ROOT_ACCESS_KEY: accessKeyId, ROOT_SECRET_KEY: secretAccessKey },
    stdio: ["ignore", "pipe", "pipe"],
  });
  track(child, root);
  const output: string[] = [];
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream, crlfDelay: Infinity }).on("line", (line) => {
      output.push(line);
      if (output.length > OUTPUT_TAIL_LINES) output.shift();
    });
  }
  const exited = new Promise<string>((resolve) => {
    child.once("error", (err) => resolve(`could not be started: ${err.message}`));
    // "close" comes after the output is drained, so the tail is complete.
    child.once("close", (code, signal) => resolve(`exited (${code ?? signal}) during startup`));
  });
  const failed = async (why: string, bindFailed = false) => {
    live.delete(child);
    await rm(root, { recursive: true, force: true });
    const tail = output.length > 0 ? `\nits output (last lines):\n${output.join("\n")}` : "";
    return { error: new Error(`versitygw on port ${port} ${why}${tail}`), bindFailed };
  };

  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const ready = fetch(`${url}/health`, { signal: AbortSignal.timeout(1_000) }).then(
      async (res) => (await res.arrayBuffer(), res.ok),
      () => false,
    );
    const outcome = await Promise.race([ready, exited]);
    if (typeof outcome === "string") {
      return failed(
        outcome,
        output.some((l) => /address already in use/i.test(l)),
      );
    }
    if (outcome) break;
    if (Date.now() >= deadline) {
      await terminate(child);
      return failed(`did not answer GET /health within ${READY_TIMEOUT_MS} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await terminate(child);
      live.delete(child);
      await rm(root, { recursive: true, force: true });
    })());
  return { server: { url, accessKeyId, secretAccessKey, region: REGION, pid: child.pid ?? -1, stop } };
}

async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
}
