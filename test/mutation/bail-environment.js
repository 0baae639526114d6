// The mutation run's test environment (jest.mutate.config.js): a mutant's run stops at its first failing
// test. Stryker counts a mutant killed by any failing test, but cannot ask Jest to bail (its Jest runner
// sets `bail: false`: Jest has no programmatic bail, jestjs/jest#11766), so every other covering test used
// to run after the kill — all of them, and each to its own 5 s timeout, when the mutant makes calls wait.
// Here, once a test or hook failed in a mutant's run (Stryker's `__STRYKER_ACTIVE_MUTANT__`, set for the
// whole run in this process), every test after it is skipped, in that file and the files after it.
// The dry run (no mutant active) runs everything: it is what records which tests cover which mutant.
// Stryker wraps this environment with its own (coverage per test), which calls this handler first.
const { TestEnvironment } = require('jest-environment-node');

/** The mutant whose run had a failure, in this Jest process (module state outlives one test file). */
let failedMutant;

class BailOnFirstFailure extends TestEnvironment {
  async handleTestEvent(event) {
    const mutant = process.env.__STRYKER_ACTIVE_MUTANT__;
    if (mutant === undefined) return;
    if (event.name === 'test_fn_failure' || event.name === 'hook_failure') failedMutant = mutant;
    else if (event.name === 'test_start' && failedMutant === mutant) event.test.mode = 'skip';
  }
}

module.exports = BailOnFirstFailure;
