/**
 * Erase (docs/state-machine.md, rule 6), in one file: what an operator's erase does with each idempotency
 * item of a tenant it found, and whether the call that stamped an app item is still in flight — decided
 * here on `classify`'s state — and erase's writes, one function per transition, each answering what it did
 * or `changed` (the item moved on since it was read: a rerun decides): the call record's (`tombstone`,
 * `closeStalled`, `deleteExpired`), an intent's (`eraseIntentItem`, with the intent's other writes), and an app
 * item's (`deleteOnStampsRead`). The scan and the choice of the app's tables are the caller's.
 */
import {
  type AttributeValue,
  DeleteItemCommand,
  type DynamoDBClient,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { completerLooksAtMs } from '../backoff';
import {
  type CallState,
  classify,
  expiredFromMs,
  type InFlightState,
  isInFlight,
  stalledChangesAtMs,
} from '../call-state';
import { runnersInFlight } from './intent';
import { type Intent, intentOf, isHeld, markerOf } from './intent-record';
import { eraseIntentItem } from './intent-writes';
import { type CallRecord, callRecordOf, isIntentKey, STATUS } from './record';
import {
  callOf,
  conditionally,
  type IdempotencyTable,
  type IdempotencyTableOptions,
  idempotencyTable,
  lockEndedOn,
  readCallRecord,
  readItem,
} from './table';

export interface EraseRecordOptions {
  /** Count only: nothing is written. @default false */
  readonly dryRun?: boolean;
  /** Close the calls the completer gave up on (`stalled`): only when the app's tables are erased too. @default false */
  readonly closeStalled?: boolean;
}

/** What erase did with one item: erased (or deleted) now, kept because its call is in flight, or nothing. */
export type RecordErasure = 'erased' | 'in_flight' | 'nothing';

/**
 * A call erase kept (`in_flight`): which tool's code may still write for it, and when it can next change
 * by itself — erase again then. Every domain table its tool's `access` names waits for it.
 */
export interface KeptCall {
  readonly recordKey: string;
  /**
   * Its tool, as its record names it (else its record key's prefix); undefined when the item is not readable
   * as a call record at all, or Powertools' handler wrote it — then it may write to any table.
   */
  readonly tool: string | undefined;
  /**
   * `live`, `abandoned`, `stalled` as `classify` reads it; `unreadable`: in progress, but not a call
   * record as every claim writes it; `changed`: it changed while erase wrote to it (a rerun decides).
   */
  readonly state: InFlightState | 'unreadable' | 'changed';
  /**
   * The earliest time (epoch ms, not before now) it can change by itself ({@link nextChangeAtMs}); undefined
   * when nothing will move it but a resend with its key or erase with the app's tables (`stalled`), or
   * when erase cannot tell (`unreadable`).
   */
  readonly changesAtMs: number | undefined;
}

/** What erase did with one item, and the call it kept (`in_flight`; an intent's holder for an intent). */
export interface ItemErasure {
  readonly outcome: RecordErasure;
  readonly kept?: KeptCall;
}

/**
 * When a call in flight can next change by itself (epoch ms): a live one at its lock's end (its attempt stores,
 * parks or dies by then); an abandoned one when the completer next looks at it (`completerLooksAtMs`, the
 * schedule every answer follows); a stalled one never — but one Powertools' handler left, or no resend fits,
 * past its TTL, as every answer about it says (`stalledChangesAtMs`; review 35, F1).
 */
export function nextChangeAtMs(record: CallRecord, state: InFlightState, nowMs: number): number | undefined {
  if (state === 'live') return record.lockEndsMs;
  return state === 'stalled' ? stalledChangesAtMs(record, nowMs) : completerLooksAtMs(record);
}

/** The call erase keeps for `record` in `state` (in flight), as of `nowMs`. */
function keptCallOf(record: CallRecord, state: InFlightState, nowMs: number): KeptCall {
  const changesAtMs = nextChangeAtMs(record, state, nowMs);
  return {
    recordKey: record.recordKey,
    // Powertools' handler ran a function of its own, not the tool whose `access` erase knows: any table waits.
    tool: record.writtenBy === 'powertools' ? undefined : (record.tool ?? toolOfRecordKey(record.recordKey)),
    state,
    changesAtMs: changesAtMs === undefined ? undefined : Math.max(nowMs, changesAtMs),
  };
}

/** The tool a record key (`<tool>#<hash>`) names, or undefined when it names none. */
function toolOfRecordKey(recordKey: string): string | undefined {
  const hash = recordKey.indexOf('#');
  return hash > 0 ? recordKey.slice(0, hash) : undefined;
}

/**
 * Erases one of a tenant's idempotency items (unmarshalled, as a scan found it): a call record or a dedupe
 * window's intent. Safe to run again: what is gone stays gone, and an item changed meanwhile is left to a rerun.
 */
export async function eraseRecord(
  table: IdempotencyTableOptions,
  item: Record<string, unknown>,
  options: EraseRecordOptions = {},
): Promise<RecordErasure> {
  return (await eraseItem(table, item, options)).outcome;
}

/** {@link eraseRecord}, and the call it kept: for a tenant erase, which of the app's tables wait, until when. */
export async function eraseItem(
  table: IdempotencyTableOptions,
  item: Record<string, unknown>,
  options: EraseRecordOptions = {},
): Promise<ItemErasure> {
  const within = idempotencyTable(table);
  const settled = { dryRun: options.dryRun ?? false, closeStalled: options.closeStalled ?? false };
  if (isIntentKey(String(item[within.attributes.key]))) return eraseIntent(within, item, settled);
  const record = callRecordOf(item, within.attributes);
  if (record === undefined) return unreadable(within, item);
  return eraseCallRecord(within, record, settled);
}

/**
 * An item that is not a call record as every claim writes it: nothing to erase by the rules, but while
 * it says in progress (and its TTL, if any, has not passed) it may be a call in flight that erase cannot
 * read — kept, and its tool taken as unknown, so every app table waits (it may commit anywhere).
 */
function unreadable(table: IdempotencyTable, item: Record<string, unknown>): ItemErasure {
  const attr = table.attributes;
  const expiry = item[attr.expiry];
  const expired = typeof expiry === 'number' && expiry < Date.now() / 1000;
  if (item[attr.status] !== STATUS.inProgress || expired) return { outcome: 'nothing' };
  const key = item[attr.key];
  return {
    outcome: 'in_flight',
    kept: {
      recordKey: typeof key === 'string' ? key : '?',
      tool: undefined,
      state: 'unreadable',
      changesAtMs: undefined,
    },
  };
}

/**
 * What a tenant's erase makes of an item with no tenant (rule 6) — one Powertools' handler wrote (its layer
 * writes none, and its key `<function>#<hash>` names none): it may be any tenant's, so erase writes nothing
 * to it, and assumes it is the tenant's. In flight (`classify`; or in progress and unreadable): kept, its
 * tool unknown, so every app table waits. Completed: it may hold the tenant's result until its TTL
 * (`untilMs`: the first instant every reader counts it expired, `expiredFromMs`). Anything else (expired, a tombstone, not in progress): nothing.
 */
export function unattributedItem(
  table: IdempotencyTableOptions,
  item: Record<string, unknown>,
): { readonly kept: KeptCall } | { readonly untilMs: number } | undefined {
  const within = idempotencyTable(table);
  const record = callRecordOf(item, within.attributes);
  if (record === undefined) {
    const { kept } = unreadable(within, item);
    return kept === undefined ? undefined : { kept };
  }
  const nowMs = Date.now();
  const state = classify(record, nowMs);
  if (isInFlight(state)) return { kept: { ...keptCallOf(record, state, nowMs), tool: undefined } };
  // Until every reader counts it expired (review 35, F3: told to erase again at its TTL, erase found it there).
  return state === 'completed' ? { untilMs: expiredFromMs(record.expiresAtS) } : undefined;
}

/** Whether the call `callId` names (an app item's stamp) may still commit: its record (still its own) in flight. */
export async function isCallInFlight(table: IdempotencyTableOptions, callId: string): Promise<boolean> {
  return (await callInFlight(table, callId)) !== undefined;
}

/** The call `callId` names as erase keeps it, while it is in flight ({@link isCallInFlight}); else undefined. */
export async function callInFlight(table: IdempotencyTableOptions, callId: string): Promise<KeptCall | undefined> {
  const nowMs = Date.now();
  const call = await callOf(idempotencyTable(table), callId, nowMs);
  return call && isInFlight(call.state) ? keptCallOf(call.record, call.state, nowMs) : undefined;
}

/**
 * A call record, by its state: a completed one becomes a tombstone (`tombstone`); a call in flight (live,
 * or abandoned: the completer or a retry may still finish it, and its effect may have happened) is kept
 * and reported, to be finished and erased by a later run; a stalled one (the completer gave up on it) is
 * closed with the app's tables (`closeStalled`: nothing else would finish it) and kept without them; an
 * expired one is deleted (`deleteExpired`). A record that changed meanwhile is left to a rerun.
 */
async function eraseCallRecord(
  table: IdempotencyTable,
  record: CallRecord,
  options: Required<EraseRecordOptions>,
): Promise<ItemErasure> {
  const nowMs = Date.now();
  const state = classify(record, nowMs);
  if (state === 'absent' || state === 'erased') return { outcome: 'nothing' };
  if (state === 'stalled' && options.closeStalled && record.claimId !== undefined) {
    if (options.dryRun) return { outcome: 'nothing' };
    if ((await closeStalled(table, record.recordKey, record.claimId, nowMs)) === 'erased') return { outcome: 'erased' };
    // Taken over meanwhile (live), or parked by the attempt given up on: a rerun decides, at once.
    return {
      outcome: 'in_flight',
      kept: { ...keptCallOf(record, state, nowMs), state: 'changed', changesAtMs: nowMs },
    };
  }
  if (isInFlight(state)) return { outcome: 'in_flight', kept: keptCallOf(record, state, nowMs) };
  if (options.dryRun) return { outcome: 'nothing' };
  const done =
    state === 'expired'
      ? await deleteExpired(table, record.recordKey, nowMs)
      : await tombstone(table, record.recordKey);
  return { outcome: done === 'changed' ? 'nothing' : 'erased' };
}

/**
 * A dedupe window's intent: kept while a call that may run under its key — its holder, or any other of its
 * runners (its creator, an earlier taker) — is in flight (a fresh key inside the window would otherwise run
 * beside it: review 11, R11-1); a stalled one is closed first when erase closes stalled calls (review 12,
 * R12-3); erased otherwise, on the holder it was read with (`eraseIntentItem`: to a marker of no tenant that
 * remembers its windows for the calls asked in them erase cannot see, review 19) — refused (taken over
 * since), it is read again and erased or kept as it is now (R13-6); one that keeps changing fails the erase
 * (rerun it). A marker (a freed intent's replaced window) is erased so while no call holds it.
 */
async function eraseIntent(
  table: IdempotencyTable,
  item: Record<string, unknown>,
  options: Required<EraseRecordOptions>,
  reads = 1,
): Promise<ItemErasure> {
  const intent = intentOf(item, table.attributes) ?? markerOf(item, table.attributes);
  if (!intent) return { outcome: 'nothing' };
  for (const { record, state } of isHeld(intent) ? await runnersInFlight(table, intent, []) : []) {
    const kept = await keptUnlessClosed(table, record, state, options);
    if (kept) return { outcome: 'in_flight', kept };
  }
  // Its runners unknown (an earlier version's): kept to its TTL, when every call asked in its window has expired.
  if (isHeld(intent) && !intent.runnersKnown && Date.now() < intent.expiresAtS * 1000) {
    return { outcome: 'in_flight', kept: unknownRunnersOf(intent) };
  }
  if (options.dryRun) return { outcome: 'nothing' };
  if ((await eraseIntentItem(table, intent)) === 'erased') return { outcome: 'erased' };
  const now = await readItem(table, intent.intentKey);
  if (now === undefined) return { outcome: 'nothing' };
  if (reads >= 3) throw new Error(`the intent ${intent.intentKey} changed ${reads} times while erased`);
  return eraseIntent(table, now, options, reads + 1);
}

/** What keeps an intent whose runners are unknown: calls of its tool, erase cannot say which, until its TTL. */
function unknownRunnersOf({ intentKey: recordKey, expiresAtS }: Intent): KeptCall {
  return { recordKey, tool: toolOfRecordKey(recordKey), state: 'unreadable', changesAtMs: expiresAtS * 1000 };
}

/**
 * A call in flight that keeps an intent: kept, unless stalled while erase closes stalled calls — then closed
 * here; refused (`changed`: its record came first in the scan, or a resend took it), read again.
 */
async function keptUnlessClosed(
  table: IdempotencyTable,
  record: CallRecord,
  state: InFlightState,
  options: Required<EraseRecordOptions>,
): Promise<KeptCall | undefined> {
  const closing = state === 'stalled' && options.closeStalled && !options.dryRun ? record.claimId : undefined;
  if (closing === undefined) return keptCallOf(record, state, Date.now());
  if ((await closeStalled(table, record.recordKey, closing, Date.now())) === 'erased') return undefined;
  const now = await readCallRecord(table, record.recordKey);
  const nowState: CallState = classify(now, Date.now());
  return now !== undefined && isInFlight(nowState) ? keptCallOf(now, nowState, Date.now()) : undefined;
}

// The writes.

/**
 * The tombstone's write, on `condition`: the outcome, the arguments, the hashes and the claims go (no
 * write conditioned on a claim — a late store, a park — can touch a tombstone, and no claim or takeover
 * passes it until its TTL).
 */
async function toTombstone(
  table: IdempotencyTable,
  recordKey: string,
  condition: string,
  values: Record<string, AttributeValue>,
  conditionNames: Record<string, string> = {},
): Promise<'erased' | 'changed'> {
  const attr = table.attributes;
  const written = await conditionally(
    table.client,
    new UpdateItemCommand({
      TableName: table.tableName,
      Key: { [attr.key]: { S: recordKey } },
      UpdateExpression: 'SET #status = :erased REMOVE #data, #call, #validation, #downstream, #claim, #stalled',
      ConditionExpression: condition,
      ExpressionAttributeNames: {
        ...conditionNames,
        '#status': attr.status,
        '#data': attr.data,
        '#call': attr.call,
        '#validation': attr.validation,
        '#downstream': attr.downstreamKey,
        '#claim': attr.claim,
        '#stalled': attr.stalledClaim,
      },
      ExpressionAttributeValues: { ':erased': { S: STATUS.erased }, ...values },
    }),
  );
  return written.passed ? 'erased' : 'changed';
}

/** tombstone: completed ──▶ erased (`toTombstone`); `changed` when no longer completed (its TTL, a new claim). */
export function tombstone(table: IdempotencyTable, recordKey: string): Promise<'erased' | 'changed'> {
  return toTombstone(table, recordKey, '#status = :completed', { ':completed': { S: STATUS.completed } });
}

/**
 * close stalled: stalled (on `claimId`) ──▶ erased, with the app's tables (`--include-domain`): a call the
 * completer gave up on is closed (`toTombstone`), on the claim it was given up on and read with, only while
 * that claim's lock has ended (`lockEndedOn`): a retry that took it over meanwhile is live and stays, and so
 * does the attempt given up on if it ran past its lock and parked itself (live again: no write moves a live
 * call to erased). Only a retry would finish it; its domain items go with the tenant. Without the app's
 * tables a stalled call is kept, like every call in flight: the kept domain may still come to show it.
 */
export function closeStalled(
  table: IdempotencyTable,
  recordKey: string,
  claimId: string,
  nowMs: number,
): Promise<'erased' | 'changed'> {
  const ended = lockEndedOn(table.attributes, claimId, { nowMs, notBeforeAtS: Math.floor(nowMs / 1000) });
  return toTombstone(table, recordKey, `${ended.expression} AND #stalled = :claim`, ended.values, ended.names);
}

/** delete expired: expired ──▶ absent, ahead of DynamoDB's TTL sweep; `changed` when its TTL moved on meanwhile. */
export async function deleteExpired(
  table: IdempotencyTable,
  recordKey: string,
  nowMs: number,
): Promise<'deleted' | 'changed'> {
  const attr = table.attributes;
  const written = await conditionally(
    table.client,
    new DeleteItemCommand({
      TableName: table.tableName,
      Key: { [attr.key]: { S: recordKey } },
      ConditionExpression: '#expiry < :now',
      ExpressionAttributeNames: { '#expiry': attr.expiry },
      ExpressionAttributeValues: { ':now': { N: String(nowMs / 1000) } },
    }),
  );
  return written.passed ? 'deleted' : 'changed';
}

/** An app item's call stamp as erase read it: the attribute, and the call id it held (undefined: none). */
export interface StampRead {
  readonly attribute: string;
  readonly callId: string | undefined;
}

/**
 * delete an app item (rule 6): a DeleteItem on the call stamps it was read with — each stamp still the call
 * id read, or still absent — so a commit that lands after the read (a call in flight writing its stamp)
 * keeps the item. `changed` when a stamp moved since the read. An item with no stamps is deleted on its key.
 */
export async function deleteOnStampsRead(
  client: DynamoDBClient,
  tableName: string,
  key: Record<string, AttributeValue>,
  stamps: readonly StampRead[],
): Promise<'deleted' | 'changed'> {
  const values: Record<string, AttributeValue> = {};
  const conditions = stamps.map(({ callId }, i) => {
    if (callId === undefined) return `attribute_not_exists(#by${i})`;
    values[`:by${i}`] = { S: callId };
    return `#by${i} = :by${i}`;
  });
  const written = await conditionally(
    client,
    new DeleteItemCommand({
      TableName: tableName,
      Key: key,
      ...(conditions.length > 0
        ? {
            ConditionExpression: conditions.join(' AND '),
            ExpressionAttributeNames: Object.fromEntries(stamps.map(({ attribute }, i) => [`#by${i}`, attribute])),
            ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
          }
        : {}),
    }),
  );
  return written.passed ? 'deleted' : 'changed';
}
