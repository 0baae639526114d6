/**
 * A dedupe window's intent: "this tenant's user asked this tool for these exact arguments", held for a
 * window whatever client key each call carries. The first call holds it; a call with a fresh key inside
 * the window answers the holder's outcome instead of running.
 *
 * Item: `<tool>#intent#<sha256(tenant, user, fingerprint)>`, with its holder (record key, claim id,
 * call id), the downstream key the effect runs under, the window's end (`window_end`), and a TTL past it
 * by the records' TTL, so late calls asked inside the window still find it. Its writes are in
 * `protocol/intent.ts`; what a claimant does with each state it finds is decided here.
 */
import { classify, holdsIntent, isAbandoned } from './call-state';
import {
  createIntent,
  type IntentScope,
  intentKeyOf,
  type NewIntent,
  replaceIntent,
  swapIntent,
} from './protocol/intent';
import type { Intent, IntentHolder, StoredOutcome } from './protocol/record';
import { type IdempotencyTable, readCallRecord } from './protocol/table';

/** What a call asks of an intent. */
export interface IntentRequest {
  readonly scope: IntentScope;
  /** This call, as it would hold the intent. */
  readonly holder: IntentHolder;
  /** This call's own downstream key, which a new intent is created under. */
  readonly downstreamKey: string;
  readonly windowSeconds: number;
  readonly ttlSeconds: number;
  /** When this call was first claimed: the window it falls in is the one it was asked in. */
  readonly askedAtMs: number;
  /** Fixes a downstream key on this call's record (`fixDownstreamKey`, on its claim). */
  readonly fix: (downstreamKey: string) => Promise<'fixed' | 'claim_lost'>;
}

/** What claiming an intent found. */
export type IntentClaim =
  /**
   * This call holds the intent — `created` by it now (or afresh after an erased holder), or taken over
   * from a holder that is gone: run under `downstreamKey`.
   */
  | { readonly kind: 'holds'; readonly downstreamKey: string; readonly created: boolean }
  /** Another call finished it: its stored outcome, and the key its effect ran under. */
  | { readonly kind: 'done'; readonly outcome: StoredOutcome; readonly downstreamKey: string }
  /** Another call is doing it now; its lock ends at `lockEndsMs`. */
  | { readonly kind: 'running'; readonly lockEndsMs: number | undefined }
  /** This call's own claim was lost while it fixed the intent's key on its record. */
  | { readonly kind: 'claim_lost' };

const RUNNING: IntentClaim = { kind: 'running', lockEndsMs: undefined };

/**
 * Claims the intent for `request.holder`. One conditional PutItem when the intent is free; when it is
 * held, the holder's record is read (one GetItem) and its state decides — the holder is the *call* the
 * intent names, so a record released and re-created by another call is not mistaken for it:
 *
 *   no intent ────────────────────────────────────▶ holds, under this call's downstream key, fixed
 *                                                   on the intent in the same write (create)
 *   its window ended before this call was asked ──▶ holds afresh once its holder has settled
 *                                                   (replace); while the holder is in flight, running
 *   held by this record, an earlier claim of it ──▶ holds (the intent's key), swapped to this claim
 *   holder completed ─────────────────────────────▶ done (its outcome)
 *   holder live ──────────────────────────────────▶ running
 *   holder erased ────────────────────────────────▶ holds afresh under this call's own key (swap)
 *   holder abandoned, gone or re-claimed ─────────▶ holds by takeover, under the intent's key: first
 *                                                   fixed on this call's record (`fix`), then the
 *                                                   holder swapped — the effect is found, not repeated
 *
 * Every way to holding but the first is a conditional write on the holder read: two callers can never
 * both take an intent over.
 */
export async function claimIntent(table: IdempotencyTable, request: IntentRequest): Promise<IntentClaim> {
  const askedS = Math.floor(request.askedAtMs / 1000);
  const intent: NewIntent = {
    intentKey: intentKeyOf(request.scope),
    tenant: request.scope.identity.tenant,
    tool: request.scope.tool,
    holder: request.holder,
    downstreamKey: request.downstreamKey,
    windowEndS: askedS + request.windowSeconds,
    // Kept past the window for as long as a call asked inside it may still run (the records' TTL):
    // DynamoDB's TTL must not delete an intent a late retry or the completer still needs.
    expiresAtS: askedS + request.windowSeconds + request.ttlSeconds,
  };
  const created = await createIntent(table, intent);
  if (created.kind === 'created') return { kind: 'holds', downstreamKey: request.downstreamKey, created: true };
  const held = created.held;
  if (!held) throw new Error(`the item under ${intent.intentKey} is not an intent`);
  // The window a call falls in is decided by when it was asked, not when an attempt gets to run it.
  if (held.windowEndS < request.askedAtMs / 1000) return replaceEnded(table, intent, held);
  if (held.holder.recordKey !== request.holder.recordKey) return takeFromAnother(table, request, held);
  // This call's own earlier attempt created it when it holds it already (the same call).
  const own = held.holder.callId === request.holder.callId;
  return (await swapIntent(table, held.intentKey, held.holder, request.holder)) === 'swapped'
    ? { kind: 'holds', downstreamKey: held.downstreamKey, created: own && held.downstreamKey === request.downstreamKey }
    : RUNNING;
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
    if (state === 'live') return { kind: 'running', lockEndsMs: record.lockEndsMs };
    if (isAbandoned(state)) return RUNNING;
  }
  return (await replaceIntent(table, intent, held.holder)) === 'replaced'
    ? { kind: 'holds', downstreamKey: intent.downstreamKey, created: true }
    : RUNNING;
}

/** An intent inside its window, held by another call: that call's state decides. */
async function takeFromAnother(table: IdempotencyTable, request: IntentRequest, held: Intent): Promise<IntentClaim> {
  const record = await readCallRecord(table, held.holder.recordKey);
  const state = classify(record, Date.now());
  if (state === 'erased') {
    // The intent's holder was erased: what it did is gone, and so is the intent.
    return (await swapIntent(table, held.intentKey, held.holder, request.holder, request.downstreamKey)) === 'swapped'
      ? { kind: 'holds', downstreamKey: request.downstreamKey, created: true }
      : RUNNING;
  }
  // The holder call, still there (whichever of its attempts holds the record now). Otherwise it is gone.
  if (holdsIntent(record, held.holder)) {
    if (state === 'completed' && record.outcome) {
      return { kind: 'done', outcome: record.outcome, downstreamKey: held.downstreamKey };
    }
    if (state === 'live') return { kind: 'running', lockEndsMs: record.lockEndsMs };
  }
  // Taking over: this call's record names the intent's key first, so that every later attempt of this
  // call (a retry, the completer) runs under it even if this one dies right after.
  if ((await request.fix(held.downstreamKey)) === 'claim_lost') return { kind: 'claim_lost' };
  return (await swapIntent(table, held.intentKey, held.holder, request.holder)) === 'swapped'
    ? { kind: 'holds', downstreamKey: held.downstreamKey, created: false }
    : RUNNING;
}
