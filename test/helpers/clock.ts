/**
 * Moves the clock `ms` ahead for everything that reads `Date.now()` — the claim's conditions, the
 * locks, the completer — so a lock's expiry is an event the test makes happen, not a race with a timer.
 * Undone by `jest.restoreAllMocks()`.
 */
export function advanceClock(ms: number): void {
  const now = Date.now.bind(Date);
  jest.spyOn(Date, 'now').mockImplementation(() => now() + ms);
}
