import { gate } from '../helpers/tools';

/**
 * A clock that can be moved ahead several times in one test (test/helpers/clock.ts's advanceClock
 * spies on Date.now again each time, which recurses when called twice without a restore).
 */
export function movableClock(): { advance(ms: number): void } {
  const real = Date.now.bind(Date);
  let offset = 0;
  jest.spyOn(Date, 'now').mockImplementation(() => real() + offset);
  return {
    advance(ms: number) {
      offset += ms;
    },
  };
}

/** Gates opened in turn: `next()` is the gate of the n-th run, `reached(n)` waits until run n started. */
export function runGates(count: number) {
  const gates = Array.from({ length: count }, () => gate());
  let runs = 0;
  return {
    /** Called by the tool at the start of each run: opens that run's gate, returns its number (1-based). */
    started(): number {
      runs += 1;
      gates[runs - 1]?.open();
      return runs;
    },
    reached(n: number): Promise<void> {
      return gates[n - 1]!.opened;
    },
    get runs() {
      return runs;
    },
  };
}
