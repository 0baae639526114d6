import type { ErrorCode } from '../../lib/idempotency/errors';
import type { JsonObject } from '../../lib/idempotency/types';
import type { ScriptedFault } from './scheduler';

/**
 * Scenarios: who acts in one schedule, with which intents. An *intent* is one effect the caller wants
 * (one refund of an invoice, one email with this body, one ticket with this title); agents may call it
 * under several client keys — a retry with the same key, the model minting a new key for the same
 * arguments, a key reused with other arguments.
 */
export type ExploredTool = 'refund' | 'send_email' | 'create_ticket';

export interface IntentSpec {
  readonly id: string;
  readonly tool: ExploredTool;
  readonly args: JsonObject;
  /**
   * The same arguments as this intent, asked after its dedupe window: a new intent (as documented), so
   * the two may make one effect each — and each effect is claimed by one `idempotent: false` of either.
   */
  readonly sameArgsAs?: string;
  /** The call is refused by the tool on every attempt with this business error (nothing happens). */
  readonly failsWith?: ErrorCode;
}

/** One call an agent makes: an intent under a key. */
export interface CallSpec {
  readonly intent: string;
  readonly key: string;
  /** Tries while the answer is `pending` or `unavailable` (the model gives up after them). @default 3 */
  readonly tries?: number;
  /**
   * The key was first used for another intent: the only right answers are `conflict` (or `pending`
   * while the first runs) — never an effect of these arguments.
   */
  readonly reusesKeyOf?: string;
  /** Between tries, the agent waits the `retry_after_ms` a `pending` answer names. @default false */
  readonly waitsRetryAfter?: boolean;
  /**
   * The call is handed to the completer (`InvokeOptions.handOff`: an MCP task of a long-running tool): its
   * first claim parks at once, unrun (`unrun_attempts`), and the completer's attempt is its first run.
   * @default false
   */
  readonly handOff?: boolean;
}

export interface AgentSpec {
  readonly name: string;
  readonly user: string;
  readonly calls: readonly CallSpec[];
  /** The agent starts this long after the schedule (a scheduled clock step): earlier locks have expired. */
  readonly afterMs?: number;
  /** How the agent's actor is scheduled, and its clock's offset (a worker whose clock is skewed). */
  readonly actor?: ActorSpec;
}

/** How an actor is scheduled (scheduler.ts `SpawnOptions`), and when it comes back. */
export interface ActorSpec {
  /** Moves only once the ordinary actors are done, crashed or stalled (a caller coming back later). */
  readonly late?: boolean;
  /** Its requests fall at random places among the others' (its priority drawn again at each step). */
  readonly shuffled?: boolean;
  /** Moves only from this step of the schedule on. */
  readonly fromStep?: number;
  /** Its clock's offset from the simulation's, ms. */
  readonly clockOffsetMs?: number;
  /**
   * Starts this long before the TTL of the scenario's `ttlRecord` (read when it starts; at once when
   * there is none, or the time has passed). Implies `late`.
   */
  readonly beforeTtlMs?: number;
}

/** One tenant erase the operator runs during the schedule. */
export interface EraseSpec extends ActorSpec {
  readonly includeDomain: boolean;
  /** The operator starts it that long after the schedule began (a scheduled step moves the clock first). */
  readonly afterMs?: number;
}

export interface ScenarioSpec {
  readonly name: string;
  readonly intents: readonly IntentSpec[];
  readonly agents: readonly AgentSpec[];
  /** Invoices to create before the schedule (refund intents need them). */
  readonly invoices: readonly { readonly invoice_id: string; readonly amount: number }[];
  /** Completer invocations during the schedule (more run in quiescence). */
  readonly completerRuns: number;
  /** Each completer invocation first waits this long (a scheduled clock step): locks have expired. */
  readonly completerAfterMs?: number;
  /** Completer invocations that come late (`ActorSpec`): after the ordinary actors, near a TTL, skewed. */
  readonly lateCompleters?: readonly (ActorSpec & { readonly afterMs?: number })[];
  /**
   * An erase of the tenant during the schedule (or several, one after the other's start), with or
   * without the domain tables.
   */
  readonly erase?: EraseSpec | readonly EraseSpec[];
  /** The call record whose TTL actors with `beforeTtlMs` time themselves by. */
  readonly ttlRecord?: { readonly intent: string; readonly key: string; readonly user: string };
  /** Faults scripted at an actor's n-th request, in every schedule (the base one too). */
  readonly scripted?: readonly ScriptedFault[];
  /**
   * The stream hands records to the completer twice, late (after newer ones) or out of order, and the
   * recheck queue delivers a message twice (at least once, as SQS does): completer-driver.ts.
   */
  readonly streamFaults?: boolean;
  /**
   * Clock jumps the schedule may make, ms. Past a lock everywhere; past a dedupe window or a record's
   * TTL only where a call asked later is still the same intent (a natural key).
   * @default [LOCK_JUMP_MS]
   */
  readonly clockJumps?: readonly number[];
}

/** Past every lock (a call's 30 s). */
export const LOCK_JUMP_MS = 31_000;

/** A record's TTL (refund's and send_email's default ttlSeconds). */
export const TTL_MS = 24 * 60 * 60_000;
/** A dedupe window (send_email's, create_ticket's). */
export const WINDOW_MS = 10 * 60_000;

const email = (n: number) => ({ to: 'ada@example.com', subject: `Hello ${n}`, body: `Message body ${n}` });

/** One intent's arguments for each explored tool (the refund's invoice is `inv_1`, 4200). */
function argsOf(tool: ExploredTool): JsonObject {
  if (tool === 'refund') return { invoice_id: 'inv_1', amount: 4200 };
  return tool === 'send_email' ? email(1) : { title: 'Printer on fire', body: 'Third floor.' };
}

/**
 * The scenarios, built for one seed's choices (`pick(n)` draws from the schedule's seed), each aimed at
 * one part of the protocol; together they cover every actor and every record kind.
 */
export const SCENARIOS: Record<string, (pick: (n: number) => number) => ScenarioSpec> = {
  /** Natural key: one refund per invoice, whatever keys the agents mint, crashes and the completer. */
  refund_keys: (pick) => ({
    name: 'refund_keys',
    invoices: [{ invoice_id: 'inv_1', amount: 4200 }],
    intents: [{ id: 'refund', tool: 'refund', args: { invoice_id: 'inv_1', amount: 4200 } }],
    agents: Array.from({ length: 2 + pick(2) }, (_, i) => ({
      name: `agent${i}`,
      user: 'ada',
      calls: [
        { intent: 'refund', key: `k${i}` },
        // The model lost the answer and minted a new key; sometimes it retried the same one.
        { intent: 'refund', key: pick(2) === 0 ? `k${i}` : `k${i}b` },
      ],
    })),
    completerRuns: 1 + pick(2),
    // One refund per invoice holds past any window and past every record's 24 h TTL.
    clockJumps: [LOCK_JUMP_MS, 11 * 60_000, 25 * 60 * 60_000],
  }),

  /** Dedupe window: identical emails under fresh keys, a key reused with another email, the completer. */
  email_window: (pick) => ({
    name: 'email_window',
    invoices: [],
    intents: [
      { id: 'e1', tool: 'send_email', args: email(1) },
      { id: 'e2', tool: 'send_email', args: email(2) },
    ],
    agents: [
      {
        name: 'agentA',
        user: 'ada',
        calls: [
          { intent: 'e1', key: 'k1' },
          { intent: 'e1', key: 'k1' },
        ],
      },
      {
        name: 'agentB',
        user: 'ada',
        calls:
          pick(2) === 0
            ? [{ intent: 'e1', key: 'k2' }]
            : [
                { intent: 'e1', key: 'k2' },
                { intent: 'e1', key: 'k3' },
              ],
      },
      {
        name: 'agentC',
        user: 'ada',
        calls: [
          { intent: 'e2', key: 'k1', reusesKeyOf: 'e1' },
          { intent: 'e2', key: 'k4' },
        ],
      },
    ],
    completerRuns: 1 + pick(2),
  }),

  /**
   * A model that gives up on a call after one failure and reuses its key for another email, then
   * re-issues the first email under a fresh key: the key's other arguments must never meet the first
   * email's effect, and the fresh key must never be refused.
   */
  key_reuse: (pick) => ({
    name: 'key_reuse',
    invoices: [],
    intents: [
      { id: 'e1', tool: 'send_email', args: email(1) },
      { id: 'e2', tool: 'send_email', args: email(2) },
    ],
    agents: [
      {
        name: 'agentA',
        user: 'ada',
        calls: [
          { intent: 'e1', key: 'k1', tries: 1 },
          { intent: 'e2', key: 'k1', reusesKeyOf: 'e1', tries: 1 },
          { intent: 'e1', key: 'k2' },
        ],
      },
    ],
    completerRuns: pick(2),
  }),

  /**
   * A dedupe window taken over: the first call dies inside its window, a fresh key for the same email
   * takes the intent over after the first lock expired — and may fail in turn; every retry, the
   * completer's included, must find the one email, never send a second under another downstream key.
   */
  window_takeover: (pick) => ({
    name: 'window_takeover',
    invoices: [],
    intents: [{ id: 'e1', tool: 'send_email', args: email(1) }],
    agents: [
      { name: 'agentA', user: 'ada', calls: [{ intent: 'e1', key: 'k1', tries: 1 }] },
      { name: 'agentB', user: 'ada', afterMs: LOCK_JUMP_MS, calls: [{ intent: 'e1', key: 'k2', tries: 1 }] },
    ],
    completerRuns: pick(2),
  }),

  /**
   * A dedupe window ending while its holder is abandoned: the first email may be delivered by a worker
   * that dies before storing it; after the window the same email under a fresh key is a new intent,
   * and the holder's retry (or the completer) comes back: each delivered message is claimed by its own
   * call's `idempotent: false`, never answered with the other's receipt.
   */
  window_abandoned: (pick) => ({
    name: 'window_abandoned',
    invoices: [],
    intents: [
      { id: 'e1', tool: 'send_email', args: email(1) },
      { id: 'e1next', tool: 'send_email', args: email(1), sameArgsAs: 'e1' },
    ],
    agents: [
      {
        name: 'agentA',
        user: 'ada',
        calls: [
          { intent: 'e1', key: 'k1', tries: 1 },
          { intent: 'e1', key: 'k1', tries: 1 },
        ],
      },
      {
        name: 'agentB',
        user: 'ada',
        afterMs: WINDOW_MS + [1_000, LOCK_JUMP_MS][pick(2)]!,
        calls: [{ intent: 'e1next', key: 'k2', tries: 1 + pick(2) }],
      },
    ],
    completerRuns: 1 + pick(2),
    completerAfterMs: LOCK_JUMP_MS,
  }),

  /** Tickets under the window, with the completer: creates that must happen once. */
  ticket_window: (pick) => ({
    name: 'ticket_window',
    invoices: [],
    intents: [{ id: 't1', tool: 'create_ticket', args: { title: 'Printer on fire', body: 'Third floor.' } }],
    agents: [
      { name: 'agentA', user: 'ada', calls: [{ intent: 't1', key: 'k1' }] },
      { name: 'agentB', user: 'ada', calls: [{ intent: 't1', key: pick(2) === 0 ? 'k1' : 'k2' }] },
    ],
    completerRuns: 1 + pick(2),
  }),

  /**
   * The completer re-runs a refund whose worker died, and its re-runs meet faults of their own: work
   * that may have moved money is never forgotten, whatever fails in between.
   */
  completer_faults: (pick) => ({
    name: 'completer_faults',
    invoices: [{ invoice_id: 'inv_1', amount: 4200 }],
    intents: [{ id: 'refund', tool: 'refund', args: { invoice_id: 'inv_1', amount: 4200 } }],
    agents: [{ name: 'agentA', user: 'ada', calls: [{ intent: 'refund', key: 'k1', tries: 1 }] }],
    completerRuns: 2 + pick(2),
    completerAfterMs: LOCK_JUMP_MS,
  }),

  /**
   * Erase without the domain tables, run a while after a refund whose worker may have died: a call in
   * flight (abandoned included) is kept for the completer, and the kept invoice ends up showing it.
   */
  erase_abandoned: (pick) => ({
    name: 'erase_abandoned',
    invoices: [{ invoice_id: 'inv_1', amount: 4200 }],
    intents: [{ id: 'refund', tool: 'refund', args: { invoice_id: 'inv_1', amount: 4200 } }],
    agents: [{ name: 'agentA', user: 'ada', calls: [{ intent: 'refund', key: 'k1', tries: 1 }] }],
    completerRuns: pick(2),
    erase: { includeDomain: false, afterMs: LOCK_JUMP_MS },
  }),

  /**
   * An email whose worker may have died, the completer finishing it and an erase of everything (its
   * body included) racing: nothing erased is delivered or comes back.
   */
  erase_email: (pick) => ({
    name: 'erase_email',
    invoices: [],
    intents: [{ id: 'e1', tool: 'send_email', args: email(1) }],
    agents: [{ name: 'agentA', user: 'ada', calls: [{ intent: 'e1', key: 'k1', tries: 1 }] }],
    completerRuns: 1 + pick(2),
    completerAfterMs: LOCK_JUMP_MS,
    erase: { includeDomain: true, afterMs: LOCK_JUMP_MS },
  }),

  /** Erase while calls run and the completer works: what it erased stays erased, nothing left half done. */
  erase: (pick) => ({
    name: 'erase',
    invoices: [{ invoice_id: 'inv_1', amount: 4200 }],
    intents: [
      { id: 'refund', tool: 'refund', args: { invoice_id: 'inv_1', amount: 4200 } },
      { id: 'e1', tool: 'send_email', args: email(1) },
    ],
    agents: [
      { name: 'agentA', user: 'ada', calls: [{ intent: 'refund', key: 'k1' }] },
      { name: 'agentB', user: 'ada', calls: [{ intent: 'e1', key: 'k2' }] },
    ],
    completerRuns: 1 + pick(2),
    erase: { includeDomain: pick(2) === 0 },
  }),

  /**
   * A call left in flight almost until its record's TTL (the completer gave up on it, or never saw it):
   * its worker died inside the attempt — after its claim, before the provider, after the money moved,
   * after the invoice — and a retry with its key and the completer come back in its last lock-length (a
   * takeover whose lock would outlive the record is refused: `pending` until the record expires) or just
   * before it; the clock may step past the TTL between a refusal and its poll. Sometimes erase runs then
   * too. Guards rule 2: no lock ends after its record's TTL; nothing half done once a resend came.
   */
  near_ttl: (pick) => {
    // Past the last look (TTL − 70 s), and before it within a minute and a lock of it (review 32, F1).
    const before = [1_000, 12_000, 29_000, 45_000, 75_000, 100_000, 130_000];
    return {
      name: 'near_ttl',
      invoices: [{ invoice_id: 'inv_1', amount: 4200 }],
      intents: [{ id: 'refund', tool: 'refund', args: { invoice_id: 'inv_1', amount: 4200 } }],
      agents: [
        { name: 'agentA', user: 'ada', calls: [{ intent: 'refund', key: 'k1', tries: 1 }] },
        {
          name: 'agentB',
          user: 'ada',
          actor: { beforeTtlMs: before[pick(before.length)]!, shuffled: true },
          calls: [{ intent: 'refund', key: 'k1', tries: 1 + pick(3), waitsRetryAfter: true }],
        },
      ],
      ttlRecord: { intent: 'refund', key: 'k1', user: 'ada' },
      scripted: [{ actor: 'agentA', nth: 2 + pick(4), fault: 'crash' }],
      completerRuns: 0,
      lateCompleters: Array.from({ length: 1 + pick(2) }, () => ({
        beforeTtlMs: before[pick(before.length)]!,
        shuffled: true,
      })),
      ...(pick(3) === 0
        ? { erase: { includeDomain: pick(2) === 0, beforeTtlMs: before[pick(before.length)]!, shuffled: true } }
        : {}),
      clockJumps: [1_000, 5_000, LOCK_JUMP_MS],
    };
  },

  /**
   * A slow effect: the first attempt stalls past its lock inside its work (before the provider, the
   * commit or the store; sent late, or sent at once and then slow), and a retry — with its key, or a
   * fresh key for the same arguments — and the completer take over meanwhile; the first attempt then
   * goes on. Both commit under one downstream key: one effect, and one answer says `idempotent: false`.
   */
  slow_holder: (pick) => {
    const tool = (['refund', 'send_email', 'create_ticket'] as const)[pick(3)]!;
    const args = argsOf(tool);
    // The attempt's requests after its claim: refund and send_email 4, create_ticket 3.
    const requests = tool === 'create_ticket' ? 3 : 4;
    return {
      name: 'slow_holder',
      invoices: [{ invoice_id: 'inv_1', amount: 4200 }],
      intents: [{ id: 'i1', tool, args }],
      agents: [
        { name: 'agentA', user: 'ada', calls: [{ intent: 'i1', key: 'k1', tries: 1 }] },
        {
          name: 'agentB',
          user: 'ada',
          actor: { late: true, shuffled: true },
          calls: [{ intent: 'i1', key: pick(2) === 0 ? 'k1' : 'k2' }],
        },
      ],
      scripted: [{ actor: 'agentA', nth: 2 + pick(requests), fault: pick(2) === 0 ? 'stall' : 'hold' }],
      completerRuns: 0,
      lateCompleters: Array.from({ length: 1 + pick(2) }, () => ({ shuffled: true })),
    };
  },

  /**
   * The stream hands records to the completer twice, late (after newer ones) and out of order, and the
   * recheck queue delivers messages twice, while a refund, an email and a refund refused on its first
   * attempt (its claim released) are abandoned and finished: no second effect, nothing brought back.
   */
  stream_faults: (pick) => ({
    name: 'stream_faults',
    invoices: [
      { invoice_id: 'inv_1', amount: 4200 },
      { invoice_id: 'inv_2', amount: 1300 },
    ],
    intents: [
      { id: 'refund', tool: 'refund', args: { invoice_id: 'inv_1', amount: 4200 } },
      { id: 'e1', tool: 'send_email', args: email(1) },
      { id: 'wrong', tool: 'refund', args: { invoice_id: 'inv_2', amount: 99 }, failsWith: 'invalid_args' },
    ],
    agents: [
      { name: 'agentA', user: 'ada', calls: [{ intent: 'refund', key: 'k1', tries: 1 }] },
      { name: 'agentB', user: 'ada', calls: [{ intent: 'e1', key: 'k2', tries: 1 }] },
      { name: 'agentC', user: 'ada', calls: [{ intent: 'wrong', key: 'k3', tries: 1 }] },
    ],
    completerRuns: 2 + pick(3),
    completerAfterMs: pick(2) === 0 ? LOCK_JUMP_MS : 11_000,
    streamFaults: true,
  }),

  /**
   * Erase started at any step (drawn per seed over the first 60) and its requests falling anywhere among
   * the others' — sometimes twice, with and without the domain tables — while a refund, an email and a
   * ticket run, crash and are finished: rule 6 (erase is final, keeps what is in flight).
   */
  erase_anywhere: (pick) => ({
    name: 'erase_anywhere',
    invoices: [{ invoice_id: 'inv_1', amount: 4200 }],
    intents: [
      { id: 'refund', tool: 'refund', args: argsOf('refund') },
      { id: 'e1', tool: 'send_email', args: argsOf('send_email') },
      { id: 't1', tool: 'create_ticket', args: argsOf('create_ticket') },
    ],
    agents: [
      {
        name: 'agentA',
        user: 'ada',
        calls: [
          { intent: 'refund', key: 'k1', tries: 2 },
          { intent: 'refund', key: pick(2) === 0 ? 'k1' : 'k1b', tries: 1 },
        ],
      },
      { name: 'agentB', user: 'ada', calls: [{ intent: 'e1', key: 'k2', tries: 2 }] },
      { name: 'agentC', user: 'ada', calls: [{ intent: 't1', key: 'k3', tries: 2 }] },
    ],
    completerRuns: 1 + pick(2),
    completerAfterMs: LOCK_JUMP_MS,
    erase: [
      { includeDomain: pick(2) === 0, fromStep: pick(60), shuffled: true },
      ...(pick(2) === 0 ? [{ includeDomain: pick(2) === 0, fromStep: pick(60), shuffled: true }] : []),
    ],
  }),

  /**
   * Three to five attempts of one call at once: agents sending the same key and arguments, racing to take
   * over the first attempt (which dies or stalls inside its work) while each other's locks end, and the
   * completer taking it over too.
   */
  crowd: (pick) => {
    const tool = (['refund', 'send_email', 'create_ticket'] as const)[pick(3)]!;
    const args = argsOf(tool);
    return {
      name: 'crowd',
      invoices: [{ invoice_id: 'inv_1', amount: 4200 }],
      intents: [{ id: 'i1', tool, args }],
      agents: [
        { name: 'agent0', user: 'ada', calls: [{ intent: 'i1', key: 'k1', tries: 1 }] },
        ...Array.from({ length: 2 + pick(3) }, (_, i) => ({
          name: `agent${i + 1}`,
          user: 'ada',
          afterMs: pick(2) === 0 ? LOCK_JUMP_MS : 0,
          actor: { late: true, shuffled: true },
          calls: [{ intent: 'i1', key: 'k1', waitsRetryAfter: pick(2) === 0 }],
        })),
      ],
      scripted: [{ actor: 'agent0', nth: 2 + pick(3), fault: (['crash', 'hold', 'stall'] as const)[pick(3)]! }],
      completerRuns: 0,
      lateCompleters: Array.from({ length: 1 + pick(2) }, () => ({ shuffled: true })),
    };
  },

  /**
   * Workers whose clocks disagree by a few seconds (each actor's own offset, the times its conditions
   * carry too): fresh keys for one refund racing takeovers under skew, and near the TTL a retry behind
   * true time taking the call over while a worker ahead of it claims the key anew. Guards what skew the
   * protocol tolerates (docs/state-machine.md): no attempt runs beside another call instance.
   */
  clock_skew: (pick) => {
    const skew = () => [-3_000, -1_000, 0, 1_000, 3_000][pick(5)]!;
    return {
      name: 'clock_skew',
      invoices: [{ invoice_id: 'inv_1', amount: 4200 }],
      intents: [{ id: 'refund', tool: 'refund', args: { invoice_id: 'inv_1', amount: 4200 } }],
      agents: [
        {
          name: 'agentA',
          user: 'ada',
          actor: { clockOffsetMs: skew() },
          calls: [{ intent: 'refund', key: 'k1', tries: 1 }],
        },
        {
          // Another key for the same refund (or, a third of the time, the same key: a takeover under skew).
          name: 'agentB',
          user: 'ada',
          afterMs: pick(2) === 0 ? LOCK_JUMP_MS : 0,
          actor: { clockOffsetMs: skew() },
          calls: [{ intent: 'refund', key: pick(3) === 0 ? 'k1' : 'k2', tries: 2 }],
        },
        {
          // Behind true time, back in the TTL's last lock-length: its lock may end just at the TTL.
          name: 'agentC',
          user: 'ada',
          actor: {
            beforeTtlMs: [29_000, 30_000, 31_000, 45_000][pick(4)]!,
            clockOffsetMs: -[1_000, 3_000][pick(2)]!,
            shuffled: true,
          },
          calls: [{ intent: 'refund', key: 'k1', tries: 2, waitsRetryAfter: true }],
        },
        {
          // Ahead of true time, back at the TTL: by its clock the record has expired.
          name: 'agentD',
          user: 'ada',
          actor: {
            beforeTtlMs: [2_500, 500, -500][pick(3)]!,
            clockOffsetMs: [1_000, 3_000][pick(2)]!,
            shuffled: true,
          },
          calls: [{ intent: 'refund', key: 'k1', tries: 2, waitsRetryAfter: true }],
        },
      ],
      ttlRecord: { intent: 'refund', key: 'k1', user: 'ada' },
      scripted: [{ actor: 'agentA', nth: 2 + pick(4), fault: 'crash' }],
      completerRuns: 0,
      lateCompleters: [{ beforeTtlMs: [1_000, 20_000, 45_000][pick(3)]!, clockOffsetMs: skew(), shuffled: true }],
      clockJumps: [1_000, LOCK_JUMP_MS],
    };
  },

  /**
   * Last, so that the scenarios before it keep the seeds CI ran them on. The hand-off (an MCP task of a long-running tool): calls parked unrun for the completer, beside
   * resends (same key, fresh key) that may run them first, a dedupe window whose holder may be a queued
   * call or in the way of one (an unrun park, `unrun_attempts`), a refund handed off and retried, crashes
   * and the completer: one effect per intent, and every queued call run or answered.
   */
  hand_off: (pick) => ({
    name: 'hand_off',
    invoices: [{ invoice_id: 'inv_1', amount: 4200 }],
    intents: [
      { id: 'e1', tool: 'send_email', args: email(1) },
      { id: 'refund', tool: 'refund', args: { invoice_id: 'inv_1', amount: 4200 } },
    ],
    agents: [
      { name: 'agentA', user: 'ada', calls: [{ intent: 'e1', key: 'k1', handOff: true, tries: 1 + pick(2) }] },
      {
        name: 'agentB',
        user: 'ada',
        // The model minted a new key for the same email, or resent the first; handed off or not.
        calls: [{ intent: 'e1', key: pick(2) === 0 ? 'k1' : 'k2', handOff: pick(2) === 0, tries: 1 + pick(2) }],
      },
      {
        name: 'agentC',
        user: 'ada',
        calls: [
          { intent: 'refund', key: 'k3', handOff: true, tries: 1 },
          { intent: 'refund', key: pick(2) === 0 ? 'k3' : 'k4', waitsRetryAfter: true },
        ],
      },
    ],
    completerRuns: 1 + pick(3),
    completerAfterMs: pick(2) === 0 ? 0 : LOCK_JUMP_MS,
  }),
};
