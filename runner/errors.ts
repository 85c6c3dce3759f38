/**
 * The runner's exit codes, a contract with the controller: 0 the job is done,
 * 2 a permanent input error (bad media, missing source, invalid parameters: never retried),
 * anything else transient (retried per policy).
 */
export const EXIT_DONE = 0;
export const EXIT_PERMANENT = 2;
export const EXIT_TRANSIENT = 1;

/** A failure that the same input will always meet again: the job fails at once. */
export class PermanentError extends Error {
  override name = "PermanentError";
}

/** The job ran out of its time: it fails without a retry, as a Kubernetes deadline does. */
export class TimeoutError extends PermanentError {
  override name = "TimeoutError";
}

export function isPermanent(err: unknown): err is PermanentError {
  return err instanceof PermanentError;
}

/** The first line of an error's message, for a job's `error` field. */
export function describeError(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.split("\n")[0]!.trim() || (err instanceof Error ? err.name : "unknown error");
}
