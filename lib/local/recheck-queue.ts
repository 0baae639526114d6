import type { Recheck, RecheckQueue } from '../idempotency';

/** SQS's longest `DelaySeconds`: a longer delay is refused there, so it is refused here too. */
const MAX_DELAY_SECONDS = 900;

interface Message {
  readonly recheck: Recheck;
  /** When it can next be received (ms, on the queue's clock): its delay's end, or its visibility's. */
  visibleAt: number;
  /** Its place in sending order: rechecks visible at the same time come out in the order they were sent. */
  readonly order: number;
  /** How many times it was received. */
  receives: number;
  /** The latest receive's handle: only it deletes the message (SQS's rule for a message received again). */
  receipt?: string;
}

/** One received recheck: delete it by its receipt when its handling ended, or it comes back. */
export interface Delivery {
  readonly recheck: Recheck;
  readonly receipt: string;
  /** 1 on its first delivery (SQS's `ApproximateReceiveCount`). */
  readonly receiveCount: number;
}

export interface LocalRecheckQueueOptions {
  /**
   * How long a received message stays hidden before it is delivered again, unless deleted (SQS's
   * visibility timeout). The stack's queue hides it for 6 minutes; locally a failed recheck comes back
   * sooner, so a developer sees it.
   * @default 30
   */
  readonly visibilitySeconds?: number;
  /**
   * Deliveries of a message before the next receive moves it to {@link LocalRecheckQueue.deadLetters}
   * instead (the stack's redrive policy).
   * @default 5
   */
  readonly maxReceiveCount?: number;
}

/**
 * The recheck queue of `npm start`, `npm run complete` and the deterministic explorer: what SQS does with
 * `DelaySeconds`, a visibility timeout and a dead-letter queue, in memory. A message leaves the queue only
 * when its receiver deletes it: one received by a pass that failed, threw or never came back (a worker
 * that died) is delivered again when its visibility ends, as SQS does — nothing is lost with the process
 * that held it. Nothing runs by itself — no timer: whoever drives it asks to {@link receive} on its clock
 * (`now`, injected, so a simulated clock moves it), and {@link nextDueAt} says when to ask again. Delays
 * are checked as SQS checks them (whole seconds, 0–900).
 */
export class LocalRecheckQueue implements RecheckQueue {
  #messages: Message[] = [];
  #deadLetters: Recheck[] = [];
  #sent = 0;
  #receipts = 0;
  readonly #visibilityMs: number;
  readonly #maxReceiveCount: number;

  constructor(
    private readonly now: () => number = () => Date.now(),
    options: LocalRecheckQueueOptions = {},
  ) {
    this.#visibilityMs = (options.visibilitySeconds ?? 30) * 1000;
    this.#maxReceiveCount = options.maxReceiveCount ?? 5;
  }

  async send(rechecks: readonly Recheck[]): Promise<void> {
    for (const recheck of rechecks) {
      const delay = recheck.delaySeconds;
      if (!Number.isInteger(delay) || delay < 0 || delay > MAX_DELAY_SECONDS) {
        throw new RangeError(`delaySeconds: expected a whole number of seconds from 0 to 900, got ${delay}`);
      }
    }
    const now = this.now();
    for (const recheck of rechecks) {
      this.#messages.push({ recheck, visibleAt: now + recheck.delaySeconds * 1000, order: this.#sent++, receives: 0 });
    }
  }

  /**
   * Every message visible now, earliest first (ties in sending order), each hidden for the visibility
   * timeout from now on. One already received `maxReceiveCount` times goes to the dead letters instead.
   */
  receive(): Delivery[] {
    const now = this.now();
    const visible = this.#messages
      .filter((message) => message.visibleAt <= now)
      .sort((a, b) => a.visibleAt - b.visibleAt || a.order - b.order);
    const deliveries: Delivery[] = [];
    for (const message of visible) {
      if (message.receives >= this.#maxReceiveCount) {
        this.#messages = this.#messages.filter((other) => other !== message);
        this.#deadLetters.push(message.recheck);
        continue;
      }
      message.receives += 1;
      message.visibleAt = now + this.#visibilityMs;
      message.receipt = `r${++this.#receipts}`;
      deliveries.push({ recheck: message.recheck, receipt: message.receipt, receiveCount: message.receives });
    }
    return deliveries;
  }

  /** Deletes the message the receipt is from; false when it is not its latest receipt (or it is gone). */
  delete(receipt: string): boolean {
    const before = this.#messages.length;
    this.#messages = this.#messages.filter((message) => message.receipt !== receipt);
    return this.#messages.length < before;
  }

  /** Drops every message, received or not (SQS `PurgeQueue`). */
  purge(): void {
    this.#messages = [];
  }

  /** When the next message can be received (ms, on the queue's clock), or undefined when none is left. */
  nextDueAt(): number | undefined {
    let next: number | undefined;
    for (const { visibleAt } of this.#messages) if (next === undefined || visibleAt < next) next = visibleAt;
    return next;
  }

  /**
   * When the earliest call a message is about is due (ms): its recheck's `dueAtMs` (what its record says),
   * or its delivery when later (a failed recheck hidden until its visibility ends); undefined when none is
   * left. Later than {@link nextDueAt} for a call more than SQS's 15 min away: that delivery only looks again.
   */
  nextCallDueAt(): number | undefined {
    let next: number | undefined;
    for (const { visibleAt, recheck } of this.#messages) {
      const due = Math.max(visibleAt, recheck.dueAtMs ?? visibleAt);
      if (next === undefined || due < next) next = due;
    }
    return next;
  }

  /** Messages in the queue: waiting for their delay, visible, or received and not deleted yet. */
  get size(): number {
    return this.#messages.length;
  }

  /** Rechecks moved out after `maxReceiveCount` deliveries (the stack's recheck DLQ): each needs a look. */
  get deadLetters(): readonly Recheck[] {
    return this.#deadLetters;
  }
}
