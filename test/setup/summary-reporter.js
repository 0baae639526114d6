/**
 * Prints the run's closing line in the plain form CI reads in any language: "jest: N passed, N failed".
 * It is written as the process exits, after Jest's own summary, so it is the last line of the run.
 */
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const line = `jest: ${results.numPassedTests} passed, ${results.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}\n`;
    process.once('exit', () => process.stderr.write(line));
  }
}

module.exports = SummaryReporter;
