import { fork, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { RUNNER_NODE_FLAGS } from "../core/config/runner-env.js";
import type { Job } from "../core/jobs/records.js";
import type { Logger } from "../core/logger.js";
import type { ExecutorMessage, RunnerMessage } from "../core/runner-messages.js";

/** What a runner reported for one job, or how its process ended while running it. */
export interface RunnerOutcome {
  code: number;
  error?: string;
}

/**
 * The CLI entry a runner process starts from: dist/cli.js when running compiled, cli.ts (through
 * tsx) when running from source; with the runner's V8 flags either way.
 */
export function runnerEntry(): { path: string; execArgv: string[] } {
  const compiled = fileURLToPath(new URL("../cli.js", import.meta.url));
  const fromSource = !existsSync(compiled);
  return {
    path: fromSource ? fileURLToPath(new URL("../cli.ts", import.meta.url)) : compiled,
    execArgv: [...RUNNER_NODE_FLAGS, ...(fromSource ? ["--import", "tsx"] : [])],
  };
}

/**
 * One `media-service runner --serve` child process. It runs one job at a time with the runner's
 * own code path and reports each outcome with the exit-code contract; it leaves after `maxJobs`
 * jobs, and dies with its IPC channel if the controller dies.
 */
export class RunnerProcess {
  private readonly child: ChildProcess;
  private current: { jobId: string; resolve: (o: RunnerOutcome) => void } | undefined;
  private exited = false;
  /** Told to leave (stop): it takes no job any more, even while it is still finishing. */
  private leaving = false;
  private served = 0;
  private readonly maxJobs: number;
  readonly ready: Promise<void>;
  readonly exit: Promise<void>;

  constructor(options: { maxJobs: number; env: NodeJS.ProcessEnv; logger: Logger }) {
    this.maxJobs = options.maxJobs;
    const entry = runnerEntry();
    this.child = fork(entry.path, ["runner", "--serve", "--max-jobs", String(options.maxJobs)], {
      execArgv: entry.execArgv,
      env: options.env,
      // stderr is kept until the runner is ready, for the reason of a start that fails (`node: bad
      // option: …`), then passed through.
      stdio: ["ignore", "inherit", "pipe", "ipc"],
      // Its own process group: Ctrl-C on a terminal reaches only the controller, which lets a running
      // job finish or hands it back before it stops its runners. A runner whose controller dies
      // leaves with its IPC channel.
      detached: true,
      serialization: "json",
    });
    const log = options.logger;
    let early = "";
    const keep = (chunk: Buffer) => {
      if (early.length < STARTUP_OUTPUT_CHARS) early += chunk.toString("utf8");
    };
    this.child.stderr!.on("data", keep);
    this.ready = new Promise((resolve, reject) => {
      this.child.once("error", reject);
      this.child.once("exit", (code, signal) => {
        const said = lastLines(early);
        reject(new Error(`runner process exited at start (${code ?? signal})${said ? `: ${said}` : ""}`));
      });
      const onMessage = (m: RunnerMessage) => {
        if (m.type === "ready") {
          this.child.off("message", onMessage);
          this.child.stderr!.off("data", keep);
          if (early) process.stderr.write(early);
          this.child.stderr!.pipe(process.stderr, { end: false });
          resolve();
        }
      };
      this.child.on("message", onMessage);
    });
    this.ready.catch(() => undefined);
    this.child.on("message", (m: RunnerMessage) => {
      if (m.type === "done" && this.current?.jobId === m.jobId) {
        this.served++;
        const { resolve } = this.current;
        this.current = undefined;
        resolve({ code: m.code, ...(m.error ? { error: m.error } : {}) });
      }
    });
    this.exit = new Promise((resolve) => {
      this.child.once("exit", (code, signal) => {
        this.exited = true;
        // Whatever the runner started and left behind in its group (an ffmpeg or ffprobe still
        // finishing when it was stopped) is work nobody waits for any more.
        killGroup(this.child.pid);
        if (this.current) {
          const { resolve: settle, jobId } = this.current;
          this.current = undefined;
          const how = signal ? `was killed (${signal})` : `exited with code ${code}`;
          log.warn({ job_id: jobId, code, signal }, "runner process ended while running a job");
          settle({ code: 1, error: `the runner process ${how} before reporting; out of memory?` });
        }
        resolve();
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Can take a job: running, connected, and not at the end of its job quota (then it leaves). */
  get alive(): boolean {
    return !this.exited && !this.leaving && this.child.connected && this.served < this.maxJobs;
  }

  get busy(): boolean {
    return this.current !== undefined;
  }

  /**
   * Hands the runner a job; `job` is its record as the executor's start returned it (the runner
   * then does not start it again).
   */
  run(jobId: string, job?: Job): Promise<RunnerOutcome> {
    if (this.current) throw new Error("runner process is busy");
    return new Promise((resolve) => {
      this.current = { jobId, resolve };
      const message: ExecutorMessage = { type: "run", jobId, ...(job ? { job } : {}) };
      this.child.send(message, (err) => {
        if (err && this.current?.jobId === jobId) {
          this.current = undefined;
          resolve({ code: 1, error: `could not hand the job to its runner: ${err.message}` });
        }
      });
    });
  }

  /**
   * SIGKILL to the runner and everything it started (ffmpeg): the runner leads its own process group.
   * Used when a job overruns its time or does not stop when asked.
   */
  kill(): void {
    if (this.exited) return;
    if (!killGroup(this.child.pid)) this.child.kill("SIGKILL");
  }

  /**
   * Asks the process to leave: SIGTERM aborts the job it runs (nothing more is uploaded or recorded;
   * the caller decides what becomes of the job), and after `graceMs` it is killed.
   */
  async stop(graceMs = 5000): Promise<void> {
    this.leaving = true;
    if (this.exited) return;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.kill(), graceMs);
    await this.exit;
    clearTimeout(timer);
  }
}

/** What of a runner's stderr before it is ready is kept for the reason of a failed start. */
const STARTUP_OUTPUT_CHARS = 4096;

/** The last lines of what a runner said before it died, on one line (a stack's top is its cause). */
function lastLines(text: string): string {
  const lines = text
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  // Node prints `node: bad option: …` on one line; an uncaught error as its stack, message first.
  const message = lines.find((l) => /^(\S*node: |\w*Error\b)/.test(l)) ?? lines.at(-1) ?? "";
  return message.slice(0, 500);
}

/** SIGKILL to every process of the group `pgid` leads; false when there is none. */
function killGroup(pgid: number | undefined): boolean {
  if (!pgid) return false;
  try {
    process.kill(-pgid, "SIGKILL");
    return true;
  } catch {
    return false; // the group is empty
  }
}
