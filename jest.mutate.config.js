// The mutation run's Jest (`npm run mutate`, stryker.config.mjs): the tests of the write path — its unit
// and integration tests, the MCP tasks' view — and the explorer on a fixed sample
// of schedules (test/explore/sampled.mutate.ts), which fails on a violation so a mutant it notices is killed.
// TypeScript is only transpiled here (Stryker marks mutated files @ts-nocheck anyway): a mutant is killed by
// a test, never by a type error.
//
// The store (`RETRYSAFE_TEST_ENGINE`, set by `npm run mutate -- --engine`): `memory` (the default), the
// in-memory model of DynamoDB Local in process, one per test file (test/mutation/memory-engine.ts); or
// `local`, DynamoDB Local as `npm test` runs these tests (the global setup's, or the one at
// `RETRYSAFE_TEST_ENDPOINT`). The same tests on both.
const base = require('./jest.config.js');

const WRITE_PATH_TESTS = [
  'test/unit/{answers,ask-again,attribute-options,call-state,claim-commands,erase-commands,erase-next-change,derivation,fingerprint,task,errors,backoff,backoff-review30,backoff-review31,backoff-review32,receipt,arguments,recheck-queue}.test.ts',
  'test/integration/{attach,attempt,calls-in-flight,claim,task-view,completer,completer-decisions,concurrency,commit,crash,dedupe-window,erase,erase-deferral,erase-example,erase-tenant,failures,hand-off,powertools,in-flight,intent,intent-holding,intent-runners,intent-review13,intent-review14,intent-review15,intent-review16,intent-review17,intent-review18,intent-review19,intent-review20,intent-review21,intent-review22,intent-past-window,liveness,liveness-review24,liveness-review25,liveness-review26,liveness-review27,liveness-review28,liveness-review29,liveness-review30,liveness-review31,liveness-review32,liveness-review33,liveness-review34,liveness-review35,review36,review37,no-effect-attempts,protocol,record,recovery,refund,runtime,scope,settle,shared-runtime,table,ttl,unrun-attempts,validation}.test.ts',
  'test/http/{mcp-tasks,answer-waits}.test.ts',
  'test/integration/clock-skew.test.ts',
  'test/explore/{regressions,blind-spots,leases}.test.ts',
  'test/explore/sampled.mutate.ts',
];

const { globalSetup, globalTeardown, ...withoutDynamoDBLocal } = base;
const ENGINES = {
  local: base,
  // No DynamoDB Local to start: each test file's engine is set up with the file.
  // A test here takes well under a second (the slowest file, the explorer's sample, ~10 s for 16 tests):
  // a mutant that makes one wait for a lock or a poll that never comes is failed after 5 s, not npm
  // test's 30 s (most of a run's time went to such waits).
  memory: {
    ...withoutDynamoDBLocal,
    setupFilesAfterEnv: [...(base.setupFilesAfterEnv ?? []), '<rootDir>/test/mutation/memory-engine.ts'],
    testTimeout: 5_000,
  },
};
const engine = process.env.RETRYSAFE_TEST_ENGINE || 'memory';
if (!Object.hasOwn(ENGINES, engine)) {
  throw new Error(`RETRYSAFE_TEST_ENGINE=${engine}: one of ${Object.keys(ENGINES).join(', ')}`);
}

/** @type {import('jest').Config} */
module.exports = {
  ...ENGINES[engine],
  testMatch: WRITE_PATH_TESTS.map((glob) => `<rootDir>/${glob}`),
  transform: {
    ...base.transform,
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', isolatedModules: true }],
  },
  reporters: ['default'],
  // A mutant's run stops at its first failing test (Stryker cannot ask Jest to bail). A path, not
  // `<rootDir>/…`: Stryker wraps the environment and requires it by the name as configured.
  testEnvironment: require('node:path').join(__dirname, 'test/mutation/bail-environment.js'),
  testSequencer: '<rootDir>/test/mutation/sequencer.js',
  // One Jest process per Stryker runner: the two cores (and DynamoDB Local) are shared already.
  maxWorkers: 1,
};
