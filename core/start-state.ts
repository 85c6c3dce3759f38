// What a running `media-service start` tells the command line on the same machine: where its API
// and its embedded object store are (no secret), in <data dir>/start.json while it runs. put and get
// find the store through it from the API's address alone (--url), without EMBEDDED_S3_PORT.
import { readFileSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { resolve } from "node:path";

export interface StartState {
  pid: number;
  /** The API's base URL, as the banner prints it. */
  api: string;
  /** The embedded store's endpoint, when `start` runs one. */
  s3?: string;
}

const FILE = "start.json";

/** Alive and not a zombie (an orphan that exited but that no init process has reaped yet). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/<pid>/stat: "pid (comm) state ...", comm may contain spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return true; // no /proc (macOS): trust kill(pid, 0)
  }
}

export async function writeStartState(dataDir: string, state: StartState): Promise<() => Promise<void>> {
  const path = resolve(dataDir, FILE);
  await writeFile(path, `${JSON.stringify(state)}\n`, { mode: 0o600 });
  return () => rm(path, { force: true });
}

/** The state of the `start` running on this data directory, if one is running. */
export function readStartState(dataDir: string): StartState | undefined {
  try {
    const state = JSON.parse(readFileSync(resolve(dataDir, FILE), "utf8")) as Partial<StartState>;
    if (typeof state.pid !== "number" || typeof state.api !== "string" || !isRunning(state.pid)) {
      return undefined;
    }
    return {
      pid: state.pid,
      api: state.api,
      ...(typeof state.s3 === "string" ? { s3: state.s3 } : {}),
    };
  } catch {
    return undefined; // none, or not ours
  }
}

/** Two API addresses name the same service (localhost and 127.0.0.1 alike, a trailing / aside). */
export function sameApi(a: string, b: string): boolean {
  const norm = (u: string) => {
    try {
      const url = new URL(u);
      const host = ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname) ? "loopback" : url.hostname;
      return `${url.protocol}//${host}:${url.port || (url.protocol === "https:" ? "443" : "80")}${url.pathname.replace(/\/+$/, "")}`;
    } catch {
      return u;
    }
  };
  return norm(a) === norm(b);
}
