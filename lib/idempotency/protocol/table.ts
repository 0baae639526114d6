import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  type PutItemCommand,
  TransactionCanceledException,
  type TransactWriteItem,
  TransactWriteItemsCommand,
  type UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { type CallState, classify } from '../call-state';
import type { IntentHolder } from './intent-record';
import {
  type CallRecord,
  callRecordOf,
  DEFAULT_IDEMPOTENCY_TABLE_NAME,
  type RecordAttributes,
  recordAttributes,
  recordKeyOfCallId,
  STATUS,
  type StalledReason,
} from './record';

/** Where the protocol reads and writes: the idempotency table, its client and its attribute names. */
export interface IdempotencyTable {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  readonly attributes: RecordAttributes;
}

/** The idempotency table as its users name it: everything but the client has a default. */
export interface IdempotencyTableOptions {
  /** Client for the idempotency table (shared; nothing keeps per-call state on it). */
  readonly client: DynamoDBClient;
  /**
   * Name of the idempotency table.
   * @default DEFAULT_IDEMPOTENCY_TABLE_NAME ('retrysafe-idempotency')
   */
  readonly tableName?: string;
  /**
   * The record's attribute names; those not given keep their default.
   * @default DEFAULT_RECORD_ATTRIBUTES (`id`, `expiration`, `in_progress_expiration`, `status`, `data`,
   * `validation`, `tenant`, `tool`, `claim_id`, …)
   */
  readonly attributes?: Partial<RecordAttributes>;
}

/** The table the protocol works on, from its options (the attribute names merged by `recordAttributes`). */
export function idempotencyTable(options: IdempotencyTableOptions): IdempotencyTable {
  return {
    client: options.client,
    tableName: options.tableName ?? DEFAULT_IDEMPOTENCY_TABLE_NAME,
    attributes: recordAttributes(options.attributes),
  };
}

/** The call record under `recordKey`, read consistently, or undefined (none, or not a call record). */
export async function readCallRecord(table: IdempotencyTable, recordKey: string): Promise<CallRecord | undefined> {
  const item = await readItem(table, recordKey);
  return item && callRecordOf(item, table.attributes);
}

/**
 * The call `callId` names, as its record is now (one consistent GetItem): the record and its state, read at
 * `nowMs` — or undefined when no record is under its key, or the one there is another call's (claimed anew).
 */
export async function callOf(
  table: IdempotencyTable,
  callId: string,
  nowMs = Date.now(),
): Promise<{ readonly record: CallRecord; readonly state: CallState } | undefined> {
  const recordKey = recordKeyOfCallId(callId);
  const record = recordKey === undefined ? undefined : await readCallRecord(table, recordKey);
  return record?.callId === callId ? { record, state: classify(record, nowMs) } : undefined;
}

/** The item under `key` (a call record or an intent), read consistently and unmarshalled, or undefined. */
export async function readItem(table: IdempotencyTable, key: string): Promise<Record<string, unknown> | undefined> {
  const { Item } = await table.client.send(
    new GetItemCommand({
      TableName: table.tableName,
      Key: { [table.attributes.key]: { S: key } },
      ConsistentRead: true,
    }),
  );
  return Item && unmarshall(Item);
}

/**
 * One conditional write: `passed` (with the item after it, when the command asks for it), or `failed`
 * when its condition did not hold — with the item as it was, when the command asks for it
 * (`ReturnValuesOnConditionCheckFailure: 'ALL_OLD'`: the refusal and the item in one round trip). Any
 * other failure throws: the caller decides what an outage means where it is.
 */
export async function conditionally(
  client: DynamoDBClient,
  command: PutItemCommand | UpdateItemCommand | DeleteItemCommand,
): Promise<{ readonly passed: boolean; readonly item: Record<string, unknown> | undefined }> {
  try {
    const output = await client.send(command as UpdateItemCommand);
    return { passed: true, item: output?.Attributes ? unmarshall(output.Attributes) : undefined };
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    return { passed: false, item: error.Item ? unmarshall(error.Item) : undefined };
  }
}

/**
 * Conditional writes made all or none (one TransactWriteItems): `passed`, or `failed` with, per item in
 * order, whether its condition did not hold — an answer whenever one condition failed, whatever else
 * cancelled it (a failed condition is final; review 11, R11-5). A transaction cancelled for other reasons
 * only (a conflict with a write in flight on one of its items, throttling) throws: it changed nothing, and
 * is transient (`isTransientAwsError`).
 */
export async function allOrNone(
  client: DynamoDBClient,
  items: readonly TransactWriteItem[],
): Promise<{ readonly passed: true } | { readonly passed: false; readonly refused: readonly boolean[] }> {
  try {
    await client.send(new TransactWriteItemsCommand({ TransactItems: [...items] }));
    return { passed: true };
  } catch (error) {
    if (!(error instanceof TransactionCanceledException)) throw error;
    const refused = (error.CancellationReasons ?? []).map(({ Code }) => Code === 'ConditionalCheckFailed');
    if (refused.length !== items.length || !refused.includes(true)) throw error;
    return { passed: false, refused };
  }
}

/** A condition with the names and values it uses. */
export interface Condition {
  readonly expression: string;
  readonly names: Record<string, string>;
  readonly values: Record<string, AttributeValue>;
}

/**
 * The one DynamoDB condition for "this claim's attempt is over" — `classify`'s `abandoned` (or
 * `stalled`), on the claim that was read:
 *
 *   INPROGRESS, held by `claimId` ──▶ its lock ended before `nowMs` ──▶ and its TTL is not before `notBeforeAtS`
 *
 * A takeover asks `notBeforeAtS` = its own lock's end (no lock may end after its record's TTL); the
 * completer giving up asks now (the record has not expired).
 */
export function lockEndedOn(
  attr: RecordAttributes,
  claimId: string,
  { nowMs, notBeforeAtS }: { readonly nowMs: number; readonly notBeforeAtS: number },
): Condition {
  return {
    expression: '#status = :inProgress AND #claim = :claim AND #lockEnd < :nowMs AND #expiry >= :notBeforeAtS',
    names: { '#status': attr.status, '#claim': attr.claim, '#lockEnd': attr.lockEnd, '#expiry': attr.expiry },
    values: {
      ':inProgress': { S: STATUS.inProgress },
      ':claim': { S: claimId },
      ':nowMs': { N: String(nowMs) },
      ':notBeforeAtS': { N: String(notBeforeAtS) },
    },
  };
}

/**
 * The one DynamoDB condition for "this claim still holds the record": every write an attempt makes on its
 * own claim (fix the downstream key, store; park and release, `inProgress`) is conditioned on it, so an
 * attempt whose claim was taken over — or whose record was erased, or expired and claimed anew — writes
 * nothing.
 */
export function ownClaim(attr: RecordAttributes, claimId: string, inProgress?: boolean): Condition {
  const names: Record<string, string> = { '#claim': attr.claim };
  const values: Record<string, AttributeValue> = { ':claim': { S: claimId } };
  if (!inProgress) return { expression: '#claim = :claim', names, values };
  // Still in flight too (park, release): a stored outcome keeps the claim that stored it.
  names['#status'] = attr.status;
  values[':inProgress'] = { S: STATUS.inProgress };
  return { expression: '#claim = :claim AND #status = :inProgress', names, values };
}

/** The value placeholder of a give-up in advance's reason (`expiring`): the explorer's lease check reads it. */
export const EXPIRING_VALUE = ':expiring';

/**
 * The one write of a give-up in advance (rule 2: a lock that ends past the call's last look): `stalled_claim`
 * the claim `claimValue` names (a value placeholder of the same write) and `stalled_reason` `expiring` — the
 * SET terms, with their names and values. A takeover's (`takeOver`) and a park's (`park`) alike.
 */
export function givingUp(
  attr: RecordAttributes,
  claimValue: string,
): Omit<Condition, 'expression'> & { readonly sets: readonly string[] } {
  return {
    sets: [`#stalled = ${claimValue}`, `#reason = ${EXPIRING_VALUE}`],
    names: { '#stalled': attr.stalledClaim, '#reason': attr.stalledReason },
    values: { [EXPIRING_VALUE]: { S: 'expiring' satisfies StalledReason } },
  };
}

/**
 * The one condition that an intent is still held as it was read: by `from`'s record, on `from`'s claim (a
 * call that holds it, or is added to its runners, changes one or the other) — and, with `runners`, with
 * that many runners listed (one an earlier version wrote lists none, and passes no such condition): release
 * asks for one, its creator alone, since a call it took the intent back from may have run under its key
 * (review 12, R12-2).
 */
export function heldBy(
  attr: RecordAttributes,
  from: Pick<IntentHolder, 'recordKey' | 'claimId'>,
  runners?: number,
): Condition {
  const held = {
    expression: '#holder = :from AND #claim = :fromClaim',
    names: { '#holder': attr.intentHolder, '#claim': attr.claim },
    values: { ':from': { S: from.recordKey }, ':fromClaim': { S: from.claimId } },
  };
  if (runners === undefined) return held;
  return {
    expression: `${held.expression} AND size(#runners) = :runners`,
    names: { ...held.names, '#runners': attr.intentRunners },
    values: { ...held.values, ':runners': { N: String(runners) } },
  };
}

/**
 * The filter a scan for calls in flight adds: in progress, and not a dedupe window's intent (intents
 * carry no call). Its names and values as DynamoDB takes them.
 */
export function inFlightFilter(attributes: Partial<RecordAttributes> = {}): Condition {
  const attr = recordAttributes(attributes);
  return {
    expression: '#status = :inProgress AND attribute_not_exists(#holder)',
    names: { '#status': attr.status, '#holder': attr.intentHolder },
    values: { ':inProgress': { S: STATUS.inProgress } },
  };
}
