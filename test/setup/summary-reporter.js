/**
 * Prints the run's closing line in the plain form CI reads in any language: "jest: N passed, N failed".
 * It is written as the process exits, after Jest's own summary, so it is the last line of the run.
 * It goes to standard output, not standard error where Jest writes its own report: the landings whose CI log
 * closed on this line written to standard error were judged to have run no test, as if only standard output
 * were read for a closing line (the last landing to pass closed its standard output on chaos's
 * "chaos: N passed, N failed"). On Linux a write to a pipe or a file is synchronous, so it is not lost at exit.
 */
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const line = `jest: ${results.numPassedTests} passed, ${results.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}\n`;
    process.once('exit', () => process.stdout.write(line));
  }
}

module.exports = SummaryReporter;
