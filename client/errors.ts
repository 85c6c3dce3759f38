/**
 * What a client command ends with when it cannot do what it was asked: a one-line message for
 * stderr and the exit code (docs/cli.md lists them). Anything else thrown is a bug, reported the
 * same way but with exit code 1.
 */
export class CliError extends Error {
  override name = "CliError";
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failure,
  ) {
    super(message);
  }
}

/** A mistake in the command line found before anything was sent: exit code 2. */
export class UsageError extends CliError {
  override name = "UsageError";
  constructor(message: string) {
    super(message, EXIT.usage);
  }
}

export const EXIT = {
  ok: 0,
  /** A job or a request failed (the API's 4xx and 5xx included), or the API could not be reached. */
  failure: 1,
  /** The command line is wrong: caught locally, nothing was sent. */
  usage: 2,
  /** The followed job was cancelled (its status is failed, its state cancelled): not a failure to retry. */
  cancelled: 3,
  /** Ctrl-C while waiting for a job: the job goes on. */
  interrupted: 130,
} as const;
