// The flags of this repository's own commands (npm run explore, chaos, bench, bench:profile, demo, openapi,
// check:package), parsed as the package's `retrysafe` command parses its own (lib/cli/args.ts): `--help`
// prints the usage and exits 0; an unknown flag or a missing value prints one line naming it and the
// usage, and exits 2 — never a stack.
import type { ParseArgsConfig } from 'node:util';
import { flagsOf, UsageError } from '../lib/cli/args';

type Options = NonNullable<ParseArgsConfig['options']>;

/** `argv`'s flags by `options`, or the process ends (0 for --help, 2 for a bad flag). */
export function commandFlags<O extends Options>(
  usage: string,
  options: O,
  argv: readonly string[] = process.argv.slice(2),
) {
  try {
    const { values, help } = flagsOf(argv, options, usage);
    if (help) {
      console.log(usage);
      process.exit(0);
    }
    return values;
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    return refuse(error.message, usage);
  }
}

/** A command line the command cannot run: `message` on one line, then the usage; exit 2. */
export function refuse(message: string, usage: string): never {
  console.error(`${message}\n\n${usage}`);
  process.exit(2);
}
