/**
 * One attempt of a call, in phases that return what they decided — claim → choose the downstream key →
 * execute → settle (store the outcome; or, on a failure, park or release the claim) — reading one
 * `Claim`, set once by the claim phase. Every write is a transition of `protocol/`.
 */
import type * as z from 'zod/mini';
import {
  type Ending,
  failed,
  MIN_RETRY_AFTER_MS,
  REFUSED,
  type ReplayKind,
  retryAfterMs,
  StoreWriteError,
} from './answers';
import { attach } from './attach';
import { dueAfterParkMs, latestParkEndMs, parkLimitMs, STREAM_BATCHING_WINDOW_SECONDS } from './backoff';
import type { CallPlan } from './call-plan';
import { ttlLookedAtFor } from './call-state';
import { expiresAtSOf } from './derivation';
import { InFlightError, RELEASING_CODES, ToolError } from './errors';
import { downstreamKey } from './fingerprint';
import { type ClaimRequest, claimCall } from './protocol/claim';
import type { Claim } from './protocol/claim-writes';
import { claimIntent, type IntentScope, intentKeyOf, outcomeOf } from './protocol/intent';
import type { IntentHolder } from './protocol/intent-record';
import { releaseIntent } from './protocol/intent-writes';
import { type CallRecord, encodeCall, STATUS, type StoredOutcome } from './protocol/record';
import { park, release, store } from './protocol/settle';
import { encodeReceipt } from './receipt';
import type { JsonObject } from './types';

/**
 * Runs one attempt: claim (or attach to a live attempt of the same call), choose the downstream key,
 * execute, settle. Every refusal and failure is an `Ending` (a tool's own errors included); nothing is
 * thrown.
 */
export async function runAttempt<S extends z.ZodMiniObject, R extends JsonObject>(
  plan: CallPlan<S, R>,
): Promise<Ending> {
  const request: ClaimRequest = {
    recordKey: plan.recordKey,
    tenant: plan.identity.tenant,
    tool: plan.tool.name,
    validation: plan.validation,
    // Rule 2 on the first claim too, however the TTL's seconds round (review 3, L1).
    expiresAtS: Math.max(expiresAtSOf(plan.ttlSeconds, Date.now()), ttlLookedAtFor(plan.lockEndsMs)),
    lockEndsMs: plan.lockEndsMs,
    ttlSeconds: plan.ttlSeconds,
    // The claim carries what it takes to finish the call if this worker dies (the completer).
    call: () => encodeCall({ user: plan.identity.user, clientKey: plan.clientKey, args: plan.args as JsonObject }),
    resume: plan.resume,
  };
  // A live attempt of the same call in the way: wait for its outcome, within bounds (a caller only).
  const claimed = await attach(plan.table, request, await claimCall(plan.table, request), plan.attach);
  if (claimed.kind !== 'claimed') return claimed;
  const { claim } = claimed;
  // Handed off: the call's first claim is parked at once, unrun, and the completer runs it as any abandoned
  // call (rule 8). Its answer's wait is the stream's batching window: the completer sees the park no sooner
  // (review 4, F6). A takeover runs here as always: handing it off again would spend an attempt per request.
  const first = claim.attempt === 1;
  const ending = plan.handOff && first ? settle(plan, claim, PARK_QUEUED, HANDED_OFF) : runClaimed(plan, claim);
  // The call began with this request when its attempt made the first claim (a takeover continues one).
  return { ...(await ending), ...(first ? { fresh: true } : {}) };
}

/** A handed-off call's answer: `pending`, queued — the completer starts it once the stream delivers its park. */
const HANDED_OFF: Ending = { kind: 'pending', until: { afterMs: STREAM_BATCHING_WINDOW_SECONDS * 1000, queued: true } };

/** The attempt once it holds its claim: choose the downstream key, execute, settle. */
async function runClaimed<S extends z.ZodMiniObject, R extends JsonObject>(
  plan: CallPlan<S, R>,
  claim: Claim,
): Promise<Ending> {
  let chosen: DownstreamKeyChoice;
  try {
    chosen = await chooseDownstreamKey(plan, claim);
  } catch (error) {
    // Failed with no effect (a store error): in the completer's budget (review 5, F2), and the next attempt
    // may still be the call's first run (review 6).
    return settle(plan, claim, PARK_UNRUN, failed(error));
  }
  switch (chosen.kind) {
    case 'replay':
      return storeOutcome(plan, claim, { ...chosen.outcome, replayed: true }, 'dedupe_window');
    case 'running': {
      // Pending, and pollable: in flight until a retry (or the completer) takes it over and finds the holder's
      // outcome. A parked holder: nobody runs it before its lock ends, so all of it (as `askAgainAfterMs`) —
      // but never past this call's wait look if a resend may move it sooner (`movable`), nor its last look,
      // so the completer can still give it up before its TTL (`parkLimitMs`: no lock ends later).
      const nowMs = Date.now();
      const limitMs = parkLimitMs(claim, nowMs, chosen.movable, dueAfterParkMs(claim.attempt));
      const waitMs =
        chosen.parked && chosen.lockEndsMs !== undefined
          ? Math.max(MIN_RETRY_AFTER_MS, Math.min(chosen.lockEndsMs, limitMs) - nowMs)
          : retryAfterMs(chosen.lockEndsMs, nowMs);
      return settle(
        plan,
        claim,
        { kind: 'park', untilMs: nowMs + waitMs, unrun: true, queued: true, waitedOn: chosen.waitedOn },
        { kind: 'pending', until: { afterMs: waitMs } },
      );
    }
    case 'claim_lost':
      return settle(plan, claim, PARK_NOW, failed(REFUSED.claimLostBeforeRun()));
    case 'run': {
      const executed = await execute(plan, claim, chosen.downstreamKey, chosen.createdIntent);
      if (executed.kind === 'settle') return settle(plan, claim, executed.settlement, executed.ending);
      // The intent first, then the failure: an intent never names a stored failure of a call that made no
      // effect (review 5, F1). Not freed: the call stays in flight, as having made no effect. Freed: the
      // stored failure says so, for the calls that waited on it (review 16, R16-1).
      const freed = executed.releaseIntent ? await freeIntent(plan, claim) : false;
      if (typeof freed === 'object') return freed;
      return storeOutcome(plan, claim, executed.outcome, executed.replay, freed);
    }
  }
}

/** The downstream key the effect runs under, or why the attempt does not run. */
type DownstreamKeyChoice =
  | { readonly kind: 'run'; readonly downstreamKey: string; readonly createdIntent: boolean }
  /** A dedupe window's holder finished the intent: its outcome answers. */
  | { readonly kind: 'replay'; readonly outcome: StoredOutcome }
  /** A dedupe window's holder runs it now (`waitedOn`: that holder's call, inside this call's window). */
  | {
      readonly kind: 'running';
      readonly lockEndsMs: number | undefined;
      readonly parked?: true;
      readonly waitedOn?: string;
      readonly movable?: true;
    }
  | { readonly kind: 'claim_lost' };

/** Phase: the downstream key — the record's fixed one, the call's own, or a dedupe window's. */
async function chooseDownstreamKey<S extends z.ZodMiniObject, R extends JsonObject>(
  plan: CallPlan<S, R>,
  claim: Claim,
): Promise<DownstreamKeyChoice> {
  const own = ownDownstreamKey(plan);
  const window = plan.tool.dedupeWindowSeconds;
  // A fixed key an attempt of this call ran under may hold its effect: run under it. One none ran under yet
  // is run only holding the intent (never beside a fresh call's new one: review 8).
  if (window === undefined || (claim.downstreamKey !== undefined && claim.ranBefore)) {
    return { kind: 'run', downstreamKey: claim.downstreamKey ?? own, createdIntent: false };
  }
  // Queued behind its window's holder before, and run by none of its attempts since: that holder, completed,
  // answers it — even once its window's intent was replaced or freed (review 13, R13-8).
  const waited = claim.waitedOn !== undefined && !claim.ranBefore && (await outcomeOf(plan.table, claim.waitedOn));
  if (waited) return { kind: 'replay', outcome: waited };
  const intent = await claimIntent(plan.table, {
    scope: intentScopeOf(plan),
    holder: holderOf(claim),
    downstreamKey: claim.downstreamKey ?? own,
    ownKey: own,
    windowSeconds: window,
    ttlSeconds: plan.ttlSeconds,
    askedAtMs: claim.askedAtMs,
  });
  switch (intent.kind) {
    case 'running':
    case 'claim_lost':
      return intent;
    case 'holds':
      // Only an intent this very call created may be freed by its business error: one taken over may
      // hold a dead holder's effect.
      return { kind: 'run', downstreamKey: intent.downstreamKey, createdIntent: intent.created };
    case 'done':
      return { kind: 'replay', outcome: intent.outcome };
  }
}

/**
 * The call's own downstream key, from its natural key, or else from its client key and its arguments'
 * fingerprint: other arguments under a reused client key get another downstream key, so they can never
 * meet this call's effect (nor be refused as its conflict). Derived only once claimed (a replay never
 * needs it).
 */
function ownDownstreamKey<S extends z.ZodMiniObject, R extends JsonObject>(plan: CallPlan<S, R>): string {
  const { tool, identity } = plan;
  if (!tool.naturalKey) {
    return downstreamKey(tool.name, identity, {
      kind: 'client',
      user: identity.user,
      clientKey: plan.clientKey,
      fingerprint: plan.fingerprint,
    });
  }
  const args = plan.args as JsonObject;
  const naturalKey = Object.fromEntries(tool.naturalKey.map((field) => [field, args[field] ?? null]));
  return downstreamKey(tool.name, identity, { kind: 'natural', naturalKey });
}

function intentScopeOf<S extends z.ZodMiniObject, R extends JsonObject>(plan: CallPlan<S, R>): IntentScope {
  return { tool: plan.tool.name, identity: plan.identity, fingerprint: plan.fingerprint };
}

function holderOf(claim: Claim): IntentHolder {
  return { recordKey: claim.recordKey, claimId: claim.claimId, callId: claim.callId };
}

/** What becomes of the claim when the attempt fails. */
type Settlement =
  /** A business error on a first attempt: nothing happened, the key (and an intent it created) are free. */
  | { readonly kind: 'release'; readonly createdIntent: boolean }
  /**
   * Anything else: the record is kept, its lock set to `untilMs` — later: pending until then; unset:
   * now (abandoned at once, so a retry or the completer takes it over).
   */
  | {
      readonly kind: 'park';
      readonly untilMs?: number;
      /** This attempt made no effect (`CallRecord.unrunAttempts`, when none before it ran). */
      readonly unrun?: true;
      /** Queued, by no failure (a hand-off; a window's holder in the way): not in the completer's budget. */
      readonly queued?: true;
      /** Queued behind this dedupe window holder's call (`CallRecord.waitedOn`). */
      readonly waitedOn?: string;
    };

const PARK_NOW: Settlement = { kind: 'park' };
/** A failed attempt that made no effect: its tool never ran (a store error), or it met a business error. */
const PARK_UNRUN: Settlement = { kind: 'park', unrun: true };
/** The hand-off: queued for the completer before anything ran. */
const PARK_QUEUED: Settlement = { kind: 'park', unrun: true, queued: true };

/** What executing the tool led to: an outcome to store, or a claim to settle and how the attempt ends. */
type Executed =
  | {
      readonly kind: 'outcome';
      readonly outcome: StoredOutcome;
      readonly replay?: ReplayKind;
      /** Before it is stored, release the intent this attempt created (a failure that made no effect). */
      readonly releaseIntent?: boolean;
    }
  | { readonly kind: 'settle'; readonly settlement: Settlement; readonly ending: Ending };

/** Phase: the effect. */
async function execute<S extends z.ZodMiniObject, R extends JsonObject>(
  plan: CallPlan<S, R>,
  claim: Claim,
  downstreamKey: string,
  createdIntent: boolean,
): Promise<Executed> {
  const { tool } = plan;
  let execution: Awaited<ReturnType<typeof tool.execute>>;
  try {
    execution = await tool.execute(plan.args, { identity: plan.identity, downstreamKey, callId: claim.callId });
  } catch (error) {
    return executionFailed(error, claim, createdIntent);
  }
  const replay = execution.replayed ? (tool.naturalKey ? 'natural_key' : 'client_key') : undefined;
  try {
    const outcome = { receipt: encodeReceipt(tool.name, execution.receipt), replayed: execution.replayed };
    return { kind: 'outcome', outcome, replay };
  } catch (error) {
    // The effect ran: releasing the claim would let a retry run it again. Store the failure.
    plan.logger?.error('tool call failed', { tool: tool.name, code: 'internal', error: error as Error });
    return { kind: 'outcome', outcome: { failure: 'internal', replayed: execution.replayed } };
  }
}

/** What a tool's failure does to the claim, and how the attempt ends. */
function executionFailed(error: unknown, claim: Claim, createdIntent: boolean): Executed {
  if (error instanceof ToolError && RELEASING_CODES.has(error.code)) {
    const outcome: StoredOutcome = { replayed: false, failure: error.code, message: error.message };
    // An earlier attempt may have made the effect: the failure becomes the call's outcome.
    if (claim.ranBefore) return { kind: 'outcome', outcome };
    // A handed-off call's first run: stored (its task must end), its intent freed — nothing ran (review 3, H3).
    if (claim.attempt > 1) return { kind: 'outcome', outcome, releaseIntent: createdIntent };
    return { kind: 'settle', settlement: { kind: 'release', createdIntent }, ending: failed(error) };
  }
  if (error instanceof InFlightError) {
    // The provider still runs the key: pending, parked until then (past the TTL: cut in `settle`, rule 2).
    // biome-ignore lint/complexity/useMathMinMax: no number of ms (NaN, < 0) is no wait; Math.max(NaN, 0) is NaN
    const waitMs = error.retryAfterMs > 0 ? error.retryAfterMs : 0;
    const settlement: Settlement = { kind: 'park', untilMs: Date.now() + waitMs };
    return { kind: 'settle', settlement, ending: { kind: 'pending', until: { afterMs: waitMs } } };
  }
  return { kind: 'settle', settlement: PARK_NOW, ending: failed(error) };
}

/** Phase: store the outcome, on this attempt's claim. */
async function storeOutcome<S extends z.ZodMiniObject, R extends JsonObject>(
  plan: CallPlan<S, R>,
  claim: Claim,
  outcome: StoredOutcome,
  replay: ReplayKind | undefined,
  intentFreed = false,
): Promise<Ending> {
  let stored: Awaited<ReturnType<typeof store>>;
  const completedAtMs = Date.now();
  const expiresAtS = expiresAtSOf(plan.ttlSeconds, completedAtMs);
  try {
    stored = await store(plan.table, claim, outcome, { expiresAtS, completedAtMs, intentFreed });
  } catch (error) {
    // Nothing written: the record stays in flight until its lock ends (then a retry or the completer).
    return { ...failed(new StoreWriteError('store', { cause: error })), call: leftAs(plan, claim, plan.lockEndsMs) };
  }
  // The effect ran; another attempt holds the key now (under the same downstream key), or it was erased.
  if (stored === 'claim_lost') return failed(REFUSED.claimLostAfterEffect());
  const call: CallRecord = {
    ...leftAs(plan, claim, plan.lockEndsMs),
    status: STATUS.completed,
    expiresAtS,
    outcome,
    completedAtMs,
  };
  return { kind: 'outcome', outcome, replay, call };
}

/** This attempt's record in flight as it leaves it, its lock ending at `lockEndsMs`. */
function leftAs<S extends z.ZodMiniObject, R extends JsonObject>(
  plan: CallPlan<S, R>,
  claim: Claim,
  lockEndsMs: number,
  /** As a park wrote them (`CallRecord.unrunAttempts`, `queuedAttempts`, `parkedClaimId`: review 29, F3). */
  parked?: { readonly unrunAttempts?: number | undefined; readonly queuedAttempts: number },
): CallRecord {
  return {
    ...(parked?.unrunAttempts === undefined ? {} : { unrunAttempts: parked.unrunAttempts }),
    ...(parked ? { queuedAttempts: parked.queuedAttempts, parkedClaimId: claim.claimId } : {}),
    recordKey: claim.recordKey,
    status: STATUS.inProgress,
    claimId: claim.claimId,
    lockEndsMs,
    expiresAtS: claim.expiresAtS,
    validation: plan.validation,
    tenant: plan.identity.tenant,
    tool: plan.tool.name,
    call: undefined,
    downstreamKey: claim.downstreamKey,
    attempt: claim.attempt,
    callId: claim.callId,
    outcome: undefined,
    stalledClaimId: undefined,
    createdAtMs: claim.askedAtMs,
    completedAtMs: undefined,
  };
}

/** Frees the intent this attempt created: whether it did, or how the attempt ends parked if the write fails. */
async function freeIntent<S extends z.ZodMiniObject, R extends JsonObject>(
  plan: CallPlan<S, R>,
  claim: Claim,
): Promise<Ending | boolean> {
  try {
    return (await releaseIntent(plan.table, intentKeyOf(intentScopeOf(plan)), holderOf(claim))) === 'released';
  } catch (error) {
    return settle(plan, claim, PARK_UNRUN, failed(error));
  }
}

/**
 * Phase: settle a failed attempt's claim — release it (and the intent it created, first), or park it —
 * then end as `ending` says. A claim lost meanwhile (taken over, erased) has nothing of this attempt's
 * to settle. A failed write answers instead of `ending`; so does a failed intent release, after which the
 * record is parked, not released: the intent it created never names a released record (review 7, R7-1).
 */
async function settle<S extends z.ZodMiniObject, R extends JsonObject>(
  plan: CallPlan<S, R>,
  claim: Claim,
  settlement: Settlement,
  ending: Ending,
): Promise<Ending> {
  let settled = ending;
  if (settlement.kind === 'release' && settlement.createdIntent) {
    const unfreed = await freeIntent(plan, claim);
    if (typeof unfreed === 'object') return unfreed;
  }
  if (settlement.kind === 'release') {
    try {
      await release(plan.table, claim);
    } catch (error) {
      return { ...failed(new StoreWriteError('settle', { cause: error })), call: leftAs(plan, claim, plan.lockEndsMs) };
    }
    return settled; // released: no call of these arguments is left under the key
  }
  // Rule 2, and a look by the last look (`latestParkEndMs`): no lock, a provider's wait included, nor a pending answer's wait.
  const latestMs = latestParkEndMs(claim, Date.now());
  const untilMs = Math.min(settlement.untilMs ?? Date.now(), latestMs);
  const unrunAttempts = settlement.unrun && !claim.ranBefore ? claim.attempt : undefined;
  const queued = settlement.queued === true;
  if (settled.kind === 'pending' && 'afterMs' in settled.until) {
    settled = {
      ...settled,
      until: { ...settled.until, afterMs: Math.min(settled.until.afterMs, latestMs - Date.now()) },
    };
  }
  let parked: Awaited<ReturnType<typeof park>>;
  try {
    parked = await park(plan.table, claim, untilMs, { unrunAttempts, queued, waitedOn: settlement.waitedOn });
  } catch (error) {
    return { ...failed(new StoreWriteError('settle', { cause: error })), call: leftAs(plan, claim, plan.lockEndsMs) };
  }
  // Taken over or erased meanwhile: nothing of this attempt's to settle, and its state not this attempt's.
  const queuedAttempts = claim.queuedBefore + (queued ? 1 : 0);
  return parked === 'parked'
    ? { ...settled, call: leftAs(plan, claim, untilMs, { unrunAttempts, queuedAttempts }) }
    : settled;
}
