/**
 * Stryker's incremental file holds one run's report: the files that run mutated, and the tests it ran,
 * each test numbered within that run (a mutant's `coveredBy` and `killedBy` name those numbers). A run of
 * a part of the write path (`npm run mutate -- --files …`) would so leave only that part in the file.
 * `mergeReports` keeps every file's latest results instead: the reports are taken oldest first, a later
 * one's files and test files replace an earlier one's, and every test is renumbered by its file and name
 * so that each mutant still names the tests it named. A test whose file changed since the run (or that
 * is gone from it) is dropped from the mutants that named it: Stryker then sees their tests changed and
 * runs them again, rather than reuse a result against an earlier version of the test.
 */
import { readFileSync } from 'node:fs';

interface Test {
  readonly id: string;
  readonly name: string;
  readonly [more: string]: unknown;
}

interface Mutant {
  readonly coveredBy?: readonly string[];
  readonly killedBy?: readonly string[];
  readonly [more: string]: unknown;
}

export interface IncrementalReport {
  readonly files: Record<string, { readonly mutants: readonly Mutant[]; readonly [more: string]: unknown }>;
  readonly testFiles?: Record<string, { readonly tests: readonly Test[]; readonly [more: string]: unknown }>;
  readonly [more: string]: unknown;
}

/** The reports merged, oldest first: the last one's settings, every file's latest results. */
export function mergeReports(reports: readonly IncrementalReport[]): IncrementalReport {
  const last = reports.at(-1);
  if (!last) throw new Error('no report to merge');
  const latestTestFiles = new Map<string, NonNullable<IncrementalReport['testFiles']>[string]>();
  for (const report of reports) {
    for (const [file, testFile] of Object.entries(report.testFiles ?? {})) latestTestFiles.set(file, testFile);
  }
  const idOf = new Map<string, string>();
  const key = (file: string, name: string) => JSON.stringify([file, name]);
  const testFiles: NonNullable<IncrementalReport['testFiles']> = {};
  for (const [file, testFile] of [...latestTestFiles].sort(([a], [b]) => a.localeCompare(b))) {
    const tests: Test[] = [];
    for (const test of testFile.tests) {
      if (idOf.has(key(file, test.name))) continue;
      const id = String(idOf.size);
      idOf.set(key(file, test.name), id);
      tests.push({ ...test, id });
    }
    testFiles[file] = { ...testFile, tests };
  }
  const files: IncrementalReport['files'] = {};
  for (const report of reports) {
    // Only the tests whose file is as its latest version: a result against an earlier version of a test
    // file must not be reused as if that file had not changed (Stryker compares with the latest).
    const named = new Map<string, string>();
    for (const [file, testFile] of Object.entries(report.testFiles ?? {})) {
      if (testFile.source !== latestTestFiles.get(file)?.source) continue;
      for (const test of testFile.tests) named.set(test.id, key(file, test.name));
    }
    const renumber = (ids: readonly string[] | undefined) =>
      ids?.flatMap((id) => {
        const merged = idOf.get(named.get(id) ?? '');
        return merged === undefined ? [] : [merged];
      });
    for (const [file, source] of Object.entries(report.files)) {
      files[file] = {
        ...source,
        mutants: source.mutants.map((mutant) => ({
          ...mutant,
          ...(mutant.coveredBy ? { coveredBy: renumber(mutant.coveredBy) } : {}),
          ...(mutant.killedBy ? { killedBy: renumber(mutant.killedBy) } : {}),
        })),
      };
    }
  }
  return { ...last, files, testFiles };
}

export function readReport(path: string): IncrementalReport {
  return JSON.parse(readFileSync(path, 'utf8')) as IncrementalReport;
}

/**
 * The report as committed: one line, and without each mutant's `statusReason` (a failure message or a
 * stack with the sandbox's paths, ~40% of the file) — Stryker reads neither to decide what to rerun.
 */
export function committedText(report: IncrementalReport): string {
  const files = Object.fromEntries(
    Object.entries(report.files).map(([file, source]) => [
      file,
      { ...source, mutants: source.mutants.map(({ statusReason: _reason, ...mutant }) => mutant) },
    ]),
  );
  return JSON.stringify({ ...report, files });
}
