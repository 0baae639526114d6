import { QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import canonicalize from 'canonicalize';
import type { Movement } from '../../app/payments/provider';
import { TABLES, tableName } from '../../app/tables';
import { TOOLS } from '../../app/tools';
import { eraseTenant } from '../../lib/admin/erase-tenant';
import { completerDueAtMs, completerLooksAtMs, lastLookMs } from '../../lib/idempotency/backoff';
import { classify } from '../../lib/idempotency/call-state';
import { recordKeyOf } from '../../lib/idempotency/derivation';
import {
  DEFAULT_RECORD_ATTRIBUTES as ATTR,
  type CallRecord,
  callRecordOf,
  STATUS,
} from '../../lib/idempotency/protocol/record';
import { readTask } from '../../lib/idempotency/task';
import type { JsonObject, ToolResult } from '../../lib/idempotency/types';
import { withInvocationDeadline } from '../../lib/store/deadline';
import { COMPLETER_KINDS, CompleterDriver, type CompleterKind } from './completer-driver';
import { leaseViolations } from './leases';
import {
  type ActorSpec,
  type CallSpec,
  type EraseSpec,
  type IntentSpec,
  LOCK_JUMP_MS,
  SCENARIOS,
  type ScenarioSpec,
} from './scenarios';
import {
  FAULTS,
  type Fault,
  type FaultPlan,
  installClock,
  Scheduler,
  SimClock,
  type SpawnOptions,
  type TraceLine,
} from './scheduler';
import { asCall, asPoll, type ExploreWorld } from './world';

/** A call's lock: the invocation's time (a Lambda's remaining time). */
export const CALL_TIME_MS = 30_000;
/** Past every lock, and past the dedupe windows (10 min): what quiescence waits before it retries. */
const QUIESCENCE_MS = 16 * 60_000;

/** One answer the runtime gave, to an agent or to the completer. */
export interface Answer {
  readonly actor: string;
  readonly intent: string;
  readonly key: string;
  readonly reusesKeyOf: string | undefined;
  readonly result: ToolResult;
  readonly phase: 'schedule' | 'quiescence';
  /** The call was made with no time left. */
  readonly noTimeLeft: boolean;
  /** When it was answered, on the simulation's clock. */
  readonly atMs: number;
}

export interface ScheduleResult {
  readonly scenario: string;
  readonly seed: number;
  readonly at: ScheduleOptions['at'];
  readonly violations: string[];
  readonly trace: readonly TraceLine[];
  readonly steps: number;
  readonly faults: number;
  /** Every answer an agent got, in order. */
  readonly answers: readonly Answer[];
  /** The simulated clock's start (epoch ms). */
  readonly clockStart: number;
  /** The tenant the schedule's calls ran as (its items in every table). */
  readonly tenant: string;
}

export interface ScheduleOptions {
  readonly scenario: string;
  readonly seed: number;
  /** Faults forced at given steps (systematic crash points, scripted regressions); otherwise random faults. */
  readonly at?: readonly { readonly step: number; readonly fault: Exclude<Fault, 'none'> }[];
  /** No faults at all (a scenario's base schedule). @default false */
  readonly faultFree?: boolean;
  /**
   * Where the simulated clock starts, epoch ms: the cross-check runs a schedule on both engines from
   * the same instant, so that every time they store is the same.
   * @default Date.now()
   */
  readonly clockStart?: number;
}

/** The fault plan a seed gives: some schedules have none, most a few, some many. */
function planFor(scheduler: { pick(n: number): number }, at: ScheduleOptions['at']): FaultPlan {
  const rates = [0, 0.03, 0.08, 0.15];
  return {
    rate: rates[scheduler.pick(rates.length)]!,
    kinds: FAULTS,
    maxCrashes: 1 + scheduler.pick(2),
    ...(at ? { at } : {}),
  };
}

/**
 * Runs one schedule of one scenario: the actors under the seeded scheduler, then quiescence (locks
 * expire, the completer runs until nothing is left, every agent retries its calls with their keys),
 * then the invariants over the tables and the answers.
 */
export async function runSchedule(world: ExploreWorld, options: ScheduleOptions): Promise<ScheduleResult> {
  const build = SCENARIOS[options.scenario];
  if (!build) throw new Error(`no scenario ${options.scenario}`);
  // The simulated clock starts at the real time: DynamoDB Local deletes items whose TTL passed in *its*
  // clock, so a simulated past would lose records. Decisions never depend on the absolute time.
  const clock = new SimClock(options.clockStart ?? Date.now());
  const uninstall = installClock(clock);
  try {
    // Choices about the scenario come from their own stream of the seed, the plan from another.
    const choices = new Scheduler({ seed: options.seed, plan: noFaults, holdMs: 0 }, clock);
    const scenario = build((n) => choices.pick(n));
    const plan = options.faultFree
      ? noFaults
      : planFor(new Scheduler({ seed: options.seed ^ 0x5bd1e995, plan: noFaults, holdMs: 0 }, clock), options.at);
    const scheduler = new Scheduler(
      {
        seed: options.seed,
        plan,
        holdMs: CALL_TIME_MS + 1_000,
        jumps: scenario.clockJumps ?? [LOCK_JUMP_MS],
        ...(scenario.scripted ? { scripted: scenario.scripted } : {}),
      },
      clock,
    );
    const tenant = `t${options.seed}${(options.at ?? []).map((at) => `s${at.step}${at.fault}`).join('')}`;
    // Each schedule's calls are finished in quiescence by one of the completers retrysafe ships, by seed.
    const run = new Run(world, scenario, tenant, scheduler, COMPLETER_KINDS[options.seed % COMPLETER_KINDS.length]!);
    await run.setup();
    await run.schedule();
    const violations = await run.quiesceAndCheck();
    return {
      scenario: scenario.name,
      seed: options.seed,
      at: options.at,
      violations,
      trace: scheduler.trace,
      steps: scheduler.steps,
      faults: scheduler.trace.filter((line) => line.fault !== 'none').length,
      answers: run.answers,
      clockStart: clock.start,
      tenant,
    };
  } finally {
    uninstall();
  }
}

const noFaults: FaultPlan = { rate: 0, kinds: [], maxCrashes: 0 };

/** One completer (its stream position) per world, across schedules. */
const drivers = new WeakMap<ExploreWorld, CompleterDriver>();

class Run {
  readonly answers: Answer[] = [];
  readonly violations: string[] = [];
  /** Record ids of every claim written for a call, by intent (from the observed writes). */
  erasedIds = new Set<string>();
  eraseStarted = false;
  readonly #intents: ReadonlyMap<string, IntentSpec>;

  constructor(
    readonly world: ExploreWorld,
    readonly scenario: ScenarioSpec,
    readonly tenant: string,
    readonly scheduler: Scheduler,
    readonly completerKind: CompleterKind = 'stream',
  ) {
    this.#intents = new Map(scenario.intents.map((intent) => [intent.id, intent]));
  }

  get completer(): CompleterDriver {
    let driver = drivers.get(this.world);
    if (!driver) {
      driver = new CompleterDriver(this.world);
      drivers.set(this.world, driver);
    }
    return driver;
  }

  /** Where this schedule's writes start in the world's log (earlier schedules' are not this one's). */
  #writesFrom = 0;

  /** The writes this schedule made. */
  get writes() {
    return this.world.writes.slice(this.#writesFrom);
  }

  async setup(): Promise<void> {
    this.#writesFrom = this.world.writes.length;
    await this.completer.reset();
    for (const invoice of this.scenario.invoices) {
      await this.world.services.invoices.create({
        tenant: this.tenant,
        invoice_id: invoice.invoice_id,
        customer: 'cus_ada',
        amount: invoice.amount,
        currency: 'usd',
        created_at: new Date(Date.now()).toISOString(),
      });
    }
  }

  /** The random phase: every actor under the scheduler, with faults. */
  async schedule(): Promise<void> {
    const { scheduler } = this;
    const actors: Promise<unknown>[] = [];
    for (const agent of this.scenario.agents) {
      actors.push(
        this.#spawn(agent.name, agent.actor, async () => {
          if (agent.afterMs) await scheduler.wait(agent.afterMs);
          for (const call of agent.calls) await this.#callUntilAnswered(agent.name, agent.user, call, 'schedule');
        }),
      );
    }
    // A completer or erase invocation that fails (a fault reached it) is retried by its trigger: not a finding.
    // The completer's retry is quiescence's drain; an erase that stopped runs again there (`#rerunStoppedErases`).
    const faults = this.scenario.streamFaults ? scheduler : undefined;
    const completers = [
      ...Array.from({ length: this.scenario.completerRuns }, (): ActorSpec & { afterMs?: number } => ({
        afterMs: this.scenario.completerAfterMs,
      })),
      ...(this.scenario.lateCompleters ?? []),
    ];
    for (const [i, run] of completers.entries()) {
      this.#spawn(`completer${i}`, run, async () => {
        if (run.afterMs) await scheduler.wait(run.afterMs);
        await this.completer.once(callTime, faults).catch(() => undefined);
      });
    }
    for (const [i, erase] of this.#erases.entries()) {
      this.#spawn(i === 0 ? 'erase' : `erase${i + 1}`, erase, async () => {
        if (erase.afterMs) await scheduler.wait(erase.afterMs);
        this.eraseStarted = true;
        this.#stoppedErases.add(erase); // until it returns: a throw or a crash leaves it stopped
        await this.#erase(erase).then(
          () => this.#stoppedErases.delete(erase),
          () => undefined,
        );
      });
    }
    // An agent's call never throws (every failure is an answer); a crash never settles.
    for (const actor of actors) {
      actor.catch((error: unknown) => this.violations.push(`7 the runtime threw: ${(error as Error).stack ?? error}`));
    }
    await scheduler.run();
  }

  /** One tenant erase, as the operator runs it. */
  #erase(erase: EraseSpec): Promise<unknown> {
    return eraseTenant(
      this.world.client,
      { tenant: this.tenant, includeDomain: erase.includeDomain, segments: 1 },
      this.world.env,
      TABLES,
      TOOLS, // a table waits only for the calls whose tools access it, as the stack's erase
    );
  }

  /**
   * The erases that started in the random phase and did not return: a fault reached them (they threw) or
   * they crashed. One that crashed before it started never ran: nobody runs it again.
   */
  readonly #stoppedErases = new Set<EraseSpec>();

  /**
   * Runs again, once and without faults, each erase that stopped (failed or crashed): its trigger does (the
   * CLI exits 1, the stack's function fails its invocation), and erase is safe to run again. What a stopped
   * erase began only its next run finishes (rule 6): a stalled call it closed before it erased the app
   * tables stays closed, its effect as its crash left it (half done, perhaps), and neither a resend (the
   * tombstone answers `not_found` until the TTL) nor the completer moves it — near_ttl's seed 12000000
   * (regression 11).
   */
  async #rerunStoppedErases(calm: Scheduler): Promise<void> {
    const stopped = this.#erases.filter((erase) => this.#stoppedErases.has(erase));
    if (stopped.length === 0) return;
    calm.spawn('erase-q', async () => {
      for (const erase of stopped) await this.#erase(erase);
    });
    await calm.run();
  }

  /** The scenario's erases, in order. */
  get #erases(): readonly EraseSpec[] {
    const erase = this.scenario.erase;
    return erase === undefined ? [] : Array.isArray(erase) ? erase : [erase as EraseSpec];
  }

  /** Each actor's clock offset (ms), by name: the writes they made are put back on the simulation's clock. */
  readonly #clockOffsets = new Map<string, number>();

  /**
   * Spawns an actor as `spec` says. One that comes back near a TTL first takes a step of its own (it
   * starts once it is its turn), reads the scenario's `ttlRecord`, and moves the clock to that long before
   * its TTL.
   */
  #spawn(name: string, spec: ActorSpec | undefined, work: () => Promise<void>): Promise<void> {
    const { scheduler } = this;
    const options: SpawnOptions = {
      late: spec?.late === true || spec?.beforeTtlMs !== undefined,
      shuffled: spec?.shuffled ?? false,
      fromStep: spec?.fromStep ?? 0,
      clockOffsetMs: spec?.clockOffsetMs ?? 0,
    };
    this.#clockOffsets.set(name, options.clockOffsetMs ?? 0);
    const beforeTtlMs = spec?.beforeTtlMs;
    return scheduler.spawn(
      name,
      async () => {
        if (beforeTtlMs !== undefined) {
          await scheduler.wait(0);
          const expiresAtS = await this.#ttlRecordExpiry();
          if (expiresAtS !== undefined) {
            await scheduler.waitUntil(expiresAtS * 1000 - beforeTtlMs, `${beforeTtlMs} ms before the TTL`);
          }
        }
        await work();
      },
      options,
    );
  }

  /** The TTL (epoch s) of the scenario's `ttlRecord`, as the table holds it now; undefined when there is none. */
  async #ttlRecordExpiry(): Promise<number | undefined> {
    const ttlRecord = this.scenario.ttlRecord;
    if (!ttlRecord) return undefined;
    const tool = this.#intents.get(ttlRecord.intent)!.tool;
    const record = await Scheduler.observe(() =>
      this.world.runtime.readCall(tool, { tenant: this.tenant, user: ttlRecord.user }, ttlRecord.key),
    ).catch(() => undefined);
    return record?.expiresAtS;
  }

  /** An agent's call: answered, or retried with the same key while pending/unavailable (3 tries). */
  async #callUntilAnswered(actor: string, user: string, call: CallSpec, phase: Answer['phase']): Promise<void> {
    for (let attempt = 0; attempt < (phase === 'schedule' ? (call.tries ?? 3) : 3); attempt++) {
      const result = await this.#call(actor, user, call, phase);
      const retry = !result.ok && ('status' in result || result.error.code === 'unavailable');
      if (!retry) return;
      if (call.waitsRetryAfter && 'status' in result) {
        await (Scheduler.current()?.scheduler ?? this.scheduler).wait(result.retry_after_ms);
      }
    }
  }

  async #call(actor: string, user: string, call: CallSpec, phase: Answer['phase']): Promise<ToolResult> {
    const intent = this.#intents.get(call.intent)!;
    const tool = this.world.tools[intent.tool]!;
    // Now and then a call arrives with no time left (a Lambda invoked at the end of its budget).
    const noTimeLeft = phase === 'schedule' && this.scheduler.chance(0.03);
    const deadline = noTimeLeft ? { getRemainingTimeInMillis: () => 0 } : callTime();
    const { result, call: about } = await asCall({ tool: intent.tool, key: call.key, intent: call.intent }, () =>
      withInvocationDeadline(deadline, () =>
        this.world.runtime.invokeForCall(
          tool,
          { tenant: this.tenant, user },
          { ...intent.args, idempotency_key: call.key },
          deadline,
          // Handed off in the schedule only: in quiescence the completer has run dry, and an agent's resend
          // is to finish its call (a queued one would wait for a completer that no longer runs).
          phase === 'schedule' && call.handOff ? { handOff: true } : {},
        ),
      ),
    );
    this.answers.push({
      actor,
      intent: call.intent,
      key: call.key,
      reusesKeyOf: call.reusesKeyOf,
      result,
      phase,
      noTimeLeft,
      atMs: this.scheduler.clock.simulated,
    });
    if (!result.ok && 'status' in result) {
      // Invariant 5: a pending answer is pollable at once — never `not_found`, by get_operation nor as an
      // MCP task (docs/state-machine.md's task view), and the polls write nothing (invariant 8) — until the
      // TTL of the record it answered about: past it that record is gone (rule 2) and `not_found` is right
      // (a takeover refused near the TTL is pending until then; a clock jump may pass it before the poll).
      const caller = { tenant: this.tenant, user };
      const gone = (record: CallRecord | undefined) =>
        record !== undefined && classify(record, this.scheduler.clock.simulated) === 'expired';
      const [operation, task, record] = await Scheduler.observe(() =>
        asPoll('get_operation and tasks/get', async () => [
          await this.world.runtime.lookup(intent.tool, caller, call.key).catch(() => 'error' as const),
          await readTask(this.world.runtime, tool, caller, call.key).catch(() => 'error' as const),
          await this.world.runtime.readCall(intent.tool, caller, call.key).catch(() => undefined),
        ]),
      );
      this.#checkHint(`${actor} ${intent.tool} key ${call.key}`, operation, record);
      if (operation === undefined && !gone(about)) {
        this.violations.push(
          `5 pending not pollable: ${actor} ${intent.tool} key ${call.key} answered pending, get_operation says not_found`,
        );
      } else if (
        operation !== undefined &&
        operation !== 'error' &&
        operation.status !== 'completed' &&
        task === undefined
      ) {
        this.violations.push(
          `5 task not found: ${actor} ${intent.tool} key ${call.key}: get_operation says ${operation.status}, its task reads not found`,
        );
      }
    }
    return result;
  }

  /**
   * Liveness (docs/state-machine.md): a poll's hinted wait is the time to the call's next scheduled change —
   * an abandoned call's never shorter than its re-run's due time (an agent told "1 s" for a re-run 15 min
   * away polls in vain), a live call's never past its lock (its holder may store at any moment). A second
   * of slack: the poll and the read that checks it are two reads.
   */
  #checkHint(label: string, operation: unknown, record: CallRecord | undefined): void {
    if (!record || typeof operation !== 'object' || operation === null) return;
    const { status, retryAfterMs } = operation as { status?: string; retryAfterMs?: number };
    if (retryAfterMs === undefined) return;
    const now = this.scheduler.clock.simulated;
    // Its next scheduled change is the completer's look (`completerLooksAtMs`): its re-run's due time, or
    // sooner near its TTL — the last look, which gives it up (`expiring`) rather than let it expire
    // unreported (docs/state-machine.md, Liveness).
    if (status === 'abandoned' && retryAfterMs + 1_000 < completerLooksAtMs(record) - now) {
      this.violations.push(
        `liveness: ${label} polled abandoned, told to ask again after ${retryAfterMs} ms; the completer looks at it in ${completerLooksAtMs(record) - now} ms (its re-run due in ${completerDueAtMs(record) - now} ms)`,
      );
    }
    if (status === 'pending' && retryAfterMs > Math.max(1_000, record.lockEndsMs - now) + 1_000) {
      this.violations.push(
        `liveness: ${label} polled pending, told to ask again after ${retryAfterMs} ms; its lock ends in ${record.lockEndsMs - now} ms`,
      );
    }
  }

  /** Quiescence, then every invariant. */
  async quiesceAndCheck(): Promise<string[]> {
    const { scheduler } = this;
    const calm = new Scheduler({ seed: 1, plan: noFaults, holdMs: 0 }, scheduler.clock);
    await this.#rerunStoppedErases(calm);
    scheduler.clock.advance(QUIESCENCE_MS);
    // Every lock has ended: the calls that crashed are abandoned (or stalled) — their tasks still work.
    await this.#checkTasks('before the completer');
    // The completer runs until nothing is left (no faults now).
    const clock = scheduler.clock;
    const drainStartMs = clock.simulated;
    const drained = calm.spawn('completer-q', () =>
      this.completer.drain(callTime, (ms) => clock.advance(Math.max(0, ms - clock.now())), this.completerKind),
    );
    drained.then(
      (done) => {
        if (!done) this.violations.push(`liveness: the ${this.completerKind} completer still had work after its runs`);
        for (const recheck of this.completer.deadLetters) {
          this.violations.push(`liveness: recheck of ${recheck.key} failed every delivery (in the recheck DLQ)`);
        }
      },
      (error: unknown) =>
        this.violations.push(`liveness: the completer failed in quiescence: ${(error as Error).stack ?? error}`),
    );
    let completerDone = false;
    drained.then((done) => {
      completerDone = done;
    });
    await calm.run();
    this.#collectErased();
    // 2 (first half): the completer alone leaves nothing half done — no agent has retried yet.
    await this.#checkEffects('after the completer');
    if (completerDone) await this.#checkUnfinished(drainStartMs);
    // Every agent retries each of its calls with its key (those that had crashed too). A dedupe-window
    // call that never reached the store is not retried: asked now, past its window, it is a new intent.
    const asked = new Set(
      this.writes
        .filter((write) => write.call && write.table === 'idempotency')
        .map((write) => `${write.call!.intent}/${write.call!.key}`),
    );
    // One agent after the other: two agents racing to claim one key anew (past its TTL nothing finished
    // it) would answer each other `pending` with no time passing.
    calm.spawn('agents-q', async () => {
      for (const agent of this.scenario.agents) {
        const seen = new Set<string>();
        for (const call of agent.calls) {
          if (seen.has(`${call.intent}/${call.key}`)) continue;
          seen.add(`${call.intent}/${call.key}`);
          const windowed = this.#intents.get(call.intent)!.tool !== 'refund';
          if (windowed && !asked.has(`${call.intent}/${call.key}`)) continue;
          await this.#callUntilAnswered(`${agent.name}-q`, agent.user, call, 'quiescence');
        }
      }
    });
    await calm.run();
    await this.#checkEffects('at the end');

    this.#checkAnswers();
    await this.#checkTasks('at the end');
    await this.#checkErase();
    this.#checkWrites();
    return [...new Set(this.violations)];
  }

  /**
   * 2 (first half, calls): once the completer has run dry, it has left no call in flight that it could
   * finish — every record is settled, stalled (given up on: only a resend finishes it), or expired (past
   * its TTL the completer does not finish a call: rule 2's limit, docs/state-machine.md). And liveness
   * (rule 8): a call in flight whose last look came while the completer ran (`drainStartMs` on) was given
   * up there, not left to expire unreported — unless an answer said it is pending until its TTL (a resend
   * refused a lock past its last look: nothing runs it before then).
   */
  async #checkUnfinished(drainStartMs: number): Promise<void> {
    const now = this.scheduler.clock.simulated;
    for (const item of (await this.#readWorld()).records) {
      const record = callRecordOf(item, ATTR);
      const state = classify(record, now);
      const intent = this.#recordIntents.get(String(item[ATTR.key])) ?? '?';
      if (state === 'live' || state === 'abandoned') {
        this.violations.push(
          `2 unfinished (after the completer): intent ${intent}: a call record is still ${state} (attempt ${record?.attempt})`,
        );
      }
      if (
        state === 'expired' &&
        record?.status === STATUS.inProgress &&
        record.writtenBy !== 'powertools' &&
        record.stalledClaimId !== record.claimId &&
        lastLookMs(record.expiresAtS) >= drainStartMs &&
        !this.#toldPendingUntil(String(item[ATTR.key]), record.expiresAtS * 1000)
      ) {
        this.violations.push(
          `liveness: intent ${intent}: a call in flight expired unreported (attempt ${record.attempt}, its last look ${Math.round((lastLookMs(record.expiresAtS) - drainStartMs) / 1000)} s into the completer's runs), never given up, nor told pending until its TTL`,
        );
      }
    }
  }

  /** Whether an answer about the call record `id` said it is pending until `untilMs` (its TTL), or later. */
  #toldPendingUntil(id: string, untilMs: number): boolean {
    return this.answers.some(
      (answer) =>
        !answer.result.ok &&
        'status' in answer.result &&
        answer.atMs + answer.result.retry_after_ms >= untilMs - 1_000 &&
        this.#recordIntents.get(id) === answer.intent,
    );
  }

  /**
   * From the writes seen to succeed: rule 2's leases (`leaseViolations`: no lock past its record's TTL, no
   * claim anew under a live lock, on the simulation's clock), and 9 nothing brought back — the completer
   * never claims a call afresh (it takes over the claim it saw, or does nothing).
   */
  #checkWrites(): void {
    this.violations.push(...leaseViolations(this.writes, (actor) => this.#clockOffsets.get(actor) ?? 0));
    for (const write of this.writes) {
      if (!write.actor.startsWith('completer') || write.table !== 'idempotency' || write.command !== 'PutItem')
        continue;
      const item = write.input.Item as Record<string, { S?: string }> | undefined;
      const key = item?.[ATTR.key]?.S ?? '';
      if (item?.[ATTR.lockEnd] !== undefined && !key.includes('#intent#')) {
        this.violations.push(`9 brought back: ${write.actor} claimed ${key.slice(0, 14)}… afresh`);
      }
    }
  }

  /**
   * The task view (docs/state-machine.md): every key's task is its record, read — working while the record
   * is in flight, completed or failed with exactly the stored outcome (the receipt) as a replay
   * (`idempotent: true`: a read never commits, rule 5), not found when there is none — and no poll ever wrote (8).
   */
  async #checkTasks(when: string): Promise<void> {
    const world = await this.#readWorld();
    const byId = new Map(world.records.map((record) => [String(record[ATTR.key]), record]));
    for (const { intent: intentId, key, user } of this.#askedKeys()) {
      const intent = this.#intents.get(intentId)!;
      const caller = { tenant: this.tenant, user };
      const record = byId.get(recordKeyOf(intent.tool, [caller.tenant, caller.user, key]));
      const task = await asPoll('tasks/get', () =>
        readTask(this.world.runtime, this.world.tools[intent.tool]!, caller, key),
      );
      const label = `${intent.tool} key ${key} (${when})`;
      // Past its TTL a record is gone, whatever DynamoDB's sweep has not deleted yet (the clock jumps days).
      const expired = record !== undefined && Number(record[ATTR.expiry]) < Date.now() / 1000;
      const status = expired ? undefined : record?.[ATTR.status];
      if (status === 'COMPLETED') {
        const receipt = storedReceipt(record!);
        const expected =
          receipt === undefined
            ? { status: 'failed', idempotent: true }
            : { status: 'completed', idempotent: true, receipt };
        const seen =
          task?.status === 'completed' || task?.status === 'failed'
            ? {
                status: task.status,
                idempotent: 'idempotent' in task.result ? task.result.idempotent : undefined,
                ...(task.result.ok ? { receipt: task.result.receipt } : {}),
              }
            : { status: task?.status ?? 'not found' };
        if (JSON.stringify(seen) !== JSON.stringify(expected)) {
          this.violations.push(
            `8 task ≠ stored outcome: ${label}: ${JSON.stringify(seen)} vs ${JSON.stringify(expected)}`,
          );
        }
      } else if (status === 'INPROGRESS' && task?.status !== 'working') {
        this.violations.push(`8 task of a call in flight reads ${task?.status ?? 'not found'}: ${label}`);
      } else if ((status === undefined || status === 'ERASED') && task !== undefined) {
        this.violations.push(`8 task of no call reads ${task.status}: ${label}`);
      }
    }
    for (const write of new Set(this.world.pollWrites)) this.violations.push(`8 a poll wrote: ${write}`);
  }

  /** Every key an agent asked with, once, with its intent and user. */
  #askedKeys(): Array<{ intent: string; key: string; user: string }> {
    const asked = new Map<string, { intent: string; key: string; user: string }>();
    for (const agent of this.scenario.agents) {
      for (const call of agent.calls)
        asked.set(`${agent.user}/${call.intent}/${call.key}`, { ...call, user: agent.user });
    }
    return [...asked.values()];
  }

  /** Ids (record or domain) the erase actor deleted or overwrote. */
  #collectErased(): void {
    for (const write of this.writes) {
      if (!write.actor.startsWith('erase')) continue;
      const key = (write.input.Key ?? write.input.Item) as Record<string, { S?: string }>;
      this.erasedIds.add(normaliseKey(`${write.table}:${JSON.stringify(key)}`));
    }
  }

  /**
   * 1 at most one effect per intent; 2 nothing half done; 4 exactly one `idempotent: false` per effect.
   * Intents with the same arguments (one asked after the other's window) share their effects: as many
   * as intents at most, each claimed by its own call.
   */
  async #checkEffects(when: string): Promise<void> {
    const world = await this.#readWorld();
    for (const group of this.#sameArgsGroups()) {
      const [first] = group;
      const ids = new Set(group.map((intent) => intent.id));
      const label = group.map((intent) => intent.id).join('+');
      const effects = effectsOf(first!, world);
      const erased = group.some((intent) => this.#intentErased(intent));
      if (effects.length > group.length) {
        this.violations.push(`1 double effect (${when}): intent ${label} has ${effects.length} effects`);
      }
      // Rule 5's one exception, as docs/state-machine.md writes it: past the records' TTL a retry is a new
      // call that finds the effect made by another, and the record that said "executed" may have been
      // claimed anew — exactly one, or (only for an intent whose clock passed the TTL) at most one.
      const pastTtl = this.scheduler.clock.now() - this.scheduler.clock.start > 24 * 60 * 60_000;
      // 4: the commits that said "executed" — durable records with replayed: false.
      const executedRecords = world.records.filter(
        (record) => ids.has(this.#recordIntents.get(record.id as string)!) && storedReplayed(record) === false,
      );
      // A call whose record expired in flight is not finished by the completer (rule 2's limit) — nor one
      // erase deleted once expired: until a caller resends it (at the end, every agent has), its effect may
      // be half done.
      const expiredInFlight =
        when === 'after the completer' &&
        (world.records.some(
          (item) =>
            ids.has(this.#recordIntents.get(String(item[ATTR.key])) ?? '') &&
            item[ATTR.status] === 'INPROGRESS' &&
            classify(callRecordOf(item, ATTR), this.scheduler.clock.simulated) === 'expired',
        ) ||
          this.writes.some((write) => {
            if (!write.actor.startsWith('erase') || write.table !== 'idempotency') return false;
            if (write.command !== 'DeleteItem') return false;
            const id = (write.input.Key as Record<string, { S?: string }>)[ATTR.key]?.S ?? '';
            return ids.has(this.#recordIntents.get(id) ?? '');
          }));
      for (const effect of effects) {
        // Only an erased domain item excuses an effect the domain does not show: an erased *record* of a
        // call in flight would be erase's own violation.
        if (!effect.domainShows && !this.#domainErased(first!) && !expiredInFlight) {
          this.violations.push(
            `2 half done (${when}): intent ${label}: ${effect.what} happened, the domain does not show it`,
          );
        }
        if (when !== 'at the end' || erased) continue;
        // The receipt is reachable under one of the intents' keys.
        let reachable = false;
        for (const { key, user } of group.flatMap((intent) => this.#keysOf(intent.id))) {
          const operation = await asPoll('get_operation', () =>
            this.world.runtime.lookup(first!.tool, { tenant: this.tenant, user }, key).catch(() => undefined),
          );
          if (operation?.status === 'completed' && effect.matches(operation.receipt)) reachable = true;
        }
        if (!reachable)
          this.violations.push(`2 no receipt: intent ${label}: ${effect.what} has no receipt under any of its keys`);
        // A stored failure (no receipt) that said "executed" may be any effect's.
        const executed = executedRecords.filter((record) => {
          const receipt = storedReceipt(record);
          return receipt === undefined || effect.matches(receipt);
        }).length;
        if (executed > 1 || (executed === 0 && !pastTtl)) {
          this.violations.push(
            `4 executed ${executed}× : intent ${label}: ${effect.what} has ${executed} receipts committed as executed (idempotent: false)`,
          );
        }
      }
      if (when !== 'at the end' || erased) continue;
      // Every answer counts, the completer's re-runs' too (an answer nobody reads still says who executed).
      const falseAnswers = [
        ...this.answers.filter((a) => ids.has(a.intent) && a.result.ok && !a.result.idempotent),
        ...this.completer.answers.filter(
          (a) =>
            a.tool === first!.tool &&
            canonicalize(a.args) === canonicalize(first!.args) &&
            a.result.ok &&
            !a.result.idempotent,
        ),
      ];
      if (falseAnswers.length > effects.length) {
        this.violations.push(
          `4 executed ${falseAnswers.length}× : intent ${label} has ${effects.length} effect(s), ${falseAnswers.length} answers said idempotent: false`,
        );
      }
    }
  }

  /** The scenario's intents, those with the same arguments (`sameArgsAs`) together. */
  #sameArgsGroups(): IntentSpec[][] {
    const groups = new Map<string, IntentSpec[]>();
    for (const intent of this.scenario.intents) {
      const root = intent.sameArgsAs ?? intent.id;
      groups.set(root, [...(groups.get(root) ?? []), intent]);
    }
    return [...groups.values()];
  }

  /** 3 one receipt per key, other arguments never run; 7 only documented answers; liveness at the end. */
  #checkAnswers(): void {
    const byKey = new Map<string, Answer[]>();
    for (const answer of this.answers) {
      const tool = this.#intents.get(answer.intent)!.tool;
      const list = byKey.get(`${tool}/${answer.key}`) ?? [];
      list.push(answer);
      byKey.set(`${tool}/${answer.key}`, list);
    }
    for (const [key, answers] of byKey) {
      const ok = answers.filter((a) => a.result.ok) as Array<Answer & { result: { ok: true; receipt: JsonObject } }>;
      const intents = new Set(ok.map((a) => a.intent));
      if (intents.size > 1) this.violations.push(`3 other arguments ran under key ${key}: ${[...intents].join(', ')}`);
      const receipts = new Set(
        ok.filter((a) => a.intent === ok[0]?.intent).map((a) => JSON.stringify(a.result.receipt)),
      );
      if (receipts.size > 1) this.violations.push(`3 two receipts for key ${key}: ${[...receipts].join(' / ')}`);
    }
    for (const answer of this.answers) {
      const { result } = answer;
      const label = `${answer.actor} ${answer.intent} key ${answer.key}`;
      if (result.ok) {
        if (answer.reusesKeyOf && !this.#releasedBefore(answer)) {
          this.violations.push(
            `3 other arguments ran: ${label} reused the key of ${answer.reusesKeyOf} and was answered ok`,
          );
        }
        continue;
      }
      if ('status' in result) {
        if (answer.phase === 'quiescence') this.violations.push(`liveness: ${label} still pending after quiescence`);
        continue;
      }
      const code = result.error.code;
      // `conflict` is right only for a key that more than one intent uses (whichever came first).
      if (code === 'conflict' && this.#sharedKey(answer.key)) continue;
      if (code === 'unavailable' && answer.phase === 'schedule') continue;
      if (code === 'not_found' && this.eraseStarted) continue;
      if (code === this.#intents.get(answer.intent)?.failsWith) continue;
      this.violations.push(
        `7 undocumented answer: ${label} → ${code} (${result.error.message})${answer.noTimeLeft ? ' [no time left]' : ''}`,
      );
    }
  }

  /** Whether agents use `key` for more than one intent. */
  #sharedKey(key: string): boolean {
    const intents = new Set<string>();
    for (const agent of this.scenario.agents)
      for (const call of agent.calls) if (call.key === key) intents.add(call.intent);
    return intents.size > 1;
  }

  /** A key reused for another intent may run only if the first intent never got past its claim. */
  #releasedBefore(answer: Answer): boolean {
    return !this.answers.some((a) => a.key === answer.key && a.intent === answer.reusesKeyOf && a.result.ok);
  }

  /** 6 erase is final: nothing it erased reappears, no erased message is delivered. */
  async #checkErase(): Promise<void> {
    if (!this.scenario.erase) return;
    const world = await this.#readWorld();
    const present = new Map<string, Record<string, unknown>>();
    for (const record of world.records)
      present.set(normaliseKey(`idempotency:${JSON.stringify({ id: record.id })}`), record);
    for (const message of world.outbox) {
      const key = { tenant: message.tenant, message_id: message.message_id };
      present.set(normaliseKey(`outbox:${JSON.stringify(key)}`), message);
    }
    for (const invoice of world.invoices) {
      const key = { tenant: invoice.tenant, invoice_id: invoice.invoice_id };
      present.set(normaliseKey(`invoices:${JSON.stringify(key)}`), invoice);
    }
    for (const id of this.erasedIds) {
      const item = present.get(id);
      if (!item || item[ATTR.status] === 'ERASED') continue;
      // A tombstone holds its key until its TTL; past it a call under the key is a new one (rule 6).
      if (id.startsWith('idempotency:') && Number(item[ATTR.createdAt]) > this.#tombstoneExpiryS(id) * 1000) continue;
      this.violations.push(`6 erased item reappeared: ${id.slice(0, 80)}`);
    }
  }

  /**
   * The TTL (epoch s) the record `id` (as `erasedIds` names it) held when erase first wrote it: what its
   * claim or its stored outcome set last before. Infinity when unknown (nothing passes it then).
   */
  #tombstoneExpiryS(id: string): number {
    let expiryS = Number.POSITIVE_INFINITY;
    for (const write of this.writes) {
      if (write.table !== 'idempotency') continue;
      const key = (write.input.Key ?? write.input.Item) as Record<string, { S?: string }>;
      if (normaliseKey(`idempotency:${JSON.stringify({ id: key[ATTR.key]?.S })}`) !== id) continue;
      if (write.actor.startsWith('erase')) return expiryS;
      const item = write.input.Item as Record<string, { N?: string }> | undefined;
      const values = write.input.ExpressionAttributeValues as Record<string, { N?: string }> | undefined;
      const set = item?.[ATTR.expiry]?.N ?? values?.[':expiry']?.N;
      if (set !== undefined) expiryS = Number(set);
    }
    return expiryS;
  }

  /** The intent's domain item (the invoice it refunds, the message it queued) was erased. */
  #domainErased(intent: IntentSpec): boolean {
    const domain = intent.tool === 'refund' ? 'invoices:' : intent.tool === 'send_email' ? 'outbox:' : 'tickets:';
    return [...this.erasedIds].some((id) => id.startsWith(domain));
  }

  /** The intent's records or domain items were erased: its receipts are gone by design. */
  #intentErased(intent: IntentSpec): boolean {
    if (!this.scenario.erase || this.erasedIds.size === 0) return false;
    if (this.#domainErased(intent)) return true;
    const records = [...this.#recordIntents].filter(([, id]) => id === intent.id).map(([record]) => record);
    return records.some((record) => this.erasedIds.has(normaliseKey(`idempotency:${JSON.stringify({ id: record })}`)));
  }

  /** Call record id → intent, from the claims the runtime wrote for each call. */
  get #recordIntents(): Map<string, string> {
    const map = new Map<string, string>();
    for (const write of this.writes) {
      if (write.table !== 'idempotency' || !write.call) continue;
      if (!/^(Put|Update)Item$/.test(write.command)) continue;
      const key = (write.input.Key ?? write.input.Item) as Record<string, { S?: string } | string>;
      const id = key[ATTR.key];
      const text = typeof id === 'string' ? id : id?.S;
      if (text && !text.includes('#intent#')) map.set(text, write.call.intent);
    }
    return map;
  }

  #keysOf(intent: string): Array<{ key: string; user: string }> {
    const keys = new Map<string, string>();
    for (const agent of this.scenario.agents) {
      for (const call of agent.calls) if (call.intent === intent) keys.set(call.key, agent.user);
    }
    return [...keys].map(([key, user]) => ({ key, user }));
  }

  async #readWorld(): Promise<WorldState> {
    const { documents } = this.world;
    const env = this.world.env;
    const query = async (table: 'invoices' | 'outbox' | 'tickets') =>
      (
        await documents.send(
          new QueryCommand({
            TableName: tableName(table, env),
            KeyConditionExpression: 'tenant = :t',
            ExpressionAttributeValues: { ':t': this.tenant },
            ConsistentRead: true,
          }),
        )
      ).Items ?? [];
    const scan = async (table: 'ledger' | 'idempotency') => {
      const items: Record<string, unknown>[] = [];
      let start: Record<string, unknown> | undefined;
      do {
        const page = await documents.send(
          new ScanCommand({
            TableName: tableName(table, env),
            FilterExpression: 'tenant = :t',
            ExpressionAttributeValues: { ':t': this.tenant },
            ConsistentRead: true,
            ExclusiveStartKey: start,
          }),
        );
        items.push(...(page.Items ?? []));
        start = page.LastEvaluatedKey;
      } while (start);
      return items;
    };
    return {
      invoices: await query('invoices'),
      outbox: await query('outbox'),
      tickets: await query('tickets'),
      ledger: (await scan('ledger')) as unknown as Movement[],
      records: (await scan('idempotency')).filter((item) => !String(item.id).includes('#intent#')),
    };
  }
}

interface WorldState {
  readonly invoices: Record<string, unknown>[];
  readonly outbox: Record<string, unknown>[];
  readonly tickets: Record<string, unknown>[];
  readonly ledger: Movement[];
  readonly records: Record<string, unknown>[];
}

interface Effect {
  readonly what: string;
  readonly domainShows: boolean;
  matches(receipt: JsonObject): boolean;
}

/** The effects of an intent in the world, as the provider and the domain tables hold them. */
function effectsOf(intent: IntentSpec, world: WorldState): Effect[] {
  const args = intent.args as Record<string, unknown>;
  switch (intent.tool) {
    case 'refund': {
      const invoice = world.invoices.find((item) => item.invoice_id === args.invoice_id);
      return world.ledger
        .filter((movement) => movement.invoice_id === args.invoice_id)
        .map((movement) => ({
          what: `refund ${movement.movement_id}`,
          domainShows: (invoice?.refund as { refund_id?: string } | undefined)?.refund_id === movement.movement_id,
          matches: (receipt) => receipt.refund_id === movement.movement_id,
        }));
    }
    case 'send_email':
      return world.outbox
        .filter((message) => message.body === args.body)
        .map((message) => ({
          what: `message ${message.message_id} (${message.status})`,
          domainShows: message.status === 'delivered',
          matches: (receipt) => receipt.message_id === message.message_id,
        }));
    case 'create_ticket':
      return world.tickets
        .filter((ticket) => ticket.title === args.title)
        .map((ticket) => ({
          what: `ticket ${ticket.ticket_key}`,
          domainShows: true,
          matches: (receipt) => receipt.ticket_key === ticket.ticket_key,
        }));
  }
}

/** A stored call record's receipt (undefined: no result, or a stored failure). */
function storedReceipt(record: Record<string, unknown>): JsonObject | undefined {
  const data = record[ATTR.data] as { receipt?: string } | undefined;
  return data?.receipt === undefined ? undefined : (JSON.parse(data.receipt) as JsonObject);
}

/** Whether a stored call record says its result was itself a replay (undefined: no result stored). */
function storedReplayed(record: Record<string, unknown>): boolean | undefined {
  if (record[ATTR.status] !== 'COMPLETED') return undefined;
  const data = record[ATTR.data] as { replayed?: boolean } | undefined;
  return data?.replayed;
}

/** `table:{attr:{S:value}}` with the key's attributes in one order, whichever order a writer used. */
function normaliseKey(id: string): string {
  const colon = id.indexOf(':');
  const key = JSON.parse(id.slice(colon + 1)) as Record<string, { S?: string } | string>;
  const values = Object.keys(key)
    .sort()
    .map((name) => {
      const value = key[name];
      return `${name}=${typeof value === 'string' ? value : value?.S}`;
    });
  return `${id.slice(0, colon)}:${values.join('&')}`;
}

/** A Lambda-like deadline: the call's time, counted on the simulated clock. */
function callTime(ms = CALL_TIME_MS) {
  const end = Date.now() + ms;
  return { getRemainingTimeInMillis: () => end - Date.now() };
}
