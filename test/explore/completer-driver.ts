import type { _Record as StreamRecord } from '@aws-sdk/client-dynamodb-streams';
import { tableName } from '../../app/tables';
import { Completer, type Recheck, type ToolRuntime } from '../../lib/idempotency';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import type { InvocationDeadline, JsonObject, ToolResult } from '../../lib/idempotency/types';
import { COMPLETER_DEFAULTS } from '../../lib/infra/defaults';
import { completerPass } from '../../lib/local/completer-pass';
import { LocalRecheckQueue } from '../../lib/local/recheck-queue';
import { LocalStreamFeed } from '../../lib/local/stream-feed';
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

/**
 * Which completer finishes a schedule's calls in quiescence — each one retrysafe ships, since the liveness
 * rule (docs/state-machine.md) must hold under every one: `stream` — the stack's (the stream's event
 * source mapping and the SQS recheck queue); `dev` — `retrysafe dev`'s loop (`completerPass` on one feed
 * and one queue, as long as it runs); `cron` — `retrysafe complete` run every minute (each run a new feed
 * from the stream's start and a new queue: one pass, then gone).
 */
export const COMPLETER_KINDS = ['stream', 'dev', 'cron'] as const;
export type CompleterKind = (typeof COMPLETER_KINDS)[number];

/** How often the `cron` completer runs: every minute, as the usage text of `retrysafe complete` suggests. */
export const CRON_PERIOD_MS = 60_000;

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

  /** Every stream page read in this schedule: the stream "from its start" a `cron` run reads anew. */
  #history: StreamRecord[][] = [];

  #build(queue: LocalRecheckQueue = this.#queue): Completer {
    // The world's runtime, its answers to the completer kept (an answer to nobody counts as one).
    const runtime = Object.create(this.world.runtime) as ToolRuntime;
    runtime.invokeForCall = async (tool, identity, input, deadline, options) => {
      const answered = await this.world.runtime.invokeForCall(tool, identity, input, deadline, options);
      const { idempotency_key: key, ...args } = input as JsonObject;
      this.answers.push({ tool: tool.name, user: identity.user, key: String(key), args, result: answered.result });
      return answered as never;
    };
    return new Completer({
      client: this.world.client,
      runtime,
      tools: Object.values(this.world.tools),
      queue,
      tableName: tableName('idempotency', this.world.env),
      attributes: DEFAULT_RECORD_ATTRIBUTES,
    });
  }

  /** A new schedule: an empty queue, and the stream read past every earlier schedule's changes. */
  async reset(): Promise<void> {
    this.#queue = new LocalRecheckQueue(() => Date.now(), QUEUE);
    this.#completer = this.#build();
    this.#late = [];
    this.#delivered = [];
    this.#history = [];
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
    const history = this.#history;
    for (const batch of faults ? this.#late.splice(0, faults.pick(this.#late.length + 1)) : this.#late.splice(0)) {
      await hand(batch);
    }
    const read = await this.#feed.poll(async (page) => {
      history.push(page);
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
   * Until nothing is left, with the completer of `kind`: `stream` and `dev` until the stream is read to its
   * end and no recheck waits — moving the clock to the next recheck when none is due yet; `cron` until a run
   * reads the stream from the schedule's start and finds no call in flight it would schedule — moving the
   * clock a minute between runs. False when `rounds` invocations (runs) were not enough.
   */
  async drain(
    deadline: () => InvocationDeadline,
    advanceTo: (ms: number) => void,
    kind: CompleterKind = 'stream',
    rounds = kind === 'cron' ? 150 : 40,
  ): Promise<boolean> {
    if (kind === 'cron') return this.#drainByCron(deadline, advanceTo, rounds);
    for (let round = 0; round < rounds; round++) {
      const { records, rechecks } = kind === 'dev' ? await this.#devPass(deadline) : await this.once(deadline);
      if (records === 0 && rechecks === 0 && this.#late.length === 0) {
        const next = this.#queue.nextDueAt();
        if (next === undefined) return true;
        advanceTo(next);
      }
    }
    return false;
  }

  /** One pass of `retrysafe dev`'s loop: `completerPass` on the driver's feed and queue. */
  async #devPass(deadline: () => InvocationDeadline): Promise<{ records: number; rechecks: number }> {
    for (const batch of this.#late.splice(0)) await this.#completer.onStream(batch);
    const history = this.#history;
    const feed = {
      poll: (handler: (records: StreamRecord[]) => Promise<void>) =>
        this.#feed.poll(async (page) => {
          history.push(page);
          await handler(page);
        }),
    } as unknown as LocalStreamFeed;
    const report = await completerPass(this.#completer, feed, this.#queue, deadline());
    const rechecks = Object.values(report.rechecks.outcomes).reduce((sum, n) => sum + n, 0);
    return { records: report.recordsRead, rechecks: rechecks + report.rechecks.failedMessageIds.length };
  }

  /**
   * `retrysafe complete` from cron: each run a new queue and completer, fed the whole stream of this
   * schedule (what a new feed reads from the trim horizon), then the rechecks due at once; nothing is
   * kept between runs — when a call is due follows from its record alone, or it is never re-run.
   */
  async #drainByCron(
    deadline: () => InvocationDeadline,
    advanceTo: (ms: number) => void,
    runs: number,
  ): Promise<boolean> {
    const history = this.#history;
    for (let run = 0; run < runs; run++) {
      for (const batch of this.#late.splice(0)) history.push(batch);
      await this.#feed.poll(async (page) => void history.push(page));
      const queue = new LocalRecheckQueue(() => Date.now(), QUEUE);
      const completer = this.#build(queue);
      // One batch: folded to each record's last image, as a run that reads the stream to its end sees it.
      const { rechecksScheduled } = await completer.onStream(history.flat());
      if (rechecksScheduled === 0) return true;
      for (const { recheck, receipt } of queue.receive()) {
        await completer.onRecheck(recheck, deadline()).then(
          () => queue.delete(receipt),
          () => undefined,
        );
      }
      advanceTo(Date.now() + CRON_PERIOD_MS);
    }
    return false;
  }
}
