// What the k8s test support starts must not outlive the test process: one set of exit hooks for all
// of it, the kernel's parent-death signal for children, and a liveness check that counts zombies dead.
import { spawnSync } from "node:child_process";
import { accessSync, constants as fsConstants, readFileSync } from "node:fs";
import { delimiter, join } from "node:path";

const cleanups: Array<() => void> = [];
let hooksInstalled = false;

function runCleanups(): void {
  for (const cleanup of cleanups) {
    try {
      cleanup();
    } catch {
      // best effort: the process is going away
    }
  }
}

/**
 * Runs `cleanup` (synchronous) when the process exits, or on SIGINT / SIGTERM before dying of it.
 * Registering the same function again is a no-op.
 */
export function onTestExit(cleanup: () => void): void {
  if (!cleanups.includes(cleanup)) cleanups.push(cleanup);
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on("exit", runCleanups);
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    const onSignal = () => {
      runCleanups();
      process.removeListener(signal, onSignal);
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    process.on(signal, onSignal);
  }
}

/** The path of an executable as execvp would find it with this PATH, or undefined. */
export function lookPath(command: string, path: string | undefined): string | undefined {
  const candidates = command.includes("/")
    ? [command]
    : (path ?? "").split(delimiter).map((d) => join(d || ".", command));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // next
    }
  }
  return undefined;
}

// `setpriv --pdeathsig KILL` makes the kernel SIGKILL a child when this process dies, even by SIGKILL
// (when no exit hook can run).
let pdeathsigPrefix: string[] | undefined;
/** The argv prefix that ties a child's life to this process ([] where setpriv is unavailable). */
export function deathSignalPrefix(): string[] {
  if (pdeathsigPrefix === undefined) {
    pdeathsigPrefix = [];
    const setpriv = process.platform === "linux" ? lookPath("setpriv", process.env.PATH) : undefined;
    if (setpriv && spawnSync(setpriv, ["--pdeathsig", "KILL", "--", "true"]).status === 0) {
      pdeathsigPrefix = [setpriv, "--pdeathsig", "KILL", "--"];
    }
  }
  return pdeathsigPrefix;
}

/** Whether a process runs; a killed process not yet reaped by its parent (a zombie) counts as dead. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== "ESRCH";
  }
}
