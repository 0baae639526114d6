import type { Recheck, RecheckQueue } from '../idempotency';

/** SQS's longest `DelaySeconds`: a longer delay is refused there, so it is refused here too. */
const MAX_DELAY_SECONDS = 900;

interface Waiting {
  readonly recheck: Recheck;
  /** When it is due (ms, on the queue's clock). */
  readonly dueAt: number;
  /** Its place in sending order: rechecks due at the same time come out in the order they were sent. */
  readonly order: number;
}

/**
 * The recheck queue of `npm start`, `npm run complete` and the deterministic explorer: what SQS does
 * with `DelaySeconds`, in memory. Nothing runs by itself — no timer: whoever drives it asks for what is
 * {@link due} on its clock (`now`, injected, so a simulated clock moves it), and {@link nextDueAt} says
 * when to ask again. Delays are checked as SQS checks them (whole seconds, 0–900).
 */
export class LocalRecheckQueue implements RecheckQueue {
  #waiting: Waiting[] = [];
  #sent = 0;

  constructor(private readonly now: () => number = () => Date.now()) {}

  async send(rechecks: readonly Recheck[]): Promise<void> {
    for (const recheck of rechecks) {
      const delay = recheck.delaySeconds;
      if (!Number.isInteger(delay) || delay < 0 || delay > MAX_DELAY_SECONDS) {
        throw new RangeError(`delaySeconds: expected a whole number of seconds from 0 to 900, got ${delay}`);
      }
    }
    const now = this.now();
    for (const recheck of rechecks) {
      this.#waiting.push({ recheck, dueAt: now + recheck.delaySeconds * 1000, order: this.#sent++ });
    }
  }

  /** Removes and returns every recheck due now, earliest first (ties in sending order). */
  due(): Recheck[] {
    const now = this.now();
    const due = this.#waiting.filter((waiting) => waiting.dueAt <= now);
    this.#waiting = this.#waiting.filter((waiting) => waiting.dueAt > now);
    return due.sort((a, b) => a.dueAt - b.dueAt || a.order - b.order).map((waiting) => waiting.recheck);
  }

  /** When the next recheck is due (ms, on the queue's clock), or undefined when none waits. */
  nextDueAt(): number | undefined {
    let next: number | undefined;
    for (const { dueAt } of this.#waiting) if (next === undefined || dueAt < next) next = dueAt;
    return next;
  }

  /** Rechecks waiting, due or not. */
  get size(): number {
    return this.#waiting.length;
  }
}
