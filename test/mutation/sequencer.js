// The mutation run's test order (jest.mutate.config.js): the fastest and most exact first — the unit tests
// that pin the commands' conditions, then the protocol's transitions, the reviews' regressions, the
// integration tests, and the explorer's sample last — so that a mutant is killed, and its run stopped
// (test/mutation/bail-environment.js skips every test after the first failure), as early as possible.
// Jest's own order runs the slowest first.
//
// And only the files a mutant's run needs. Stryker runs a mutant with the tests that cover it (its
// `testNamePattern`), but Jest still loads every test file — each one its own module registry, the SDK
// and lib/ evaluated again — to find out that a file has none of them: ~10 s per mutant. A full run (the
// dry run, every test) records each file's test names in Jest's cache, next to its own timings; a
// mutant's run (Stryker's `__STRYKER_ACTIVE_MUTANT__` set) leaves out the files none of whose recorded
// names the pattern matches, by Jest's own rule (the name, case-insensitive). A file with no record, or a
// pattern no record matches, runs as before. Leaving a file out changes no result: its tests would all be
// skipped, and its hooks with them (the mutant is not static: ignoreStatic, and a static mutant's run has
// no pattern).
const fs = require('node:fs');
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

const ORDER = [
  /test\/unit\//,
  /test\/integration\/protocol\.test\.ts$/,
  /test\/review\//,
  /test\/integration\//,
  /test\/http\//,
  /test\/explore\/regressions\.test\.ts$/,
  /test\/explore\/sampled\.mutate\.ts$/,
];

function rank(path) {
  const index = ORDER.findIndex((pattern) => pattern.test(path));
  return index < 0 ? ORDER.length : index;
}

/** Where a project's test names are recorded: Jest's cache directory, per config (its id covers rootDir). */
function namesFile(config) {
  return path.join(config.cacheDirectory, `mutation-test-names-${config.id}.json`);
}

function readNames(config) {
  try {
    return JSON.parse(fs.readFileSync(namesFile(config), 'utf8'));
  } catch {
    return undefined;
  }
}

class FastFirst extends Sequencer {
  /** A mutant's run: the pattern of the tests that cover it. */
  #pattern;
  /** A full run, with no mutant active: each file's test names are recorded. */
  #records;

  constructor(options) {
    super(options);
    const pattern = options?.globalConfig?.testNamePattern;
    const mutant = process.env.__STRYKER_ACTIVE_MUTANT__ !== undefined;
    this.#pattern = pattern && mutant ? new RegExp(pattern, 'i') : undefined;
    this.#records = !pattern && !mutant;
  }

  sort(tests) {
    const ordered = [...tests].sort((a, b) => rank(a.path) - rank(b.path) || a.path.localeCompare(b.path));
    if (!this.#pattern) return ordered;
    const recorded = new Map();
    const needed = ordered.filter(({ path: file, context }) => {
      if (!recorded.has(context)) recorded.set(context, readNames(context.config));
      const names = recorded.get(context)?.[file];
      return names === undefined || names.some((name) => this.#pattern.test(name));
    });
    return needed.length > 0 ? needed : ordered;
  }

  cacheResults(tests, results) {
    super.cacheResults(tests, results);
    if (!this.#records) return;
    const contexts = new Map(tests.map((test) => [test.path, test.context]));
    const names = new Map();
    for (const { testFilePath, testExecError, testResults } of results.testResults) {
      const context = contexts.get(testFilePath);
      // A file that failed to load has no names to go by: it stays unrecorded (always run).
      if (!context || testExecError) continue;
      if (!names.has(context)) names.set(context, {});
      names.get(context)[testFilePath] = testResults.map((result) => result.fullName);
    }
    for (const [context, files] of names) fs.writeFileSync(namesFile(context.config), JSON.stringify(files));
  }
}

module.exports = FastFirst;
