/**
 * `npm run mutate [-- stryker flags]`: the mutation run of the write path (stryker.config.mjs). It starts one
 * DynamoDB Local for the whole run — Stryker runs Jest once per mutant, and a DynamoDB Local per run would
 * cost seconds each — hands it to the tests (`RETRYSAFE_TEST_ENDPOINT`, test/setup/global-setup.ts), runs
 * Stryker, and stops it. Incremental: only the mutants of code (or tests) changed since the committed
 * test/mutation/stryker-incremental.json are run again (`-- --force` runs them all).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { commandFlags } from '../../bin/cli-args';
import { startDynamoDBLocal } from '../../lib/local/dynamodb-local';

const USAGE = `usage: npm run mutate [-- --force] [-- --files GLOB[,GLOB…]]

Mutation testing of the write path (stryker.config.mjs): each mutant of call-state, the protocol's
transitions, the runtime, the attempt, intents, the completer, erase and the task view, run against
their unit and integration tests and a fixed sample of the explorer's schedules. Writes
reports/mutation/mutation.{json,html}; incremental (test/mutation/stryker-incremental.json).

  --force     mutate everything, not only what changed since the incremental file
  --files     only these of stryker.config.mjs's files (globs, comma-separated)`;

const ROOT = join(__dirname, '..', '..');
const { force, files } = commandFlags(USAGE, {
  force: { type: 'boolean', default: false },
  files: { type: 'string' },
});

async function main(): Promise<number> {
  const store = await startDynamoDBLocal({ accessKeyId: 'local' });
  try {
    const stryker = spawn(
      process.execPath,
      [
        join(ROOT, 'node_modules', '@stryker-mutator', 'core', 'bin', 'stryker.js'),
        'run',
        ...(force ? ['--force'] : []),
        ...(files ? ['--mutate', files] : []),
      ],
      {
        cwd: ROOT,
        stdio: 'inherit',
        env: { ...process.env, RETRYSAFE_TEST_ENDPOINT: store.endpoint, AWS_ACCESS_KEY_ID: 'local' },
      },
    );
    return await new Promise<number>((resolve) => stryker.on('close', (code) => resolve(code ?? 1)));
  } finally {
    await store.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
