import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Simulated time. Every intent runs on a clock of its own (an `AsyncLocalStorage` store), which moves
 * only when the harness moves it: a model turn, a client's timeout, a retry the next day. Everything that
 * decides by `Date.now()` — Powertools' lock and TTL, retrysafe's lock, TTL and dedupe window, the
 * completer's rechecks — reads the clock of the intent it works for, so no count depends on how fast
 * this machine is or on how intents running side by side interleave.
 */
export class SimulatedClock {
  constructor(public nowMs: number) {}

  advance(ms: number): void {
    this.nowMs += ms;
  }
}

const current = new AsyncLocalStorage<SimulatedClock>();
const realNow = Date.now.bind(Date);
/** The clock of work run outside any intent (the completer's quiescence). */
let outside: SimulatedClock | undefined;

/** From now on `Date.now()` answers the simulated clock of the work that asks (the real one outside). */
export function installSimulatedTime(): void {
  Date.now = function simulatedNow() {
    return (current.getStore() ?? outside)?.nowMs ?? realNow();
  };
}

/** Runs `work` on `clock`: every `Date.now()` it reaches, however deep, reads it. */
export function onClock<T>(clock: SimulatedClock, work: () => Promise<T>): Promise<T> {
  return current.run(clock, work);
}

/** The clock of the work that asks, if any. */
export function currentClock(): SimulatedClock | undefined {
  return current.getStore() ?? outside;
}

/** Sets the clock of work outside any intent (undefined: the real clock). */
export function setOutsideClock(clock: SimulatedClock | undefined): void {
  outside = clock;
}

/** The machine's own clock, for the wall time the bench reports about itself. */
export function wallNow(): number {
  return realNow();
}
