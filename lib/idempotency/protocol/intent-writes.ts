/**
 * A dedupe window's intent's writes (docs/state-machine.md, "Dedupe-window intent"), one function per
 * transition: every one but `create` is conditioned on the holder as it was read (`heldBy`), so two callers
 * can never both take an intent over, and none frees or deletes one taken over meanwhile. What a claimant
 * does with each state it finds is decided in intent.ts (`claimIntent`).
 */
import { DeleteItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { CLOCK_SKEW_TOLERANCE_MS } from '../call-state';
import { fixKeyInput } from './claim-writes';
import {
  type Intent,
  type IntentHolder,
  type IntentMarker,
  intentOf,
  isHeld,
  markerOf,
  ownWindowOf,
  type PastWindow,
  pastWindowItem,
  pastWindowsOf,
  UNKNOWN_RUNNERS,
} from './intent-record';
import { allOrNone, type Condition, conditionally, heldBy, type IdempotencyTable } from './table';

/** An intent as `createIntent` and `replaceIntent` write it. */
export interface NewIntent {
  readonly intentKey: string;
  readonly tenant: string;
  readonly tool: string;
  readonly holder: IntentHolder;
  readonly downstreamKey: string;
  readonly windowEndsAtS: number;
  /** Its TTL (epoch s): the window's end plus `MAX_WINDOWED_TTL_SECONDS`, or later (what it remembers). */
  readonly expiresAtS: number;
  /** The window it replaces (or a marker left), kept to answer the calls asked in it. */
  readonly replaced?: PastWindow | undefined;
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
    [attr.intentRunners]: new Set([intent.holder.callId]),
    [attr.expiry]: intent.expiresAtS,
    ...(intent.replaced ? { [attr.replacedWindow]: pastWindowItem(intent.replaced) } : {}),
  };
}

/**
 * create: absent — or a marker (a freed intent: no holder) whose window it replaced, if any, ended before this
 * call was asked — ──▶ held by this call, under its own downstream key, fixed on the intent in the same write:
 * one UpdateItem, which keeps the marker's `replaced_window` (review 18, R18-2: one write, as a PutItem where
 * none is was; R18-5: a marker that changed since it was read is judged as it is when written). Refused, it
 * answers the intent (or marker) in the way — undefined only if DynamoDB returned none.
 */
export async function createIntent(
  table: IdempotencyTable,
  intent: NewIntent,
  /** When the creating call was asked: a marker's window must have ended before. @default now */
  askedAtMs: number = Date.now(),
): Promise<{ readonly kind: 'created' } | { readonly kind: 'held'; readonly held: Intent | IntentMarker | undefined }> {
  const attr = table.attributes;
  const item = itemOf(table, intent);
  delete item[attr.key];
  const names = Object.keys(item);
  const written = await conditionally(
    table.client,
    new UpdateItemCommand({
      TableName: table.tableName,
      Key: marshall({ [attr.key]: intent.intentKey }),
      UpdateExpression: `SET ${names.map((_, n) => `#a${n} = :a${n}`).join(', ')}`,
      // No holder (absent, or a marker), nor a status (a call record's, or anything else: refused), and the
      // window a marker remembers, if any, ended before this call was asked and the marker lives no longer
      // than this intent will (a window it remembers may have been asked under a longer TTL: refused, the
      // claimant creates again to live as long — review 21, R21-2). A marker that remembers no window has
      // nothing to outlive: its TTL is no reason to refuse (review 22, R22-2: a second write for nothing).
      ConditionExpression:
        'attribute_not_exists(#holder) AND attribute_not_exists(#status) AND (attribute_not_exists(#replaced) OR (#replaced.#end < :asked AND (attribute_not_exists(#expiry) OR #expiry <= :expiry)))',
      ExpressionAttributeNames: {
        ...Object.fromEntries(names.map((name, n) => [`#a${n}`, name])),
        '#holder': attr.intentHolder,
        '#status': attr.status,
        '#replaced': attr.replacedWindow,
        '#end': 'end',
        '#expiry': attr.expiry,
      },
      ExpressionAttributeValues: marshall({
        ...Object.fromEntries(names.map((name, n) => [`:a${n}`, item[name]])),
        ':asked': askedAtMs / 1000,
        ':expiry': intent.expiresAtS,
      }),
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    }),
  );
  if (written.passed) return { kind: 'created' };
  const held = written.item && (intentOf(written.item, attr) ?? markerOf(written.item, attr));
  return { kind: 'held', held };
}

/**
 * replace: window over, holder settled (on the holder read) ──▶ held by this call, afresh (a PutItem
 * over it). `changed` when its holder changed since it was read.
 */
export async function replaceIntent(
  table: IdempotencyTable,
  intent: NewIntent,
  read: Intent,
): Promise<'replaced' | 'changed'> {
  const held = heldBy(table.attributes, read.holder);
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
 * swap: held by its holder as read ──▶ held by `to`, an UpdateItem of the holder, its key kept. `changed`
 * when someone moved it first.
 */
export async function swapIntent(
  table: IdempotencyTable,
  read: Intent,
  to: IntentHolder,
): Promise<'swapped' | 'changed'> {
  const written = await conditionally(table.client, new UpdateItemCommand(swapInput(table, read, to)));
  return written.passed ? 'swapped' : 'changed';
}

/** swap's UpdateItem: the holder moved from the one read to `to`, both among the runners. */
function swapInput(table: IdempotencyTable, read: Intent, to: IntentHolder) {
  const attr = table.attributes;
  const held = heldBy(attr, read.holder);
  // `to` may run under the key: one of the runners. The holder it is taken from stays one (an earlier
  // version's intent lists none), and so does the mark that earlier runners are unknown (`UNKNOWN_RUNNERS`):
  // once unknown, never "alone" (review 13, R13-1, R13-4).
  const added = [to.callId, read.holder.callId];
  if (!read.runnersKnown) added.push(UNKNOWN_RUNNERS);
  return {
    TableName: table.tableName,
    Key: marshall({ [attr.key]: read.intentKey }),
    UpdateExpression: 'SET #holder = :to, #claim = :toClaim, #call = :toCall ADD #runners :runner',
    ConditionExpression: held.expression,
    ExpressionAttributeNames: { ...held.names, '#call': attr.callInstance, '#runners': attr.intentRunners },
    ExpressionAttributeValues: {
      ...held.values,
      ...marshall({ ':to': to.recordKey, ':toClaim': to.claimId, ':toCall': to.callId, ':runner': new Set(added) }),
    },
  };
}

/**
 * fix a past window's key: `to`'s record (on its claim) names the key of a window an intent replaced, which
 * it runs under — before it runs, so that its later attempts run under it too, whatever becomes of the intent
 * (review 17, R17-1: erased, or replaced again, it answered nothing more of that window). `claim_lost` when its
 * claim is.
 */
export async function fixPastWindowKey(
  table: IdempotencyTable,
  to: IntentHolder,
  window: PastWindow,
): Promise<'fixed' | 'claim_lost'> {
  const written = await conditionally(
    table.client,
    new UpdateItemCommand(fixKeyInput(table, to, window.downstreamKey)),
  );
  return written.passed ? 'fixed' : 'claim_lost';
}

/**
 * take over: held by its holder as read, a holder that is gone ──▶ held by `to`, with the intent's
 * downstream key fixed on `to`'s record (on its claim), in one transaction: both writes or neither.
 * `changed` when the intent moved since it was read; `claim_lost` when `to`'s claim did (taken over by
 * another attempt, erased) — then the intent is not touched.
 */
export async function takeOverIntent(
  table: IdempotencyTable,
  read: Intent,
  to: IntentHolder,
): Promise<'taken' | 'changed' | 'claim_lost'> {
  const written = await allOrNone(table.client, [
    { Update: swapInput(table, read, to) },
    { Update: fixKeyInput(table, to, read.downstreamKey) },
  ]);
  if (written.passed) return 'taken';
  // This call's claim lost decides first: whatever became of the intent, this attempt ends.
  return written.refused[1] ? 'claim_lost' : 'changed';
}

/**
 * release: held by this call (its claim), created by it, its only runner ──▶ a marker, after its first run's
 * business error: nothing happened, so a corrected call can run (create passes a marker). One UpdateItem that
 * removes its holder, key, window and runners, keeping the window it replaced (`replaced_window`), if any: the
 * calls asked in that window, none of whose attempts reached it, are still answered from it (review 14,
 * R14-4; one write whether or not it replaced one — review 18, R18-1). `changed` when it was taken over, or
 * run under by another call, meanwhile (review 12, R12-2).
 */
export async function releaseIntent(
  table: IdempotencyTable,
  intentKey: string,
  holder: IntentHolder,
): Promise<'released' | 'changed'> {
  const attr = table.attributes;
  const alone = heldBy(attr, holder, 1);
  const written = await conditionally(
    table.client,
    new UpdateItemCommand({
      TableName: table.tableName,
      Key: marshall({ [attr.key]: intentKey }),
      UpdateExpression: 'REMOVE #holder, #claim, #call, #downstream, #end, #runners',
      ConditionExpression: alone.expression,
      ExpressionAttributeNames: {
        ...alone.names,
        '#call': attr.callInstance,
        '#downstream': attr.downstreamKey,
        '#end': attr.windowEnd,
      },
      ExpressionAttributeValues: alone.values,
    }),
  );
  return written.passed ? 'released' : 'changed';
}

/**
 * erase, the rule (review 19, R19-1, R19-2): an intent, or a marker, that remembers a window outlives the
 * tenant's erase as a marker of no tenant — no tenant, tool, holder, key, window or runners, to its TTL —
 * that remembers its windows: a call asked in one, none of whose attempts reached the intent (erase cannot see
 * it), may still be in flight, and its resend then runs under that window's key, never beside its effect.
 *
 *   held by its holder as read, none of its runners in flight ──▶ such a marker, remembering its own window,
 *                                                                 ended at the erase (+ the clock skew), and,
 *                                                                 as its priors, those it remembered
 *   a marker (held by none) that remembers a window ────────────▶ the same, its tenant and tool removed
 *   a marker that remembers none, or any of them past its TTL ──▶ absent (`deleteIntent`)
 *
 * `changed` when it was taken over since it was read, or a call created the intent over the marker: it stays.
 */
export async function eraseIntentItem(
  table: IdempotencyTable,
  intent: Intent | IntentMarker,
  nowMs: number = Date.now(),
): Promise<'erased' | 'changed'> {
  const remembers = isHeld(intent) || intent.replaced !== undefined;
  if (!remembers || nowMs >= intent.expiresAtS * 1000) {
    return (await deleteIntent(table, intent, nowMs)) === 'deleted' ? 'erased' : 'changed';
  }
  const attr = table.attributes;
  const held = heldOrNone(table, intent);
  const forget = '#tenant, #tool';
  const written = await conditionally(
    table.client,
    new UpdateItemCommand({
      TableName: table.tableName,
      Key: marshall({ [attr.key]: intent.intentKey }),
      UpdateExpression: isHeld(intent)
        ? `SET #replaced = :window REMOVE #holder, #claim, #call, #downstream, #end, #runners, ${forget}`
        : `REMOVE ${forget}`,
      ConditionExpression: held.expression,
      ExpressionAttributeNames: {
        ...held.names,
        '#tenant': attr.tenant,
        '#tool': attr.tool,
        ...(isHeld(intent)
          ? {
              '#replaced': attr.replacedWindow,
              '#call': attr.callInstance,
              '#downstream': attr.downstreamKey,
              '#end': attr.windowEnd,
              '#runners': attr.intentRunners,
            }
          : {}),
      },
      ...(isHeld(intent)
        ? { ExpressionAttributeValues: { ...held.values, ...marshall({ ':window': erasedWindow(intent, nowMs) }) } }
        : {}),
    }),
  );
  return written.passed ? 'erased' : 'changed';
}

/**
 * The window an erased intent's marker remembers: its own, ended at the erase — plus the clock skew rule 2
 * tolerates between workers, so that a call asked before the erase on any worker's clock is in it (review
 * 20, R20-3, R20-4: ended at this worker's now, a call asked in it on a clock 3 s ahead fell after it and
 * created the intent anew); a call asked later is a fresh one (rule 3) — and, as its priors, every window
 * the intent remembered (R20-1), 24 at most.
 */
function erasedWindow(intent: Intent, nowMs: number): Record<string, unknown> {
  const own = ownWindowOf(intent, true);
  const endsAtS = Math.min(own.endsAtS, Math.ceil((nowMs + CLOCK_SKEW_TOLERANCE_MS) / 1000));
  return pastWindowItem(pastWindowsOf({ ...own, endsAtS }));
}

/** An intent's condition on its holder as read (`heldBy`), or, a marker, that none holds it. */
function heldOrNone(table: IdempotencyTable, intent: Intent | IntentMarker): Condition {
  return isHeld(intent)
    ? heldBy(table.attributes, intent.holder)
    : { expression: 'attribute_not_exists(#holder)', names: { '#holder': table.attributes.intentHolder }, values: {} };
}

/**
 * delete: held by its holder as read ──▶ absent; a marker, held by none ──▶ absent — and, either way, still
 * what made it deletable when read: past its TTL (its expiry still no later than `nowMs`), or, a marker, one
 * that remembers no window (review 22, R22-3: conditioned on no holder alone, a stale delete passed on the
 * marker a create and a second erase had left meanwhile, remembering the window created — forgotten, a
 * call asked in it ran anew). `changed` when it was taken over since it was read (a call that holds it, or
 * runs under its key, holds a claim of its holder's or is its holder), a call created the intent over the
 * marker, or the marker now remembers a window: it stays. Erase deletes only what remembers no window, or
 * is past its TTL (`eraseIntentItem`).
 */
export async function deleteIntent(
  table: IdempotencyTable,
  intent: Intent | IntentMarker,
  nowMs: number = Date.now(),
): Promise<'deleted' | 'changed'> {
  const held = heldOrNone(table, intent);
  // A held intent remembers its own window: deletable only past its TTL.
  const deletable = isHeld(intent) ? '#expiry <= :now' : '(attribute_not_exists(#replaced) OR #expiry <= :now)';
  const written = await conditionally(
    table.client,
    new DeleteItemCommand({
      TableName: table.tableName,
      Key: marshall({ [table.attributes.key]: intent.intentKey }),
      ConditionExpression: `${held.expression} AND ${deletable}`,
      ExpressionAttributeNames: {
        ...held.names,
        '#expiry': table.attributes.expiry,
        ...(isHeld(intent) ? {} : { '#replaced': table.attributes.replacedWindow }),
      },
      ExpressionAttributeValues: { ...held.values, ...marshall({ ':now': nowMs / 1000 }) },
    }),
  );
  return written.passed ? 'deleted' : 'changed';
}
