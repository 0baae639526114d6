// The mutation run's test order (jest.mutate.config.js): the fastest and most exact first — the unit tests
// that pin the commands' conditions, then the protocol's transitions, the reviews' regressions, the
// integration tests, and the explorer's sample last — so that a mutant is killed, and its run stopped
// (Stryker bails at the first failure), as early as possible. Jest's own order runs the slowest first.
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

class FastFirst extends Sequencer {
  sort(tests) {
    return [...tests].sort((a, b) => rank(a.path) - rank(b.path) || a.path.localeCompare(b.path));
  }
}

module.exports = FastFirst;
