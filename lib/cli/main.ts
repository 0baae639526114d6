/**
 * `retrysafe`: the package's command. `dev` serves an app's own tools on this machine; `token` mints a
 * token the dev server accepts; `calls`, `complete` and `erase` operate an app's store — dev's DynamoDB
 * Local, or AWS. Every problem a user can fix is one message and exit code 2, never a stack.
 */
import { CALL_IN_FLIGHT_STATES } from '../admin/calls-in-flight';
import { DevError } from '../dev/dev-error';
import { UsageError } from './args';
import { devCommand } from './dev-command';
import { initCommand } from './init-command';
import { callsCommand, completeCommand, eraseCommand, tokenCommand } from './operations';
import { typesCommand } from './types-command';

const USAGE = `usage: retrysafe <command> [flags]   (retrysafe <command> --help for its flags)

  init       write an app skeleton: one tool, its test, the config, the Lambda entries, a CDK app
  dev        serve the app's tools locally: REST + MCP, DynamoDB Local, the completer
  token      mint a token the dev server accepts (--tenant T --user U)
  calls      list a tenant's calls in flight (${CALL_IN_FLIGHT_STATES.join(', ')})
  complete   run one completer pass: finish the calls whose worker died
  erase      erase a tenant across the idempotency table and the app's own tables
  types      write the tools' argument and receipt types for an agent app's typed client

The app is described by retrysafe.config.ts in the current directory (the package's README.md, "Your own tools").`;

const COMMANDS: Record<string, (argv: readonly string[], cwd: string, env: NodeJS.ProcessEnv) => Promise<number>> = {
  init: initCommand,
  dev: devCommand,
  token: tokenCommand,
  calls: callsCommand,
  complete: completeCommand,
  erase: eraseCommand,
  types: typesCommand,
};

export async function main(argv: readonly string[], cwd = process.cwd(), env = process.env): Promise<number> {
  const [name, ...rest] = argv;
  // The SDK's notice that its releases after January 2027 need Node 22: noise on every command here.
  env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ||= 'true';
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(USAGE);
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    console.error(`retrysafe: no command "${name}"\n\n${USAGE}`);
    return 2;
  }
  try {
    return await command(rest, cwd, env);
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`retrysafe ${name}: ${error.message}\n\n${error.usage}`);
      return 2;
    }
    if (error instanceof DevError) {
      console.error(`retrysafe ${name}: ${error.message}`);
      return 2;
    }
    console.error(`retrysafe ${name}: ${error instanceof Error ? error.message : String(error)}`);
    if (env.RETRYSAFE_DEBUG) console.error(error);
    else console.error('(RETRYSAFE_DEBUG=1 prints the stack)');
    return 1;
  }
}

/** Runs the command line of this process and exits with its code (the package's `bin`). */
export function runCli(): void {
  // A reader of our output that went away (a closed pipe) must not turn every log line into a crash.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
      // The dev server has closed its sockets by then; a handle something else left open is not waited for.
      setTimeout(() => process.exit(code), 100).unref();
    },
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}
