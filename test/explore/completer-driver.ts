import type { _Record as StreamRecord } from '@aws-sdk/client-dynamodb-streams';
import { tableName } from '../../app/tables';
import { Completer, type Recheck, type ToolRuntime } from '../../lib/idempotency';
import type { InvocationDeadline, JsonObject, ToolResult } from '../../lib/idempotency/types';
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

/** One answer the completer's re-run of a call got (nobody reads it; it may still say `idempotent: false`). */
export interface CompleterAnswer {
  readonly tool: string;
  readonly user: string;
  readonly key: string;
  readonly args: JsonObject;
  readonly result: ToolResult;
}

/** Where a schedule's delivery faults draw from (the scheduler's seeded stream). */
export interface DeliveryFaults {
  chance(p: number): boolean;
  pick(n: number): number;
}

/**
 * The completer as the stack runs it — the stream's event source mapping feeding `onStream`, the
 * recheck queue feeding `onRecheck` — with DynamoDB Local's stream read by the same local feed as
 * `npm start`, and the queue's delays counted on the simulated clock.
 */
export class CompleterDriver {
  readonly #feed: LocalStreamFeed;
  #queue: LocalRecheckQueue;
  #completer: Completer;
  /** Stream records held back by a delivery fault: handed over by a later invocation (after newer ones). */
  #late: StreamRecord[][] = [];
  /** Stream records handed over already, which a delivery fault may hand over again. */
  #delivered: StreamRecord[][] = [];
  /** What the completer's re-runs answered this schedule. */
  answers: CompleterAnswer[] = [];

  constructor(private readonly world: ExploreWorld) {
    this.#feed = new LocalStreamFeed(world.streams, tableName('idempotency', world.env));
    this.#queue = new LocalRecheckQueue(() => Date.now(), QUEUE);
    this.#completer = this.#build();
  }

  #build(): Completer {
    // The world's runtime, its answers to the completer kept (an answer to nobody counts as one).
    const runtime = Object.create(this.world.runtime) as ToolRuntime;
    runtime.invoke = async (tool, identity, input, deadline, options) => {
      const result = await this.world.runtime.invoke(tool, identity, input, deadline, options);
      const { idempotency_key: key, ...args } = input as JsonObject;
      this.answers.push({ tool: tool.name, user: identity.user, key: String(key), args, result });
      return result as never;
    };
    return new Completer({
      client: this.world.client,
      runtime,
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
    this.#late = [];
    this.#delivered = [];
    this.answers = [];
    await Scheduler.observe(() => this.#feed.poll(async () => undefined));
  }

  /** Rechecks that failed every delivery the stack's redrive policy allows (its recheck DLQ). */
  get deadLetters(): readonly Recheck[] {
    return this.#queue.deadLetters;
  }

  /**
   * One invocation of each trigger: the stream's new records, then the rechecks that are due. With
   * `faults`, delivery is at least once and in no promised order: a page of records may be handed over
   * reversed, twice, or held back for a later invocation; a page handed over before may come again; a
   * recheck may be delivered again (now, or a few seconds later, to whichever invocation takes it).
   * Without, every held-back page is handed over first.
   */
  async once(
    deadline: () => InvocationDeadline,
    faults?: DeliveryFaults,
  ): Promise<{ records: number; rechecks: number }> {
    const completer = this.#completer;
    let records = 0;
    const hand = async (batch: StreamRecord[]) => {
      records += batch.length;
      await completer.onStream(batch);
    };
    for (const batch of faults ? this.#late.splice(0, faults.pick(this.#late.length + 1)) : this.#late.splice(0)) {
      await hand(batch);
    }
    const read = await this.#feed.poll(async (page) => {
      if (!faults) return hand(page);
      const batch = faults.chance(0.3) ? [...page].reverse() : page;
      if (faults.chance(0.2)) {
        this.#late.push(batch);
        return;
      }
      await hand(batch);
      this.#delivered.push(batch);
      if (faults.chance(0.2)) await hand(batch);
    });
    if (faults && this.#delivered.length > 0 && faults.chance(0.2)) {
      await hand(this.#delivered[faults.pick(this.#delivered.length)]!);
    }
    const queue = this.#queue;
    const received = queue.receive();
    for (const { recheck, receipt } of received) {
      if (faults?.chance(0.2)) {
        // SQS delivers at least once: the same recheck again, now or a few seconds later.
        await queue.send([{ ...recheck, delaySeconds: faults.pick(2) === 0 ? 0 : 1 + faults.pick(30) }]);
      }
      // Deleted only once handled: one whose invocation failed — or crashed, never to come back — is
      // delivered again when its visibility ends, as SQS does.
      await completer.onRecheck(recheck, deadline()).then(
        () => queue.delete(receipt),
        () => undefined,
      );
    }
    return { records: Math.max(records, read), rechecks: received.length };
  }

  /**
   * Until nothing is left: the stream read to its end and no recheck waiting — moving the clock to
   * the next recheck when none is due yet (at most `rounds` invocations).
   */
  async drain(deadline: () => InvocationDeadline, advanceTo: (ms: number) => void, rounds = 40): Promise<boolean> {
    for (let round = 0; round < rounds; round++) {
      const { records, rechecks } = await this.once(deadline);
      if (records === 0 && rechecks === 0 && this.#late.length === 0) {
        const next = this.#queue.nextDueAt();
        if (next === undefined) return true;
        advanceTo(next);
      }
    }
    return false;
  }
}
