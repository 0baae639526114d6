import { committedText, type IncrementalReport, mergeReports } from './incremental';

/** Two runs' incremental reports, each numbering its own tests: merged, every mutant names the same tests. */
describe('mergeReports', () => {
  const first: IncrementalReport = {
    schemaVersion: '2',
    files: {
      'lib/a.ts': { source: 'a1', mutants: [{ id: '0', status: 'Killed', coveredBy: ['0', '1'], killedBy: ['1'] }] },
      'lib/b.ts': { source: 'b1', mutants: [{ id: '1', status: 'Survived', coveredBy: ['0'] }] },
    },
    testFiles: {
      'test/x.test.ts': {
        source: 'x1',
        tests: [
          { id: '0', name: 'x one' },
          { id: '1', name: 'x two' },
        ],
      },
    },
  };
  const second: IncrementalReport = {
    schemaVersion: '2',
    files: {
      'lib/b.ts': { source: 'b2', mutants: [{ id: '0', status: 'Killed', coveredBy: ['0'], killedBy: ['0'] }] },
    },
    testFiles: {
      'test/w.test.ts': { source: 'w1', tests: [{ id: '0', name: 'w one' }] },
      // x's latest version: "x one" is gone.
      'test/x.test.ts': { source: 'x2', tests: [{ id: '1', name: 'x two' }] },
    },
  };

  it('keeps each file’s latest results, and renumbers the tests by file and name', () => {
    const merged = mergeReports([first, second]);

    expect(merged.testFiles).toEqual({
      'test/w.test.ts': { source: 'w1', tests: [{ id: '0', name: 'w one' }] },
      'test/x.test.ts': { source: 'x2', tests: [{ id: '1', name: 'x two' }] },
    });
    expect(merged.files).toEqual({
      // From the first run, against x's earlier version: it names no test of x any more (Stryker reruns it).
      'lib/a.ts': { source: 'a1', mutants: [{ id: '0', status: 'Killed', coveredBy: [], killedBy: [] }] },
      // From the second run, whose test 0 was "w one".
      'lib/b.ts': { source: 'b2', mutants: [{ id: '0', status: 'Killed', coveredBy: ['0'], killedBy: ['0'] }] },
    });
  });

  it('refuses nothing to merge', () => {
    expect(() => mergeReports([])).toThrow('no report to merge');
  });

  it('keeps naming a test whose file is unchanged since the run', () => {
    const unchanged: IncrementalReport = {
      ...second,
      files: {},
      testFiles: { ...second.testFiles, ...first.testFiles },
    };

    const merged = mergeReports([first, unchanged]);

    expect(merged.files['lib/a.ts']?.mutants).toEqual([
      { id: '0', status: 'Killed', coveredBy: ['1', '2'], killedBy: ['2'] },
    ]);
  });

  it('commits a report on one line, without the mutants’ status reasons', () => {
    const report: IncrementalReport = {
      files: { 'lib/a.ts': { source: 'a', mutants: [{ id: '0', status: 'Killed', statusReason: 'at /tmp/sandbox' }] } },
    };

    expect(committedText(report)).toBe(
      '{"files":{"lib/a.ts":{"source":"a","mutants":[{"id":"0","status":"Killed"}]}}}',
    );
  });
});
