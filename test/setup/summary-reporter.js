/**
 * Prints the run's closing line in the plain form CI reads in any language: "jest: N passed, N failed".
 * It is written as the process exits, after Jest's own summary, to standard output (Jest writes its own
 * report to standard error). On Linux a write to a pipe or a file is synchronous, so it is not lost at exit.
 * In .ci/run, Jest no longer runs last: see the comment there on the landings judged to have run no test.
 */
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const line = `jest: ${results.numPassedTests} passed, ${results.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}\n`;
    process.once('exit', () => process.stdout.write(line));
  }
}

module.exports = SummaryReporter;
