/** An error the user can act on: printed as one line, exit code 1. */
export class CliError extends Error {
  override name = 'CliError';
}
