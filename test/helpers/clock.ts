import { dueAfterParkMs } from '../../lib/idempotency/backoff';

/**
 * Moves the clock `ms` ahead for everything that reads `Date.now()` — the claim's conditions, the
 * locks, the completer — so a lock's expiry is an event the test makes happen, not a race with a timer.
 * Undone by `jest.restoreAllMocks()`.
 */
export function advanceClock(ms: number): void {
  const now = Date.now.bind(Date);
  jest.spyOn(Date, 'now').mockImplementation(() => now() + ms);
}

/**
 * A clock that can be moved ahead several times in one test (`advanceClock` spies on Date.now again
 * each time, which recurses when called twice without a restore). Undone by `jest.restoreAllMocks()`.
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

/**
 * Moves the clock past the look at a call parked now with its lock ended (handed off, queued, failed): the
 * stream's batching window after its park (`dueAfterParkMs`), when every completer looks at it — the stack's
 * from the park's stream image. Undone by `jest.restoreAllMocks()`.
 */
export function pastTheStreamWindow(): void {
  advanceClock(dueAfterParkMs(1) + 1);
}
