// The command-line client run as a person runs it, for the CLI tests: a child process, its output
// collected to its end.
import { spawn, type ChildProcess } from "node:child_process";
import { runnerEntry } from "../../controller/runner-process.js";

const ROOT = new URL("../../", import.meta.url).pathname;
/** How long one command may take before the test gives up on it (and kills it). */
export const CLI_RUN_LIMIT_MS = 90_000;

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout as bytes (a `get … -` writes a file's bytes there). */
  bytes: Buffer;
}

/** What a person's shell holds for the client: a PATH, a HOME, the API's address and key. */
export function clientEnv(
  url: string,
  key: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? "/tmp",
    MEDIA_SERVICE_URL: url,
    MEDIA_SERVICE_API_KEY: key,
    ...extra,
  };
}

/** Starts `media-service ARGS` from the project's directory, as the runner's entry runs it. */
export function spawnCli(args: string[], env: Record<string, string>): ChildProcess {
  const entry = runnerEntry();
  return spawn(process.execPath, [...entry.execArgv, entry.path, ...args], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
}

/** A started command's exit code and output, once it has ended. */
export function collect(child: ChildProcess, args: string[]): Promise<Ran> {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout!.on("data", (c: Buffer) => out.push(c));
  child.stderr!.on("data", (c: Buffer) => err.push(c));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`media-service ${args.join(" ")} did not end within ${CLI_RUN_LIMIT_MS} ms`));
    }, CLI_RUN_LIMIT_MS);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      const bytes = Buffer.concat(out);
      resolve({ code, stdout: bytes.toString("utf8"), stderr: Buffer.concat(err).toString("utf8"), bytes });
    });
  });
}

/** Runs `media-service ARGS` to its end. */
export const runCli = (args: string[], env: Record<string, string>) => collect(spawnCli(args, env), args);

/** A run's exit code and output, for an assertion's message. */
export const said = (r: Ran) => `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;
