// Runs one ffmpeg command (through fluent-ffmpeg) the way a job needs it: killed with SIGKILL when
// the job's signal aborts (and only settled once the process is gone), progress read from
// `-progress pipe:1` and turned into a fraction of the expected duration, ffmpeg's error lines kept
// for messages, and a failure sorted into bad input (PermanentError) or anything else (transient).
import type { ChildProcess } from "node:child_process";
import ffmpeg from "fluent-ffmpeg";
import { PermanentError } from "../errors.js";
import { cleanLine, INPUT_PROTOCOLS } from "./probe.js";

export interface FfmpegSpec {
  input: string;
  /** Options placed before `-i` (e.g. `-ss` for input seeking). */
  inputOptions?: string[];
  output: string;
  /** Options placed before the output path: mapping, filters, codecs, `-f`. */
  outputOptions: string[];
}

export interface RunOptions {
  signal: AbortSignal;
  /** Seconds of media the command produces; progress is reported as a share of it. */
  duration?: number;
  /** Called with 0–1 as ffmpeg advances (never decreasing), and with 1 when ffmpeg ends. */
  onProgress?: (fraction: number) => void;
  /** Called with the ffmpeg process once it is spawned. */
  onSpawn?: (child: ChildProcess) => void;
}

export interface RunResult {
  /** ffmpeg's error lines (it runs at `-v error`), cleaned of `[name @ 0x…]` prefixes and the input path. */
  errors: string[];
  /** Seconds of output written, from ffmpeg's last progress report. */
  outTime?: number;
}

/**
 * The encoder refused its settings (e.g. a bitrate the encoder cannot do at this sample rate and
 * channel count). The same job fails the same way every time: permanent.
 */
export class EncoderSetupError extends PermanentError {
  override name = "EncoderSetupError";
  constructor(
    readonly reason: string,
    readonly errors: string[],
  ) {
    super(`ffmpeg could not set up the encoder: ${reason}`);
  }
}

/** ffmpeg failed for a reason other than its input: transient (it may work on another try). */
export class FfmpegError extends Error {
  override name = "FfmpegError";
  constructor(
    message: string,
    readonly errors: string[],
  ) {
    super(message);
  }
}

// ffmpeg's words for input it cannot read or decode. A failure with one of these is the input's
// fault and will fail again; anything else (out of memory, disk full, killed) may not.
const INPUT_PROBLEMS = [
  /Invalid data found when processing input/i,
  /moov atom not found/i,
  /partial file/i,
  /corrupt/i,
  /Error while decoding/i,
  /could not find codec parameters/i,
  /Decoder \(.*\) not found/i,
  /does not contain any stream/i,
  /Invalid NAL unit/i,
  /error reading header/i,
  /End of file/i,
  /Invalid frame dimensions/i,
  /no frame!/i,
  /missing picture/i,
  /Header missing/i,
  /Failed to (read|open) .*(frame|header|input)/i,
];

const ENCODER_SETUP = /Error while opening encoder|Error initializing output stream/i;

// Lines that say nothing by themselves.
const GENERIC = [/^Conversion failed!?$/i, /^Exiting normally/i];

export function isInputProblem(line: string): boolean {
  return INPUT_PROBLEMS.some((re) => re.test(line));
}

/**
 * Runs ffmpeg. Resolves when it exits 0; rejects with the signal's reason when aborted (after
 * the process has exited), with PermanentError when ffmpeg could not decode the input, and with
 * FfmpegError otherwise.
 */
export function runFfmpeg(spec: FfmpegSpec, options: RunOptions): Promise<RunResult> {
  const { signal, duration, onProgress, onSpawn } = options;
  return new Promise<RunResult>((resolve, reject) => {
    if (signal.aborted) return reject(abortReason(signal));

    const command = ffmpeg(spec.input)
      // Global options: no banner, no keyboard, errors only on stderr, progress as key=value lines
      // on stdout ten times a second.
      .inputOptions(["-hide_banner", "-nostdin", "-v", "error", "-nostats", "-progress", "pipe:1"])
      .inputOptions(["-stats_period", "0.1", ...INPUT_PROTOCOLS])
      .inputOptions(spec.inputOptions ?? [])
      .output(spec.output)
      .outputOptions(spec.outputOptions);

    let child: ChildProcess | undefined;
    let aborted = false;
    let outTime: number | undefined;
    let reported = 0;

    const kill = () => {
      if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    };
    const onAbort = () => {
      aborted = true;
      // Before the spawn there is nothing to kill: the 'start' handler kills it at once.
      kill();
    };
    signal.addEventListener("abort", onAbort, { once: true });

    const report = (fraction: number) => {
      if (!onProgress) return;
      const clamped = Math.min(1, Math.max(0, fraction));
      if (clamped <= reported && !(clamped === 1 && reported < 1)) return;
      reported = clamped;
      onProgress(clamped);
    };

    command.on("start", () => {
      child = (command as unknown as { ffmpegProc?: ChildProcess }).ffmpegProc;
      if (!child) return;
      if (aborted) return kill();
      onSpawn?.(child);
      let pending = "";
      child.stdout?.on("data", (chunk: Buffer | string) => {
        pending += chunk.toString();
        const lines = pending.split("\n");
        pending = lines.pop() ?? "";
        for (const line of lines) {
          const [key, value] = line.trim().split("=", 2);
          if (key === "out_time_us" && value && /^-?\d+$/.test(value)) {
            const seconds = Math.max(0, Number(value) / 1e6);
            outTime = seconds;
            if (duration && duration > 0) report(seconds / duration);
          } else if (key === "progress" && value === "end") {
            report(1);
          }
        }
      });
    });

    command.on("end", (_stdout: string | null, stderr: string | null) => {
      signal.removeEventListener("abort", onAbort);
      const errors = errorLines(stderr, spec.input);
      if (aborted) return reject(abortReason(signal));
      report(1);
      resolve({ errors, ...(outTime !== undefined ? { outTime } : {}) });
    });

    command.on("error", (err: Error, _stdout: string | null, stderr: string | null) => {
      signal.removeEventListener("abort", onAbort);
      // fluent-ffmpeg reports an error once the process has exited and its pipes are closed.
      if (aborted) return reject(abortReason(signal));
      reject(failure(err, errorLines(stderr, spec.input)));
    });

    command.run();
  });
}

/** The most telling line: the first input problem, else the last line that says something. */
export function tellingLine(errors: string[]): string | undefined {
  return (
    errors.find(isInputProblem) ?? [...errors].reverse().find((line) => !GENERIC.some((re) => re.test(line)))
  );
}

function failure(err: Error, errors: string[]): Error {
  const line = tellingLine(errors);
  // Killed from outside (the OOM killer, a node drain): whatever it logged before, try again.
  const killed = /^ffmpeg was killed with signal/.test(err.message);
  if (!killed && errors.some(isInputProblem)) {
    return new PermanentError(`ffmpeg could not decode the source: ${line}`);
  }
  const setup = errors.findIndex((l) => ENCODER_SETUP.test(l));
  if (!killed && setup >= 0) {
    // The encoder's own complaint comes before ffmpeg's generic "Error while opening encoder".
    const own = errors
      .slice(0, setup)
      .reverse()
      .find((l) => !GENERIC.some((re) => re.test(l)));
    return new EncoderSetupError(own ?? errors[setup]!, errors);
  }
  // "ffmpeg exited with code 1: …" (fluent-ffmpeg appends stderr) or "ffmpeg was killed with signal X".
  const head = err.message.split(/:|\n/)[0]!.trim();
  return new FfmpegError(line ? `ffmpeg failed: ${line} (${head})` : `ffmpeg failed: ${head}`, errors);
}

function errorLines(stderr: string | null, input: string): string[] {
  if (!stderr) return [];
  const lines = stderr
    .split(/\r\n|\r|\n/)
    .map((line) => cleanLine(line, input))
    .filter((line) => line.length > 0 && !/^(frame|size)=/.test(line));
  // Keep the tail: ffmpeg can repeat one complaint thousands of times.
  return lines.slice(-20);
}

function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error("aborted");
}
