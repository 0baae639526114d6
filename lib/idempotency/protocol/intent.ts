/**
 * A dedupe window's intent: "this tenant's user asked this tool for these exact arguments", held for a
 * window whatever client key each call carries. The first call holds it; a call with a fresh key inside
 * the window answers the holder's outcome instead of running.
 *
 * Item: `<tool>#intent#<sha256(tenant, user, fingerprint)>`, with its holder (record key, claim id,
 * call id), the downstream key the effect runs under, the window's end (`window_end`), and a TTL past it
 * by the records' TTL, so late calls asked inside the window still find it. What a claimant does with each
 * state it finds is decided here (`claimIntent`), and so are its writes (docs/state-machine.md,
 * "Dedupe-window intent"), one function per transition; every one but the first is conditioned on the
 * holder as it was read (`heldBy`), so two callers can never both take an intent over, and none frees or
 * deletes one taken over meanwhile.
 */
import { createHash } from 'node:crypto';
import { DeleteItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { classify, holdsIntent, isAbandoned, isParked } from '../call-state';
import type { Identity } from '../types';
import { fixKeyInput } from './claim';
import { type CallRecord, type Intent, type IntentHolder, intentOf, type StoredOutcome } from './record';
import { allOrNone, conditionally, heldBy, type IdempotencyTable, readCallRecord } from './table';

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
   * This call holds the intent — `created` by it now (or afresh after an erased holder), or taken over
   * from a holder that is gone: run under `downstreamKey`.
   */
  | { readonly kind: 'holds'; readonly downstreamKey: string; readonly created: boolean }
  /** Another call finished it: its stored outcome, and the key its effect ran under. */
  | { readonly kind: 'done'; readonly outcome: StoredOutcome; readonly downstreamKey: string }
  /** Another call is doing it now; its lock ends at `lockEndsMs`; `parked`: nobody runs it before then. */
  | { readonly kind: 'running'; readonly lockEndsMs: number | undefined; readonly parked?: true }
  /** This call's own claim was lost (taken over, erased) before it could take the intent over. */
  | { readonly kind: 'claim_lost' };

const RUNNING: IntentClaim = { kind: 'running', lockEndsMs: undefined };

/** The holder's call is live: its lock's end, and whether it is parked (`isParked`). */
function runningOn(record: CallRecord): IntentClaim {
  return { kind: 'running', lockEndsMs: record.lockEndsMs, ...(isParked(record) ? { parked: true as const } : {}) };
}

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
 *   holder erased ────────────────────────────────▶ holds afresh under this call's key (swap)
 *   holder abandoned, gone or re-claimed ─────────▶ holds by takeover, under the intent's key: the
 *                                                   holder swapped and the key fixed on this call's
 *                                                   record in one transaction (`takeOverIntent`) — the
 *                                                   effect is found, not repeated
 *
 * Every way to holding but the first is a conditional write on the holder read: two callers can never
 * both take an intent over.
 */
export async function claimIntent(table: IdempotencyTable, request: IntentRequest): Promise<IntentClaim> {
  const askedAtS = Math.floor(request.askedAtMs / 1000);
  const intent: NewIntent = {
    intentKey: intentKeyOf(request.scope),
    tenant: request.scope.identity.tenant,
    tool: request.scope.tool,
    holder: request.holder,
    downstreamKey: request.downstreamKey,
    windowEndsAtS: askedAtS + request.windowSeconds,
    // Kept past the window for as long as a call asked inside it may still run (the records' TTL):
    // DynamoDB's TTL must not delete an intent a late retry or the completer still needs.
    expiresAtS: askedAtS + request.windowSeconds + request.ttlSeconds,
  };
  const created = await createIntent(table, intent);
  if (created.kind === 'created') return { kind: 'holds', downstreamKey: request.downstreamKey, created: true };
  const held = created.held;
  if (!held) throw new Error(`the item under ${intent.intentKey} is not an intent`);
  // The window a call falls in is decided by when it was asked, not when an attempt gets to run it.
  if (held.windowEndsAtS < request.askedAtMs / 1000) return replaceEnded(table, intent, held);
  if (held.holder.recordKey !== request.holder.recordKey) return takeFromAnother(table, request, held);
  // This call's own earlier attempt created it when it holds it already (the same call).
  const own = held.holder.callId === request.holder.callId;
  return (await swapIntent(table, held.intentKey, held.holder, request.holder)) === 'swapped'
    ? {
        kind: 'holds',
        downstreamKey: held.downstreamKey,
        created: own && held.downstreamKey === (request.ownKey ?? request.downstreamKey),
      }
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
    if (state === 'live') return runningOn(record);
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
    // The intent's holder was erased: what it did is gone, and so is the intent. Held afresh under this
    // call's key: created by it only under its own (a key fixed by an earlier takeover is another call's,
    // whose effect may still run under it: only its creator frees an intent).
    const ownKey = request.ownKey ?? request.downstreamKey;
    return (await swapIntent(table, held.intentKey, held.holder, request.holder, request.downstreamKey)) === 'swapped'
      ? { kind: 'holds', downstreamKey: request.downstreamKey, created: request.downstreamKey === ownKey }
      : RUNNING;
  }
  // The holder call, still there (whichever of its attempts holds the record now). Otherwise it is gone.
  if (holdsIntent(record, held.holder)) {
    if (state === 'completed' && record.outcome) {
      return { kind: 'done', outcome: record.outcome, downstreamKey: held.downstreamKey };
    }
    if (state === 'live') return runningOn(record);
  }
  // Held as taken over, never as created — even from a holder that made no effect: a taker that could
  // free the intent (review 7, R7-1b) let a call with the key fixed, or one that fixed it and died, run
  // beside a fresh call's new intent (reviews 8 to 10: three double effects). Only the intent's creator
  // frees it; a taker's business error is kept on it for the window (conservative: no second effect).
  // Taking over: the holder swapped and the intent's key fixed on this call's record, both or neither —
  // a key is fixed only on a call that holds the intent, and a call holds one only with its key fixed
  // (rule 3). As two writes, a death or an erase between them left either a key fixed on a call that never
  // held the intent (review 9, R9-1) or an intent naming a call with no key fixed (review 10, R10-1).
  const taken = await takeOverIntent(table, held.intentKey, held.holder, request.holder, held.downstreamKey);
  if (taken === 'changed') return RUNNING;
  if (taken === 'claim_lost') return { kind: 'claim_lost' };
  return { kind: 'holds', downstreamKey: held.downstreamKey, created: false };
}

// The writes.

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

/** An intent as `createIntent` and `replaceIntent` write it. */
export interface NewIntent {
  readonly intentKey: string;
  readonly tenant: string;
  readonly tool: string;
  readonly holder: IntentHolder;
  readonly downstreamKey: string;
  readonly windowEndsAtS: number;
  /** Its TTL (epoch s): the window's end plus the records' TTL. */
  readonly expiresAtS: number;
}

function itemOf(table: IdempotencyTable, intent: NewIntent): Record<string, unknown> {
  const attr = table.attributes;
  return {
    [attr.key]: intent.intentKey,
    [attr.tenant]: intent.tenant,
    [attr.tool]: intent.tool,
    [attr.intentHolder]: intent.holder.recordKey,
    [attr.claim]: intent.holder.claimId,
    [attr.callInstance]: intent.holder.callId,
    [attr.downstreamKey]: intent.downstreamKey,
    [attr.windowEnd]: intent.windowEndsAtS,
    [attr.expiry]: intent.expiresAtS,
  };
}

/**
 * create: absent ──▶ held by this call, under its own downstream key, fixed on the intent in the same
 * write (a PutItem where none is). Refused, it answers the intent in the way (undefined only if DynamoDB
 * returned none, or it is not an intent).
 */
export async function createIntent(
  table: IdempotencyTable,
  intent: NewIntent,
): Promise<{ readonly kind: 'created' } | { readonly kind: 'held'; readonly held: Intent | undefined }> {
  const written = await conditionally(
    table.client,
    new PutItemCommand({
      TableName: table.tableName,
      Item: marshall(itemOf(table, intent)),
      ConditionExpression: 'attribute_not_exists(#id)',
      ExpressionAttributeNames: { '#id': table.attributes.key },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    }),
  );
  if (written.passed) return { kind: 'created' };
  return { kind: 'held', held: written.item && intentOf(written.item, table.attributes) };
}

/**
 * replace: window over, holder settled (on the holder read) ──▶ held by this call, afresh (a PutItem
 * over it). `changed` when its holder changed since it was read.
 */
export async function replaceIntent(
  table: IdempotencyTable,
  intent: NewIntent,
  from: IntentHolder,
): Promise<'replaced' | 'changed'> {
  const held = heldBy(table.attributes, from);
  const written = await conditionally(
    table.client,
    new PutItemCommand({
      TableName: table.tableName,
      Item: marshall(itemOf(table, intent)),
      ConditionExpression: held.expression,
      ExpressionAttributeNames: held.names,
      ExpressionAttributeValues: held.values,
    }),
  );
  return written.passed ? 'replaced' : 'changed';
}

/**
 * swap: held by `from` (as read) ──▶ held by `to`, an UpdateItem of the holder; with `downstreamKey`,
 * the intent starts afresh under it (its holder was erased). `changed` when someone moved it first.
 */
export async function swapIntent(
  table: IdempotencyTable,
  intentKey: string,
  from: IntentHolder,
  to: IntentHolder,
  downstreamKey?: string,
): Promise<'swapped' | 'changed'> {
  const written = await conditionally(
    table.client,
    new UpdateItemCommand(swapInput(table, intentKey, from, to, downstreamKey)),
  );
  return written.passed ? 'swapped' : 'changed';
}

/** swap's UpdateItem: the holder moved from `from` (as read) to `to`; with `downstreamKey`, the intent's key too. */
function swapInput(
  table: IdempotencyTable,
  intentKey: string,
  from: IntentHolder,
  to: IntentHolder,
  downstreamKey?: string,
) {
  const attr = table.attributes;
  const held = heldBy(attr, from);
  const afresh = downstreamKey !== undefined;
  return {
    TableName: table.tableName,
    Key: marshall({ [attr.key]: intentKey }),
    UpdateExpression: `SET #holder = :to, #claim = :toClaim, #call = :toCall${afresh ? ', #downstream = :downstream' : ''}`,
    ConditionExpression: held.expression,
    ExpressionAttributeNames: {
      ...held.names,
      '#call': attr.callInstance,
      ...(afresh ? { '#downstream': attr.downstreamKey } : {}),
    },
    ExpressionAttributeValues: {
      ...held.values,
      ...marshall({ ':to': to.recordKey, ':toClaim': to.claimId, ':toCall': to.callId }),
      ...(afresh ? marshall({ ':downstream': downstreamKey }) : {}),
    },
  };
}

/**
 * take over: held by `from` (as read), a holder that is gone ──▶ held by `to`, with the intent's
 * `downstreamKey` fixed on `to`'s record (on its claim), in one transaction: both writes or neither.
 * `changed` when the intent moved since it was read; `claim_lost` when `to`'s claim did (taken over by
 * another attempt, erased) — then the intent is not touched.
 */
export async function takeOverIntent(
  table: IdempotencyTable,
  intentKey: string,
  from: IntentHolder,
  to: IntentHolder,
  downstreamKey: string,
): Promise<'taken' | 'changed' | 'claim_lost'> {
  const written = await allOrNone(table.client, [
    { Update: swapInput(table, intentKey, from, to) },
    { Update: fixKeyInput(table, to, downstreamKey) },
  ]);
  if (written.passed) return 'taken';
  // This call's claim lost decides first: whatever became of the intent, this attempt ends.
  return written.refused[1] ? 'claim_lost' : 'changed';
}

/**
 * release: held by this call (its claim), created by it ──▶ absent, after its first attempt's business
 * error: nothing happened, so a corrected call can run. `changed` when it was taken over meanwhile.
 */
export async function releaseIntent(
  table: IdempotencyTable,
  intentKey: string,
  holder: IntentHolder,
): Promise<'released' | 'changed'> {
  return (await deleteIntent(table, intentKey, holder)) === 'deleted' ? 'released' : 'changed';
}

/**
 * erase: held by `from` (as read), whose call is no longer in flight ──▶ absent. `changed` when it was
 * taken over since it was read: it stays.
 */
export async function deleteIntent(
  table: IdempotencyTable,
  intentKey: string,
  from: Pick<IntentHolder, 'recordKey' | 'claimId'>,
): Promise<'deleted' | 'changed'> {
  const held = heldBy(table.attributes, from);
  const written = await conditionally(
    table.client,
    new DeleteItemCommand({
      TableName: table.tableName,
      Key: marshall({ [table.attributes.key]: intentKey }),
      ConditionExpression: held.expression,
      ExpressionAttributeNames: held.names,
      ExpressionAttributeValues: held.values,
    }),
  );
  return written.passed ? 'deleted' : 'changed';
}
