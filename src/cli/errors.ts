/**
 * The CLI's two kinds of failure, each reported as one `error: <message>`
 * line without a stack: a command that could not do its work (exit 1), and a
 * value it was given that cannot be used (exit 2, before anything is done).
 */

/** A failure to report as `error: <message>`; never a stack trace. */
export class CliError extends Error {
  override readonly name: string = 'CliError';
  /** The process's exit code when this ends the command. */
  readonly exitCode: number = 1;
}

/** Exit code of a usage error: a flag, argument or environment value that cannot be used. */
export const USAGE_EXIT_CODE = 2;

/** A value of `flag` that cannot be used; `problem` says why, quoting the value. */
export class UsageError extends CliError {
  override readonly name = 'UsageError';
  override readonly exitCode = USAGE_EXIT_CODE;

  constructor(
    readonly flag: string,
    problem: string,
  ) {
    super(`${flag}: ${problem}`);
  }
}
