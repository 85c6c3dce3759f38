// The exit codes these errors lead to are the contract in core/policy.ts (EXIT).

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
