import { tableName } from '../../app/tables';
import { Completer, type Recheck } from '../../lib/idempotency';
import type { InvocationDeadline } from '../../lib/idempotency/types';
import { COMPLETER_DEFAULTS } from '../../lib/infra/defaults';
import { LocalRecheckQueue } from '../../lib/local/recheck-queue';
import { LocalStreamFeed } from '../../lib/local/stream-feed';
import { IDEMPOTENCY_ATTRIBUTES } from '../../lib/store/tables';
import { Scheduler } from './scheduler';
import type { ExploreWorld } from './world';

/** The stack's recheck queue: how long a received message stays hidden, and deliveries before its DLQ. */
const QUEUE = {
  visibilitySeconds: COMPLETER_DEFAULTS.timeoutSeconds * COMPLETER_DEFAULTS.recheckVisibilityTimeoutFactor,
  maxReceiveCount: COMPLETER_DEFAULTS.recheckMaxReceiveCount,
};

/**
 * The completer as the stack runs it — the stream's event source mapping feeding `onStream`, the
 * recheck queue feeding `onRecheck` — with DynamoDB Local's stream read by the same local feed as
 * `npm start`, and the queue's delays counted on the simulated clock.
 */
export class CompleterDriver {
  readonly #feed: LocalStreamFeed;
  #queue: LocalRecheckQueue;
  #completer: Completer;

  constructor(private readonly world: ExploreWorld) {
    this.#feed = new LocalStreamFeed(world.streams, tableName('idempotency', world.env));
    this.#queue = new LocalRecheckQueue(() => Date.now(), QUEUE);
    this.#completer = this.#build();
  }

  #build(): Completer {
    return new Completer({
      client: this.world.client,
      runtime: this.world.runtime,
      tools: Object.values(this.world.tools),
      queue: this.#queue,
      tableName: tableName('idempotency', this.world.env),
      attributes: IDEMPOTENCY_ATTRIBUTES,
    });
  }

  /** A new schedule: an empty queue, and the stream read past every earlier schedule's changes. */
  async reset(): Promise<void> {
    this.#queue = new LocalRecheckQueue(() => Date.now(), QUEUE);
    this.#completer = this.#build();
    await Scheduler.observe(() => this.#feed.poll(async () => undefined));
  }

  /** Rechecks that failed every delivery the stack's redrive policy allows (its recheck DLQ). */
  get deadLetters(): readonly Recheck[] {
    return this.#queue.deadLetters;
  }

  /** One invocation of each trigger: the stream's new records, then the rechecks that are due. */
  async once(deadline: () => InvocationDeadline): Promise<{ records: number; rechecks: number }> {
    const completer = this.#completer;
    const records = await this.#feed.poll(async (batch) => {
      await completer.onStream(batch);
    });
    const queue = this.#queue;
    const received = queue.receive();
    for (const { recheck, receipt } of received) {
      // Deleted only once handled: one whose invocation failed — or crashed, never to come back — is
      // delivered again when its visibility ends, as SQS does.
      await completer.onRecheck(recheck, deadline()).then(
        () => queue.delete(receipt),
        () => undefined,
      );
    }
    return { records, rechecks: received.length };
  }

  /**
   * Until nothing is left: the stream read to its end and no recheck waiting — moving the clock to
   * the next recheck when none is due yet (at most `rounds` invocations).
   */
  async drain(deadline: () => InvocationDeadline, advanceTo: (ms: number) => void, rounds = 40): Promise<boolean> {
    for (let round = 0; round < rounds; round++) {
      const { records, rechecks } = await this.once(deadline);
      if (records === 0 && rechecks === 0) {
        const next = this.#queue.nextDueAt();
        if (next === undefined) return true;
        advanceTo(next);
      }
    }
    return false;
  }
}
