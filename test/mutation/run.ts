/**
 * `npm run mutate [-- flags]`: the mutation run of the write path (stryker.config.mjs). Stryker runs Jest
 * once per mutant (jest.mutate.config.js), on the store `--engine` names: the in-memory engine (the
 * default), in each Jest process, nothing to start (test/mutation/memory-engine.ts); or one DynamoDB
 * Local for the whole run — a DynamoDB Local per run would cost seconds each — handed to the tests
 * (`RETRYSAFE_TEST_ENDPOINT`, test/setup/global-setup.ts) and stopped at the end. Incremental: only the
 * mutants of code (or tests) changed since the committed test/mutation/stryker-incremental.json are run
 * again (`--force` runs them all).
 */
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandFlags, refuse } from '../../bin/cli-args';
import { startDynamoDBLocal } from '../../lib/local/dynamodb-local';
import { ENGINES, type EngineName } from '../explore/engine';
import { committedText, mergeReports, readReport } from './incremental';

const USAGE = `usage: npm run mutate [-- --engine memory|local] [-- --force] [-- --files GLOB[,GLOB…]]
                       [-- --incremental-file FILE]

Mutation testing of the write path (stryker.config.mjs): each mutant of call-state, the protocol's
transitions, the runtime, the attempt, intents, the completer, erase and the task view, run against
their unit and integration tests and a fixed sample of the explorer's schedules. Writes
reports/mutation/mutation.{json,html}; incremental (test/mutation/stryker-incremental.json).

  --engine            the store the tests run on (default: memory):
                        memory  the in-memory model of DynamoDB Local (test/explore/engine), one per
                                test file, in the Jest process: no sockets, no Java
                        local   one DynamoDB Local for the whole run, as npm test runs these tests
                      The same tests pass on both; DynamoDB Local stays the truth: CI's npm test runs
                      them on it (docs/mutation.md compares the two on a run).
  --force             mutate everything, not only what changed since the incremental file
  --files             only these of stryker.config.mjs's files (globs, comma-separated); their results
                      are merged into the incremental file, the other files' kept
  --incremental-file  read and write this incremental file instead of the committed one (a trial run)`;

const ROOT = join(__dirname, '..', '..');
const {
  engine,
  force,
  files,
  'incremental-file': incrementalFile,
} = commandFlags(USAGE, {
  engine: { type: 'string', default: 'memory' },
  force: { type: 'boolean', default: false },
  files: { type: 'string' },
  'incremental-file': { type: 'string' },
});
if (!(ENGINES as readonly string[]).includes(engine)) refuse(`--engine ${engine}: one of ${ENGINES.join(', ')}`, USAGE);

/** The store the run's tests use, until `stop`: the environment that points jest.mutate.config.js at it. */
async function startStore(name: EngineName): Promise<{ env: NodeJS.ProcessEnv; stop(): Promise<void> }> {
  if (name === 'memory') return { env: { RETRYSAFE_TEST_ENGINE: 'memory' }, stop: async () => undefined };
  const local = await startDynamoDBLocal({ accessKeyId: 'local' });
  return {
    env: { RETRYSAFE_TEST_ENGINE: 'local', RETRYSAFE_TEST_ENDPOINT: local.endpoint, AWS_ACCESS_KEY_ID: 'local' },
    stop: () => local.stop(),
  };
}

/** The committed incremental file: every file's latest results. */
const COMMITTED = join(ROOT, 'test', 'mutation', 'stryker-incremental.json');

async function main(): Promise<number> {
  // Stryker writes only the files a run mutated: a part's run goes to a copy, merged back after.
  const partial = files !== undefined && incrementalFile === undefined;
  const runFile = partial ? join(tmpdir(), `retrysafe-mutate-${process.pid}.json`) : incrementalFile;
  if (partial && existsSync(COMMITTED)) copyFileSync(COMMITTED, runFile!);
  const store = await startStore(engine as EngineName);
  try {
    const stryker = spawn(
      process.execPath,
      [
        join(ROOT, 'node_modules', '@stryker-mutator', 'core', 'bin', 'stryker.js'),
        'run',
        ...(force ? ['--force'] : []),
        ...(files ? ['--mutate', files] : []),
        ...(runFile ? ['--incrementalFile', runFile] : []),
      ],
      { cwd: ROOT, stdio: 'inherit', env: { ...process.env, ...store.env } },
    );
    const code = await new Promise<number>((resolve) => stryker.on('close', (exit) => resolve(exit ?? 1)));
    if (partial && code === 0 && existsSync(runFile!)) {
      const earlier = existsSync(COMMITTED) ? [readReport(COMMITTED)] : [];
      writeFileSync(COMMITTED, committedText(mergeReports([...earlier, readReport(runFile!)])));
    } else if (runFile === undefined && code === 0 && existsSync(COMMITTED)) {
      writeFileSync(COMMITTED, committedText(readReport(COMMITTED)));
    }
    return code;
  } finally {
    if (partial) rmSync(runFile!, { force: true });
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
