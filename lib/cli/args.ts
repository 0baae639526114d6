import { type ParseArgsConfig, parseArgs } from 'node:util';
import { DevError } from '../dev/dev-error';

/** A command line that is not one: the command prints the message and its usage, and exits 2. */
export class UsageError extends DevError {
  constructor(
    message: string,
    readonly usage: string,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * The flags of one command, by `node:util`'s parseArgs (strict: an unknown flag or a missing value is a
 * `UsageError` naming it, never a stack). `--help` is every command's own.
 */
export function flagsOf<O extends Options>(argv: readonly string[], options: O, usage: string) {
  try {
    const { values } = parseArgs<{ options: O; allowPositionals: false; strict: true; args: string[] }>({
      args: [...argv],
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: false,
      strict: true,
    });
    return { values, help: (values as { help?: boolean }).help === true };
  } catch (error) {
    const message = (error as Error).message.replace(/\. To specify a positional argument.*$/s, '');
    throw new UsageError(message, usage);
  }
}

/** A whole number flag, or a `UsageError` naming it. */
export function portFlag(value: string | undefined, usage: string): number | undefined {
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new UsageError(`--port: "${value}" is not a port (0 to 65535; 0 picks a free one)`, usage);
  }
  return port;
}
