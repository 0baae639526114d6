/**
 * A dedupe window's intent's writes (docs/state-machine.md, "Dedupe-window intent"), one function per
 * transition: every one but `create` is conditioned on the holder as it was read (`heldBy`), so two callers
 * can never both take an intent over, and none frees or deletes one taken over meanwhile. What a claimant
 * does with each state it finds is decided in intent.ts (`claimIntent`).
 */
import { DeleteItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { fixKeyInput } from './claim';
import {
  type Intent,
  type IntentHolder,
  type IntentMarker,
  intentOf,
  isHeld,
  markerOf,
  type PastWindow,
  pastWindowItem,
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
  /** Its TTL (epoch s): the window's end plus the records' TTL. */
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
      // window a marker remembers, if any, ended before this call was asked.
      ConditionExpression:
        'attribute_not_exists(#holder) AND attribute_not_exists(#status) AND (attribute_not_exists(#replaced) OR #replaced.#end < :asked)',
      ExpressionAttributeNames: {
        ...Object.fromEntries(names.map((name, n) => [`#a${n}`, name])),
        '#holder': attr.intentHolder,
        '#status': attr.status,
        '#replaced': attr.replacedWindow,
        '#end': 'end',
      },
      ExpressionAttributeValues: marshall({
        ...Object.fromEntries(names.map((name, n) => [`:a${n}`, item[name]])),
        ':asked': askedAtMs / 1000,
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
 * swap: held by its holder as read ──▶ held by `to`, an UpdateItem of the holder; with `downstreamKey`,
 * the intent starts afresh under it (its holder was erased). `changed` when someone moved it first.
 */
export async function swapIntent(
  table: IdempotencyTable,
  read: Intent,
  to: IntentHolder,
  downstreamKey?: string,
): Promise<'swapped' | 'changed'> {
  const written = await conditionally(table.client, new UpdateItemCommand(swapInput(table, read, to, downstreamKey)));
  return written.passed ? 'swapped' : 'changed';
}

/** swap's UpdateItem: the holder moved from the one read to `to`; with `downstreamKey`, the intent's key too. */
function swapInput(table: IdempotencyTable, read: Intent, to: IntentHolder, downstreamKey?: string) {
  const attr = table.attributes;
  const held = heldBy(attr, read.holder);
  const afresh = downstreamKey !== undefined;
  // `to` may run under the key: one of the runners — the only one of an intent started afresh. The holder it
  // is taken from stays one (an earlier version's intent lists none), and so does the mark that earlier
  // runners are unknown (`UNKNOWN_RUNNERS`): once unknown, never "alone" (review 13, R13-1, R13-4).
  const added = afresh ? [to.callId] : [to.callId, read.holder.callId];
  if (!read.runnersKnown && !afresh) added.push(UNKNOWN_RUNNERS);
  return {
    TableName: table.tableName,
    Key: marshall({ [attr.key]: read.intentKey }),
    UpdateExpression: afresh
      ? 'SET #holder = :to, #claim = :toClaim, #call = :toCall, #downstream = :downstream, #runners = :runner'
      : 'SET #holder = :to, #claim = :toClaim, #call = :toCall ADD #runners :runner',
    ConditionExpression: held.expression,
    ExpressionAttributeNames: {
      ...held.names,
      '#call': attr.callInstance,
      '#runners': attr.intentRunners,
      ...(afresh ? { '#downstream': attr.downstreamKey } : {}),
    },
    ExpressionAttributeValues: {
      ...held.values,
      ...marshall({
        ':to': to.recordKey,
        ':toClaim': to.claimId,
        ':toCall': to.callId,
        ':runner': new Set(added),
      }),
      ...(afresh ? marshall({ ':downstream': downstreamKey }) : {}),
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
 * erase: held by its holder as read, none of its runners' calls in flight ──▶ absent. `changed` when it was
 * taken over since it was read (a call that holds it, or runs under its key, holds a claim of its holder's
 * or is its holder): it stays. A marker: held by none ──▶ absent; `changed` when a call created the intent
 * over it since.
 */
export async function deleteIntent(
  table: IdempotencyTable,
  intent: Intent | IntentMarker,
): Promise<'deleted' | 'changed'> {
  const held: Condition = isHeld(intent)
    ? heldBy(table.attributes, intent.holder)
    : {
        expression: 'attribute_not_exists(#holder)',
        names: { '#holder': table.attributes.intentHolder },
        values: {},
      };
  const written = await conditionally(
    table.client,
    new DeleteItemCommand({
      TableName: table.tableName,
      Key: marshall({ [table.attributes.key]: intent.intentKey }),
      ConditionExpression: held.expression,
      ExpressionAttributeNames: held.names,
      ...(Object.keys(held.values).length > 0 ? { ExpressionAttributeValues: held.values } : {}),
    }),
  );
  return written.passed ? 'deleted' : 'changed';
}
