import { tableName } from '../../app/tables';
import { Completer } from '../../lib/idempotency';
import type { InvocationDeadline } from '../../lib/idempotency/types';
import { LocalRecheckQueue } from '../../lib/local/recheck-queue';
import { LocalStreamFeed } from '../../lib/local/stream-feed';
import { IDEMPOTENCY_ATTRIBUTES } from '../../lib/store/tables';
import { Scheduler } from './scheduler';
import type { ExploreWorld } from './world';

/** How long SQS hides a recheck whose invocation failed before it delivers it again. */
const REDELIVERY_SECONDS = 60;

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
    this.#queue = new LocalRecheckQueue(() => Date.now());
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
    this.#queue = new LocalRecheckQueue(() => Date.now());
    this.#completer = this.#build();
    await Scheduler.observe(() => this.#feed.poll(async () => undefined));
  }

  /** One invocation of each trigger: the stream's new records, then the rechecks that are due. */
  async once(deadline: () => InvocationDeadline): Promise<{ records: number; rechecks: number }> {
    const completer = this.#completer;
    const records = await this.#feed.poll(async (batch) => {
      await completer.onStream(batch);
    });
    const due = this.#queue.due();
    for (const recheck of due) {
      try {
        await completer.onRecheck(recheck, deadline());
      } catch {
        // The invocation failed: SQS delivers the message again after its visibility timeout.
        await this.#queue.send([{ ...recheck, delaySeconds: REDELIVERY_SECONDS }]);
      }
    }
    return { records, rechecks: due.length };
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
