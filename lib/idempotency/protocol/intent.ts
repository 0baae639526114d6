/**
 * A dedupe window's intent: "this tenant's user asked this tool for these exact arguments", held for a
 * window whatever client key each call carries. The first call holds it; a call with a fresh key inside
 * the window answers the holder's outcome instead of running.
 *
 * Item: `<tool>#intent#<sha256(tenant, user, fingerprint)>`, with its holder (record key, claim id,
 * call id), the downstream key the effect runs under, the window's end (`window_end`), and a TTL past it
 * by `MAX_WINDOWED_TTL_SECONDS` (7 days, the longest TTL a windowed tool may have), so late calls asked
 * inside the window still find it under any TTL a deploy gives the tool. What a claimant does with each
 * state it finds is decided here (`claimIntent`), and so are its writes (docs/state-machine.md,
 * "Dedupe-window intent"), one function per transition; every one but the first is conditioned on the
 * holder as it was read (`heldBy`), so two callers can never both take an intent over, and none frees or
 * deletes one taken over meanwhile.
 */
import { createHash } from 'node:crypto';
import { askAgainAfterMs } from '../answers';
import {
  classify,
  expiredFromMs,
  holdsIntent,
  type InFlightState,
  isInFlight,
  isParked,
  MAX_WINDOWED_TTL_SECONDS,
} from '../call-state';
import type { Identity } from '../types';
import {
  type Intent,
  type IntentHolder,
  type IntentMarker,
  isHeld,
  ownWindowOf,
  type PastWindow,
} from './intent-record';
import {
  createIntent,
  eraseIntentItem,
  fixPastWindowKey,
  type NewIntent,
  replaceIntent,
  swapIntent,
  takeOverIntent,
} from './intent-writes';
import type { CallRecord, StoredOutcome } from './record';
import { callOf, type IdempotencyTable, readCallRecord } from './table';

/** What a call asks of an intent. */
export interface IntentRequest {
  readonly scope: IntentScope;
  /** This call, as it would hold the intent. */
  readonly holder: IntentHolder;
  /**
   * The key a new intent is created under: the one fixed on this call's record (an intent it took over
   * before), else this call's own.
   */
  readonly downstreamKey: string;
  /**
   * This call's own downstream key: an intent this call holds under it is one it created (a taker holds
   * the intent's key, which is another call's).
   * @default downstreamKey
   */
  readonly ownKey?: string;
  readonly windowSeconds: number;
  readonly ttlSeconds: number;
  /** When this call was first claimed: the window it falls in is the one it was asked in. */
  readonly askedAtMs: number;
}

/** What claiming an intent found. */
export type IntentClaim =
  /**
   * This call runs under `downstreamKey`, one of the intent's runners: it holds the intent — `created` by it
   * now (or over an ended window), or taken over from a holder that is gone — or, already one of its runners,
   * it runs again beside a completed holder whose outcome was itself a replay (the effect may be this call's
   * own: only the tool, under the key, can tell — the commit's stamp decides); or, a past window's call, it
   * runs under that window's key, created by none.
   */
  | { readonly kind: 'holds'; readonly downstreamKey: string; readonly created: boolean }
  /** Another call finished it: its stored outcome (a replay, to a call that never ran under the key). */
  | { readonly kind: 'done'; readonly outcome: StoredOutcome }
  /**
   * Another call is doing it now; its lock ends at `lockEndsMs`; `parked`: nobody runs it before then;
   * `waitedOn`: that call, the holder of this call's own window (its outcome, once stored, answers this one);
   * `movable`: that call is abandoned or stalled, and its resend may change it before then (a call parked
   * behind it is looked at by its wait look, `parkLimitMs`) — a parked live call, a window nothing remembers
   * or an intent's TTL change at that time and no sooner (review 28, F2).
   */
  | {
      readonly kind: 'running';
      readonly lockEndsMs: number | undefined;
      readonly parked?: true;
      readonly waitedOn?: string;
      readonly movable?: true;
    }
  /** This call's own claim was lost (taken over, erased) before it could take the intent over. */
  | { readonly kind: 'claim_lost' };

const RUNNING: IntentClaim = { kind: 'running', lockEndsMs: undefined };

/** The holder's call is live: its lock's end, and whether it is parked (`isParked`). */
function runningOn(record: CallRecord): Extract<IntentClaim, { kind: 'running' }> {
  return { kind: 'running', lockEndsMs: record.lockEndsMs, ...(isParked(record) ? { parked: true as const } : {}) };
}

/**
 * Claims the intent for `request.holder`. One conditional write when the intent is free (or a marker);
 * when it is held, the holder's record is read (one GetItem) and its state decides — the holder is the
 * *call* the intent names, so a record released and re-created by another call is not mistaken for it:
 *
 *   no intent ────────────────────────────────────▶ holds, under this call's downstream key, fixed
 *                                                   on the intent in the same write (create)
 *   its window ended before this call was asked ──▶ holds afresh once its holder has settled
 *                                                   (replace); while the holder is in flight, running
 *   held by this call, an earlier claim of it ────▶ holds (the intent's key), swapped to this claim
 *   held by this record, another call of it ──────▶ holds by takeover (below)
 *   holder completed ─────────────────────────────▶ done (its outcome); its outcome a replay and this
 *                                                   call one of the runners: holds (the intent's key)
 *   holder live ──────────────────────────────────▶ running
 *   holder erased, no other runner in flight ─────▶ the window ends now, as the erase ends it (a marker
 *                                                   of no tenant): claimed again — this call, asked in
 *                                                   it, runs under its key (a past window's call)
 *   holder abandoned, gone, re-claimed, or erased ▶ holds by takeover, under the intent's key: the
 *   while another runner is in flight               holder swapped, this call added to the runners and
 *                                                   the key fixed on its record in one transaction
 *                                                   (`takeOverIntent`) — the effect is found, not repeated
 *
 * An intent's key never changes, and the intent is never deleted (erase), while a call that may run under
 * it — any of its runners — is in flight: each may have made the effect, so a fresh call beside it under
 * another key would make a second one (review 11).
 *
 * Every way to holding but the first is a conditional write on the holder read: two callers can never
 * both take an intent over.
 */
export function claimIntent(table: IdempotencyTable, request: IntentRequest): Promise<IntentClaim> {
  return claimOutliving(table, request, 0);
}

/** `claimIntent`, the intent it creates living at least until `outliving` (epoch s): a marker it met does. */
async function claimOutliving(
  table: IdempotencyTable,
  request: IntentRequest,
  outliving: number,
): Promise<IntentClaim> {
  const askedAtS = Math.floor(request.askedAtMs / 1000);
  const intent: NewIntent = {
    intentKey: intentKeyOf(request.scope),
    tenant: request.scope.identity.tenant,
    tool: request.scope.tool,
    holder: request.holder,
    downstreamKey: request.downstreamKey,
    windowEndsAtS: askedAtS + request.windowSeconds,
    // Kept past the window for as long as a call asked inside it may still run (its record's TTL, under
    // any TTL a deploy gives the tool: at most MAX_WINDOWED_TTL_SECONDS; R22-1): DynamoDB's TTL must not
    // delete an intent a late retry or the completer still needs.
    expiresAtS: Math.max(
      askedAtS + request.windowSeconds + Math.max(request.ttlSeconds, MAX_WINDOWED_TTL_SECONDS),
      outliving,
    ),
  };
  const created = await createIntent(table, intent, request.askedAtMs);
  if (created.kind === 'created') return { kind: 'holds', downstreamKey: request.downstreamKey, created: true };
  const held = created.held;
  if (!held) throw new Error(`the item under ${intent.intentKey} is not an intent`);
  // The window a call falls in is decided by when it was asked, not when an attempt gets to run it: a window
  // this intent replaced, if it was asked while that one was open (review 14, R14-4, R14-5).
  const past = pastWindowFor(request, held);
  if (past === 'forgotten') return forgotten(request);
  if (past) return fromPastWindow(table, request, past);
  // A marker whose window ended before this call was asked: create passes it — unless it remembers a window
  // and outlives this intent (that window was asked under a longer TTL: created again to live as long,
  // R21-2), or it changed meanwhile.
  if (!isHeld(held)) {
    const outlives = held.replaced !== undefined && held.expiresAtS > intent.expiresAtS;
    return outlives ? claimOutliving(table, request, held.expiresAtS) : RUNNING;
  }
  if (held.windowEndsAtS < request.askedAtMs / 1000) return replaceEnded(table, intent, held);
  if (held.holder.recordKey !== request.holder.recordKey) return takeFromAnother(table, request, held);
  // Another call of this record (claimed anew since): it runs under the intent's key only fixed on its record.
  if (held.holder.callId !== request.holder.callId) return takeOver(table, request, held);
  // This call's own earlier attempt holds it: the key is its own (it created it) or fixed on its record.
  // Created (freeable) only under its own key and while no other call ran under it: a taker it took the
  // intent back from may have (review 12, R12-2).
  const alone = held.runnersKnown && held.runners.every((runner) => runner === request.holder.callId);
  return (await swapIntent(table, held, request.holder)) === 'swapped'
    ? {
        kind: 'holds',
        downstreamKey: held.downstreamKey,
        created: alone && held.downstreamKey === (request.ownKey ?? request.downstreamKey),
      }
    : RUNNING;
}

/**
 * A call's window is the first that had not ended when it was asked: the one open then, or, none open, the
 * next to open (its own window had no other effect, and the next one's effect answers it: never a second
 * one beside it — review 17, R17-7, left so). So a call asked before the window `held` replaced ended is that
 * window's — unless it was asked before the one *that* replaced ended too: nothing remembers that one
 * (`forgotten`) but an erase's marker, whose window's prior is it (R19-2). Undefined: `held`'s own window
 * (or, a marker, a new one) is this call's.
 */
function pastWindowFor(request: IntentRequest, held: Intent | IntentMarker): PastWindow | 'forgotten' | undefined {
  const { replaced } = held;
  if (!replaced || request.askedAtMs > replaced.endsAtS * 1000) return;
  return earliest(request, replaced);
}

/** `window`, or, asked before the one before it ended, that one (an erase's marker remembers it), or none. */
function earliest(request: IntentRequest, window: PastWindow): PastWindow | 'forgotten' {
  const before = window.previousEndsAtS;
  if (before === undefined || request.askedAtMs > before * 1000) return window;
  return window.prior ? earliest(request, window.prior) : 'forgotten';
}

/**
 * A call whose window nothing remembers (`forgotten`): whether it had an effect cannot be told, so it never
 * runs — parked until its last look (the attempt caps the wait there: no lock ends later), when the
 * completer gives it up (stalled, `expiring`) — unless its record names its window's key. It takes its
 * window being replaced, and that one replaced in turn, while none of the call's attempts reached the
 * intent: its store throttled, its completer down, for over two windows.
 */
function forgotten(request: IntentRequest): IntentClaim {
  // Its record names a key an attempt of it fixed (a past window's, a taken-over intent's) — its window's:
  // run under it, which finds that window's effect or makes it once (review 18, R18-3). Never freed.
  if (request.downstreamKey !== (request.ownKey ?? request.downstreamKey)) {
    return { kind: 'holds', downstreamKey: request.downstreamKey, created: false };
  }
  return { kind: 'running', lockEndsMs: Number.POSITIVE_INFINITY, parked: true };
}

/**
 * A call asked in a window this intent replaced: that window's holder's outcome answers it (the window's);
 * with none stored (its record erased, expired or claimed anew since), it runs under that window's key, which
 * finds that window's effect if there was one, or makes it — once: every call of that window runs under it.
 * The key is fixed on its record first, so its later attempts run under it whatever becomes of the intent
 * (review 17, R17-1 to R17-3). Created by no call (never freed), one of no intent's runners.
 */
async function fromPastWindow(
  table: IdempotencyTable,
  request: IntentRequest,
  window: PastWindow,
): Promise<IntentClaim> {
  const outcome = await outcomeOf(table, window.callId);
  if (outcome) return { kind: 'done', outcome };
  if ((await fixPastWindowKey(table, request.holder, window)) === 'claim_lost') return { kind: 'claim_lost' };
  return { kind: 'holds', downstreamKey: window.downstreamKey, created: false };
}

/** Takes the intent over under its key, in one transaction (`takeOverIntent`). */
async function takeOver(table: IdempotencyTable, request: IntentRequest, held: Intent): Promise<IntentClaim> {
  const taken = await takeOverIntent(table, held, request.holder);
  if (taken === 'changed') return RUNNING;
  if (taken === 'claim_lost') return { kind: 'claim_lost' };
  return { kind: 'holds', downstreamKey: held.downstreamKey, created: false };
}

/**
 * The intent's runners but `except` whose calls are in flight (live, abandoned or stalled: each may still
 * run under its key), with their records and states — read one by one (an intent has few).
 */
export async function runnersInFlight(
  table: IdempotencyTable,
  intent: Intent,
  except: readonly string[],
): Promise<Array<{ readonly record: CallRecord; readonly state: InFlightState }>> {
  const found: Array<{ record: CallRecord; state: InFlightState }> = [];
  for (const callId of intent.runners) {
    const call = except.includes(callId) ? undefined : await callOf(table, callId);
    if (call && isInFlight(call.state)) found.push({ record: call.record, state: call.state });
  }
  return found;
}

/**
 * An intent whose window ended before this call was asked: this call is a new intent. The old one is
 * replaced only once its holder has settled: while the holder is still in flight, its own later attempts
 * (a retry, the completer) ask the intent again and must find their own — replaced under them, they
 * would take the new intent's answer for their own effect.
 */
async function replaceEnded(table: IdempotencyTable, intent: NewIntent, held: Intent): Promise<IntentClaim> {
  const record = await readCallRecord(table, held.holder.recordKey);
  if (holdsIntent(record, held.holder)) {
    const state = classify(record, Date.now());
    if (isInFlight(state)) return heldBackBy(record, state);
  }
  // Nor while a call that ran under it before (its creator, an earlier taker) may still run and ask it
  // again (review 11, R11-3) — a stalled one too, as a stalled holder: a resend of it may still run it.
  const [runner] = await runnersInFlight(table, held, [held.holder.callId]);
  if (runner) return heldBackBy(runner.record, runner.state);
  // Nor, when its runners are unknown (an earlier version's), before its TTL: by then every call asked in its
  // window has expired (review 13, R13-2) — and after it, not until DynamoDB's sweep (review 14, R14-1).
  if (!held.runnersKnown && Date.now() < held.expiresAtS * 1000) {
    return { kind: 'running', lockEndsMs: held.expiresAtS * 1000, parked: true };
  }
  // The window it replaces is kept on it: a call asked in it that never reached it is answered from it (R14-4).
  // Never expiring before the window it replaces: that one's calls may live longer (a TTL lowered since, R21-2).
  const expiresAtS = Math.max(intent.expiresAtS, held.expiresAtS);
  return (await replaceIntent(table, { ...intent, replaced: ownWindowOf(held), expiresAtS }, held)) === 'replaced'
    ? { kind: 'holds', downstreamKey: intent.downstreamKey, created: true }
    : RUNNING;
}

/**
 * A new window held back by a call of the old one in flight: until that call can next change by anything
 * retrysafe runs — a live one at its lock's end (`runningOn`), an abandoned one when the completer looks at
 * it (`askAgainAfterMs`, the rule every answer about it follows: its re-run, or its give-up), a stalled one — which nothing scheduled moves — at
 * its TTL. This call is parked until then (nobody runs it sooner: every answer about it says when), not
 * re-run every second for a change no schedule makes; only the old call's own resend moves it sooner.
 */
function heldBackBy(record: CallRecord, state: InFlightState): IntentClaim {
  if (state === 'live') return runningOn(record);
  const nowMs = Date.now();
  // A stalled one's TTL: a second past it, the first instant every reader counts it expired (review 36, F4).
  const untilMs =
    state === 'abandoned' ? nowMs + askAgainAfterMs(record, state, nowMs) : expiredFromMs(record.expiresAtS);
  return { kind: 'running', lockEndsMs: untilMs, parked: true, movable: true };
}

/** An intent inside its window, held by another call: that call's state decides. */
async function takeFromAnother(table: IdempotencyTable, request: IntentRequest, held: Intent): Promise<IntentClaim> {
  const record = await readCallRecord(table, held.holder.recordKey);
  const state = classify(record, Date.now());
  if (
    state === 'erased' &&
    held.runnersKnown &&
    (await runnersInFlight(table, held, [held.holder.callId, request.holder.callId])).length === 0
  ) {
    // The intent's holder was erased, and no call that ran under its key is in flight: the erase of its
    // tenant (or its call) is under way. Its window ends here, as the erase would end it (`eraseIntentItem`:
    // a marker of no tenant remembering it): this call, asked before, is that window's and runs under its key
    // (review 19, R19-4: held afresh under its own, a call asked in the window before the erase, none of whose
    // attempts reached the intent, made a second effect); a call asked after the erase is a fresh one.
    return (await eraseIntentItem(table, held)) === 'erased' ? claimIntent(table, request) : RUNNING;
  }
  // The holder call, still there (whichever of its attempts holds the record now). Otherwise it is gone.
  if (holdsIntent(record, held.holder)) {
    if (state === 'completed' && record.outcome) {
      // Its outcome a replay: the effect's commit may be an earlier attempt's of one of the intent's runners,
      // and only the tool, under the intent's key, can tell whose — such a runner runs again. Any other call
      // never ran under the key (every call that runs under it is one of its runners), so the effect is not
      // its own: the holder's outcome answers it, a replay — with no write, and no runner added (a model that
      // mints a key every turn would otherwise grow the intent by one runner a call). Where its runners are
      // unknown (an earlier version's), any call may be one: it runs, and the stamp decides.
      const replayed = record.outcome.replayed && record.outcome.receipt !== undefined;
      return replayed && (!held.runnersKnown || held.runners.includes(request.holder.callId))
        ? { kind: 'holds', downstreamKey: held.downstreamKey, created: false }
        : { kind: 'done', outcome: record.outcome };
    }
    if (state === 'live') return { ...runningOn(record), waitedOn: record.callId };
  }
  // Held as taken over, never as created — even from a holder that made no effect: a taker that could
  // free the intent (review 7, R7-1b) let a call with the key fixed, or one that fixed it and died, run
  // beside a fresh call's new intent (reviews 8 to 10: three double effects). Only the intent's creator
  // frees it; a taker's business error is kept on it for the window (conservative: no second effect).
  // An erased holder with a runner in flight is taken over the same way: the runner may have made the
  // effect under the intent's key (review 11, R11-2).
  return takeOver(table, request, held);
}

/**
 * The outcome the call `callId` names stored, once it completed (a window's holder a call waited on), or
 * undefined: in flight, gone, erased, its record claimed anew by another call — or a business error after
 * which its attempt freed the intent it created (rule 1), which its record says (`intentFreed`, written with
 * the outcome), so that a fresh call runs, and so does a call that waited on it (reviews 14 and 16, R14-3,
 * R16-1: never derived from its attempts). Any other outcome, a failure the intent kept included, is its
 * window's (review 15, R15-1). A record an earlier version stored after freeing carries no mark: its failure
 * answers (conservative: a stale business error, never a second effect).
 */
export async function outcomeOf(table: IdempotencyTable, callId: string): Promise<StoredOutcome | undefined> {
  const call = await callOf(table, callId);
  return call?.state === 'completed' && !call.record.intentFreed ? call.record.outcome : undefined;
}

/** What an intent is: this tenant's user asked this tool for these exact arguments. */
export interface IntentScope {
  readonly tool: string;
  readonly identity: Identity;
  readonly fingerprint: string;
}

/** `<tool>#intent#<sha256(tenant, user, fingerprint)>`. */
export function intentKeyOf({ tool, identity, fingerprint }: IntentScope): string {
  const hash = createHash('sha256')
    .update(JSON.stringify([identity.tenant, identity.user, fingerprint]))
    .digest('hex');
  return `${tool}#intent#${hash}`;
}
