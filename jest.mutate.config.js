// The mutation run's Jest (`npm run mutate`, stryker.config.mjs): the tests of the write path — its unit
// and integration tests, the reviews' regressions, the MCP tasks' view — and the explorer on a fixed sample
// of schedules (test/explore/sampled.mutate.ts), which fails on a violation so a mutant it notices is killed.
// TypeScript is only transpiled here (Stryker marks mutated files @ts-nocheck anyway): a mutant is killed by
// a test, never by a type error.
const base = require('./jest.config.js');

const WRITE_PATH_TESTS = [
  'test/unit/{claim-commands,derivation,fingerprint,transient-errors,recheck-queue}.test.ts',
  'test/integration/{completer,concurrency,crash,create-once,dedupe-window,erase,failures,protocol,recovery,refund,scope,shared-runtime,ttl,validation}.test.ts',
  'test/review/{erase-intent-later-claim,erase-refund-in-flight,erase-ticket-comes-back,intent-takeover-release,intent-ttl-pending,little-time-internal,protocol-review-3,store-duplicate-after-erase}.test.ts',
  'test/review/review-{task-binding,task-holds,task-out-of-time,task-spec,task-stored-conflict,upgrade-records}.test.ts',
  'test/http/mcp-tasks.test.ts',
  'test/explore/regressions.test.ts',
  'test/explore/sampled.mutate.ts',
];

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  testMatch: WRITE_PATH_TESTS.map((glob) => `<rootDir>/${glob}`),
  transform: {
    ...base.transform,
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', isolatedModules: true }],
  },
  reporters: ['default'],
  testSequencer: '<rootDir>/test/mutation/sequencer.js',
  // One Jest process per Stryker runner: DynamoDB Local and the two cores are shared already.
  maxWorkers: 1,
};
