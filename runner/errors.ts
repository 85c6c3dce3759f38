// The exit codes these errors lead to are the contract in core/policy.ts (EXIT).

/** A failure that the same input will always meet again: the job fails at once. */
export class PermanentError extends Error {
  override name = "PermanentError";
}

/**
 * A job that fails with what it did before it failed (a pipeline's completed steps, keep_partial):
 * recorded with the failure as its result.
 */
export class FailedWithResultError extends PermanentError {
  override name = "FailedWithResultError";
  constructor(
    message: string,
    readonly result: Record<string, unknown>,
  ) {
    super(message);
  }
}

/**
 * A transient failure with what the attempt did before it (a keep_partial pipeline's completed
 * steps): kept for the attempts after it, and the job's result if its retries run out.
 */
export class TransientWithResultError extends Error {
  override name = "TransientWithResultError";
  constructor(
    message: string,
    readonly result: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** The job ran out of its time: it fails without a retry, as a Kubernetes deadline does. */
export class TimeoutError extends PermanentError {
  override name = "TimeoutError";
}

/**
 * A process the runner started (ffprobe, ffmpeg) was killed by a signal: the kernel's OOM killer, a
 * node drain, an operator. Nothing says the input is at fault, whatever the process logged before:
 * transient, so the job runs again.
 */
export class KilledError extends Error {
  override name = "KilledError";
  constructor(
    readonly program: string,
    readonly signal: string,
  ) {
    super(`${program} was killed by signal ${signal} (out of memory, or stopped from outside)`);
  }
}

/**
 * The KilledError of a failure that says its process was killed by a signal: fluent-ffmpeg's
 * "ffprobe was killed with signal SIGKILL", or a child_process error with its `signal`.
 */
export function killedBy(program: string, err: unknown): KilledError | undefined {
  const signal = (err as { signal?: unknown } | null)?.signal;
  if (typeof signal === "string" && signal) return new KilledError(program, signal);
  const message = err instanceof Error ? err.message : String(err);
  const m = /^\S+ was killed with signal (\S+)/.exec(message);
  return m ? new KilledError(program, m[1]!) : undefined;
}

export function isPermanent(err: unknown): err is PermanentError {
  return err instanceof PermanentError;
}

/** The first line of an error's message, for a job's `error` field. */
export function describeError(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.split("\n")[0]!.trim() || (err instanceof Error ? err.name : "unknown error");
}
