// Mutation testing of the write path (`npm run mutate`; issue 24): every transition of
// docs/state-machine.md and the code that decides which one runs. The report is written to
// docs/mutation.md by hand from reports/mutation/mutation.json; the incremental file is committed, so a
// rerun on a fresh clone mutates only what changed since (test/mutation/stryker-incremental.json).
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'npm',
  testRunner: 'jest',
  jest: { configFile: 'jest.mutate.config.js', enableFindRelatedTests: false },
  mutate: [
    'lib/idempotency/call-state.ts',
    'lib/idempotency/protocol/**/*.ts',
    'lib/idempotency/runtime.ts',
    'lib/idempotency/operation.ts',
    'lib/idempotency/attempt.ts',
    'lib/idempotency/answers.ts',
    'lib/idempotency/completer.ts',
    'lib/idempotency/task.ts',
    'lib/idempotency/backoff.ts',
    'lib/idempotency/attach.ts',
    'lib/admin/erase-*.ts',
  ],
  coverageAnalysis: 'perTest',
  incremental: true,
  incrementalFile: 'test/mutation/stryker-incremental.json',
  reporters: ['clear-text', 'progress', 'json', 'html'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  concurrency: 2,
  timeoutMS: 5_000,
  timeoutFactor: 1.5,
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
  ignoreStatic: true,
  thresholds: { high: 90, low: 80, break: null },
};
