// Runs one ffmpeg command (through fluent-ffmpeg) the way a job needs it: `-threads` as many as the
// process has CPUs (../cpus.ts), logged on the job's logger when ffmpeg starts ("ffmpeg started":
// the threads and the cgroup quota they come from), killed with SIGKILL when
// the job's signal aborts (and only settled once the process is gone), progress read from
// `-progress pipe:1` and turned into a fraction of the expected duration, ffmpeg's error lines kept
// for messages, and a failure sorted into bad input (PermanentError) or anything else (transient).
//
// A source the demuxer finds cut short ("File ended prematurely", "partial file": TRUNCATION) fails
// permanently as truncated (TruncatedError), whether ffmpeg exited 0 or not: ffmpeg stops at the
// cut without failing, and the job would otherwise deliver part of the media, or a frame from before
// the cut for a timestamp past it.
//
// How a failure (ffmpeg exited non-zero) is sorted:
// - killed by a signal from outside (the OOM killer, a node drain): transient, whatever it logged;
// - the demuxer found the file cut short: permanent (TruncatedError);
// - frames larger than ffmpeg (or `maxPixels`) allows: permanent, naming their size;
// - one of ffmpeg's words for bad input (INPUT_PROBLEMS): permanent;
// - the encoder refused its settings: permanent (EncoderSetupError);
// - anything else ("Error marking filters as finished", a full disk, a missing directory) is
//   ambiguous, so the input is decoded once more on its own, with the same input options and
//   streams, into nothing (`-f null`): when that fails too, or decodes not a single frame or
//   sample, the input is to blame (permanent); when it decodes, the failure was elsewhere
//   (transient FfmpegError), unless that check itself could not run (out of memory: transient).
import type { ChildProcess } from "node:child_process";
import ffmpeg from "fluent-ffmpeg";
import type { Logger } from "../../core/logger.js";
import { cpuLimit } from "../cpus.js";
import { PermanentError } from "../errors.js";
import { cleanLine, frameSizeError, frameSizeIn, INPUT_PROTOCOLS, type MediaKind } from "./probe.js";

export interface FfmpegSpec {
  input: string;
  /** Options placed before `-i` (e.g. `-ss` for input seeking). */
  inputOptions?: string[];
  output: string;
  /** Options placed before the output path: mapping, filters, codecs, `-f`. */
  outputOptions: string[];
  /** What the command decodes from the input, for the messages about it. */
  reads?: MediaKind;
}

export interface RunOptions {
  signal: AbortSignal;
  /** Seconds of media the command produces; progress is reported as a share of it. */
  duration?: number;
  /** Called with 0–1 as ffmpeg advances (never decreasing), and with 1 when ffmpeg ends. */
  onProgress?: (fraction: number) => void;
  /** Called with the ffmpeg process once it is spawned. */
  onSpawn?: (child: ChildProcess) => void;
  /**
   * limits.max_input_pixels: the decoders refuse larger frames (`-max_pixels`) before allocating
   * them, and the failure names the limit.
   */
  maxPixels?: number;
  /** Whether an unexplained failure decodes the input again to find out whose it is (default true). */
  checkInput?: boolean;
  /** The job's logger: ffmpeg's start is logged on it (info), with its threads and their source. */
  logger?: Logger;
}

export interface RunResult {
  /** ffmpeg's error lines (it runs at `-v error`), cleaned of `[name @ 0x…]` prefixes and the input path. */
  errors: string[];
  /** Seconds of output written, from ffmpeg's last progress report. */
  outTime?: number;
  /** Video frames written, from ffmpeg's last progress report. */
  frames?: number;
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

/** The demuxer found the source cut short: it holds less than its own structure says. */
export class TruncatedError extends PermanentError {
  override name = "TruncatedError";
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
  /Picture size \d+x\d+ (is invalid|exceeds)/i,
];

// The demuxers' words for a file that ends before its data does (Matroska/WebM, MP4/MOV).
const TRUNCATION = [/File ended prematurely/i, /: partial file$/i];

// A check of the input that failed for one of these says nothing about the input.
const RESOURCE_PROBLEMS = [
  /Cannot allocate memory/i,
  /No space left on device/i,
  /Resource temporarily unavailable/i,
  /Too many open files/i,
  /Input\/output error/i,
];

const ENCODER_SETUP = /Error while opening encoder|Error initializing output stream/i;

// Lines that say nothing by themselves.
const GENERIC = [/^Conversion failed!?$/i, /^Exiting normally/i];

export function isInputProblem(line: string): boolean {
  return INPUT_PROBLEMS.some((re) => re.test(line));
}

/** The demuxer's line saying the file ends before its data does, if ffmpeg logged one. */
export function truncationLine(errors: string[]): string | undefined {
  return errors.find((line) => TRUNCATION.some((re) => re.test(line)));
}

/**
 * Runs ffmpeg. Resolves when it exits 0; rejects with the signal's reason when aborted (after
 * the process has exited), with TruncatedError when the demuxer found the input cut short (exit 0
 * or not), with PermanentError when ffmpeg could not decode the input, and with FfmpegError
 * otherwise.
 */
export function runFfmpeg(spec: FfmpegSpec, options: RunOptions): Promise<RunResult> {
  const { signal, duration, onProgress, onSpawn, maxPixels, logger } = options;
  const cpus = cpuLimit();
  return new Promise<RunResult>((resolve, reject) => {
    if (signal.aborted) return reject(abortReason(signal));

    const command = ffmpeg(spec.input)
      // Global options: no banner, no keyboard, errors only on stderr, progress as key=value lines
      // on stdout ten times a second.
      .inputOptions(["-hide_banner", "-nostdin", "-v", "error", "-nostats", "-progress", "pipe:1"])
      .inputOptions(["-stats_period", "0.1", ...INPUT_PROTOCOLS])
      .inputOptions(maxPixels !== undefined ? ["-max_pixels", String(maxPixels)] : [])
      // Decoders and encoders as many threads as the process has CPUs (its cgroup's quota), not
      // one per core of the machine; a spec's own -threads, after these, wins.
      .inputOptions(["-threads", String(cpus.cpus)])
      .inputOptions(spec.inputOptions ?? [])
      .output(spec.output)
      .outputOptions(["-threads", String(cpus.cpus), ...spec.outputOptions]);

    let child: ChildProcess | undefined;
    let aborted = false;
    let outTime: number | undefined;
    let frames: number | undefined;
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
      logger?.info(
        { pid: child.pid, threads: cpus.cpus, cpu_quota: cpus.quota ?? null, cores: cpus.cores },
        "ffmpeg started",
      );
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
          } else if (key === "frame" && value && /^\d+$/.test(value)) {
            frames = Number(value);
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
      const cut = truncationLine(errors);
      if (cut) return reject(truncated(spec, options, cut, outTime));
      report(1);
      resolve({
        errors,
        ...(outTime !== undefined ? { outTime } : {}),
        ...(frames !== undefined ? { frames } : {}),
      });
    });

    command.on("error", (err: Error, _stdout: string | null, stderr: string | null) => {
      signal.removeEventListener("abort", onAbort);
      // fluent-ffmpeg reports an error once the process has exited and its pipes are closed.
      if (aborted) return reject(abortReason(signal));
      failure(spec, options, err, errorLines(stderr, spec.input), outTime).then(reject, reject);
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

async function failure(
  spec: FfmpegSpec,
  options: RunOptions,
  err: Error,
  errors: string[],
  outTime?: number,
): Promise<Error> {
  const line = tellingLine(errors);
  // "ffmpeg exited with code 1: …" (fluent-ffmpeg appends stderr) or "ffmpeg was killed with signal X".
  const head = err.message.split(/:|\n/)[0]!.trim();
  const transient = new FfmpegError(
    line ? `ffmpeg failed: ${line} (${head})` : `ffmpeg failed: ${head}`,
    errors,
  );
  // Killed from outside (the OOM killer, a node drain): whatever it logged before, try again.
  if (/^ffmpeg was killed with signal/.test(err.message)) return transient;
  const cut = truncationLine(errors);
  if (cut) return truncated(spec, options, cut, outTime);
  const inputFault = inputProblem(spec, options, errors);
  if (inputFault) return inputFault;
  const setup = errors.findIndex((l) => ENCODER_SETUP.test(l));
  if (setup >= 0) {
    // The encoder's own complaint comes before ffmpeg's generic "Error while opening encoder".
    const own = errors
      .slice(0, setup)
      .reverse()
      .find((l) => !GENERIC.some((re) => re.test(l)));
    return new EncoderSetupError(own ?? errors[setup]!, errors);
  }
  if (options.checkInput === false || options.signal.aborted) return transient;
  return (await checkInput(spec, options)) ?? transient;
}

/**
 * "source audio is truncated: it declares 5.02 s but holds 2.36 s (File ended prematurely)": the
 * seconds when the command was given the length it should produce, and produced less.
 */
function truncated(spec: FfmpegSpec, options: RunOptions, line: string, outTime?: number): TruncatedError {
  const { duration } = options;
  const held =
    duration !== undefined && outTime !== undefined && outTime < duration
      ? `it declares ${duration.toFixed(2)} s but holds ${outTime.toFixed(2)} s (${line})`
      : line;
  return new TruncatedError(`${subject(spec)} is truncated: ${held}`);
}

/** PermanentError when ffmpeg's lines say the input is bad. */
function inputProblem(spec: FfmpegSpec, options: RunOptions, errors: string[]): PermanentError | undefined {
  const size = frameSizeIn(errors);
  if (size) return frameSizeError(size.width, size.height, options.maxPixels);
  if (!errors.some(isInputProblem)) return undefined;
  return new PermanentError(`${subject(spec)} is corrupt: ${tellingLine(errors)}`);
}

/**
 * Decodes the command's input on its own (same input options, same streams, same frame or time
 * limits) into nothing. The PermanentError that blames the input, or undefined when the input
 * decodes or the check cannot tell.
 */
async function checkInput(spec: FfmpegSpec, options: RunOptions): Promise<PermanentError | undefined> {
  const kept: string[] = [];
  const out = spec.outputOptions;
  for (let i = 0; i < out.length; i++) {
    const option = out[i]!;
    if (option === "-filter_complex" && i + 1 < out.length) {
      // The graph's outputs are its own labels, not the input's: the streams it reads are decoded.
      for (const pad of out[++i]!.matchAll(/\[(\d+:[^\]]+)\]/g)) kept.push("-map", pad[1]!);
    } else if (/^-(map|t|to|frames(:[avsd])?|vframes|aframes)$/.test(option) && i + 1 < out.length) {
      const value = out[++i]!;
      if (option !== "-map" || !value.startsWith("[")) kept.push(option, value);
    } else if (/^-(an|vn|sn|dn)$/.test(option)) {
      kept.push(option);
    }
  }
  const check: FfmpegSpec = {
    input: spec.input,
    ...(spec.inputOptions ? { inputOptions: spec.inputOptions } : {}),
    output: "-",
    outputOptions: [...kept, "-f", "null"],
    ...(spec.reads ? { reads: spec.reads } : {}),
  };
  const { signal, maxPixels } = options;
  try {
    const result = await runFfmpeg(check, {
      signal,
      checkInput: false,
      ...(maxPixels !== undefined ? { maxPixels } : {}),
    });
    const decoded = (result.frames ?? 0) > 0 || (result.outTime ?? 0) > 0;
    return decoded ? undefined : nothingDecodes(spec, result.errors);
  } catch (err) {
    if (err instanceof PermanentError) return err;
    if (!(err instanceof FfmpegError) || /killed with signal/.test(err.message)) return undefined;
    if (err.errors.some((l) => RESOURCE_PROBLEMS.some((re) => re.test(l)))) return undefined;
    return nothingDecodes(spec, err.errors);
  }
}

function nothingDecodes(spec: FfmpegSpec, errors: string[]): PermanentError {
  // ffmpeg's words when no frame reached the filters: they say no more than "nothing decoded".
  const said = errors.filter(
    (l) => !NOTHING_DECODED.some((re) => re.test(l)) && !GENERIC.some((re) => re.test(l)),
  );
  const why = said.length > 0 ? ` (${said.at(-1)})` : "";
  const what =
    spec.reads === "audio"
      ? "source holds no audio samples that decode"
      : spec.reads === "video"
        ? "source video is corrupt: none of its frames decode"
        : "source is corrupt: nothing in it decodes";
  return new PermanentError(`${what}${why}`);
}

const NOTHING_DECODED = [
  /Error marking filters as finished/i,
  /Cannot determine format of input stream .* after EOF/i,
  /Output file is empty/i,
  /Error (while )?filtering/i,
];

function subject(spec: FfmpegSpec): string {
  return spec.reads ? `source ${spec.reads}` : "source";
}

function errorLines(stderr: string | null, input: string): string[] {
  if (!stderr) return [];
  const lines = stderr
    .split(/\r\n|\r|\n/)
    .map((line) => cleanLine(line, input))
    .filter(
      (line) => line.length > 0 && !/^(frame|size)=/.test(line) && !/^Last message repeated/.test(line),
    );
  // Keep the tail: ffmpeg can repeat one complaint thousands of times.
  return lines.slice(-20);
}

function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error("aborted");
}
