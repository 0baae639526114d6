/**
 * Erase's decisions about idempotency items (docs/state-machine.md, rule 6) — what an operator's erase
 * does with each item of a tenant it found, and whether the call that stamped an app item is still in
 * flight. The scan and the app's own tables are the caller's; the state is `classify`'s and every write
 * is a transition of `protocol/`.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { completerLooksAtMs } from './backoff';
import { type CallState, classify, isInFlight } from './call-state';
import { closeStalled, deleteExpired, tombstone } from './protocol/erasure';
import { deleteIntent } from './protocol/intent';
import {
  type CallRecord,
  callRecordOf,
  DEFAULT_IDEMPOTENCY_TABLE_NAME,
  DEFAULT_RECORD_ATTRIBUTES,
  intentOf,
  type RecordAttributes,
  recordKeyOfCallId,
  STATUS,
} from './protocol/record';
import { type IdempotencyTable, readCallRecord } from './protocol/table';

/** The idempotency table erase works on. */
export interface ErasedTable {
  readonly client: DynamoDBClient;
  /** @default DEFAULT_IDEMPOTENCY_TABLE_NAME */
  readonly tableName?: string;
  /** @default DEFAULT_RECORD_ATTRIBUTES */
  readonly attributes?: Partial<RecordAttributes>;
}

export interface EraseRecordOptions {
  /**
   * Count only: nothing is written.
   * @default false
   */
  readonly dryRun?: boolean;
  /**
   * Close the calls the completer gave up on (`stalled`): only when the app's tables are erased too —
   * the kept domain may otherwise still come to show their effect.
   * @default false
   */
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
   * Its tool, as its record names it (else its record key's prefix); undefined when the item is not
   * readable as a call record at all — then it may write to any table.
   */
  readonly tool: string | undefined;
  /**
   * `live`, `abandoned`, `stalled` as `classify` reads it; `unreadable`: in progress, but not a call
   * record as every claim writes it; `changed`: it changed while erase wrote to it (a rerun decides).
   */
  readonly state: 'live' | 'abandoned' | 'stalled' | 'unreadable' | 'changed';
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
 * When a call in flight can next change by itself (epoch ms): a live one at its lock's end (its attempt
 * stores, parks or dies by then); an abandoned one when the completer next looks at it — the stream's
 * next look is when its record says (`completerLooksAtMs`: its lock's end plus its attempts' backoff, before its TTL);
 * a stalled one never (undefined).
 */
export function nextChangeAtMs(record: CallRecord, state: 'live' | 'abandoned' | 'stalled'): number | undefined {
  if (state === 'live') return record.lockEndsMs;
  if (state === 'stalled') return undefined;
  // The completer's schedule, the one every answer follows (backoff.ts).
  return completerLooksAtMs(record);
}

/** The call erase keeps for `record` in `state` (in flight), as of `nowMs`. */
function keptCallOf(record: CallRecord, state: 'live' | 'abandoned' | 'stalled', nowMs: number): KeptCall {
  const changesAtMs = nextChangeAtMs(record, state);
  return {
    recordKey: record.recordKey,
    tool: record.tool ?? toolOfRecordKey(record.recordKey),
    state,
    changesAtMs: changesAtMs === undefined ? undefined : Math.max(nowMs, changesAtMs),
  };
}

/** The tool a record key (`<tool>#<hash>`) names, or undefined when it names none. */
function toolOfRecordKey(recordKey: string): string | undefined {
  const hash = recordKey.indexOf('#');
  return hash > 0 ? recordKey.slice(0, hash) : undefined;
}

function tableOf(table: ErasedTable): IdempotencyTable {
  return {
    client: table.client,
    tableName: table.tableName ?? DEFAULT_IDEMPOTENCY_TABLE_NAME,
    attributes: { ...DEFAULT_RECORD_ATTRIBUTES, ...table.attributes },
  };
}

/**
 * Erases one of a tenant's idempotency items (unmarshalled, as a scan found it): a call record or a
 * dedupe window's intent. Safe to run again: what is gone stays gone, and an item that changed
 * meanwhile is left to a rerun.
 */
export async function eraseRecord(
  table: ErasedTable,
  item: Record<string, unknown>,
  options: EraseRecordOptions = {},
): Promise<RecordErasure> {
  return (await eraseItem(table, item, options)).outcome;
}

/**
 * {@link eraseRecord}, and the call it kept: what a tenant erase needs to tell which of the app's tables
 * wait, and until when.
 */
export async function eraseItem(
  table: ErasedTable,
  item: Record<string, unknown>,
  options: EraseRecordOptions = {},
): Promise<ItemErasure> {
  const within = tableOf(table);
  const settled = { dryRun: options.dryRun ?? false, closeStalled: options.closeStalled ?? false };
  if (item[within.attributes.intentHolder] !== undefined) return eraseIntent(within, item, settled);
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
 * Whether the call `callId` names (a stamp on an app's item) may still commit its effect: its record is
 * live, abandoned or stalled — and still that call's (a record claimed anew after its TTL is another's).
 */
export async function isCallInFlight(table: ErasedTable, callId: string): Promise<boolean> {
  return (await callInFlight(table, callId)) !== undefined;
}

/** The call `callId` names as erase keeps it, while it is in flight ({@link isCallInFlight}); else undefined. */
export async function callInFlight(table: ErasedTable, callId: string): Promise<KeptCall | undefined> {
  const recordKey = recordKeyOfCallId(callId);
  if (recordKey === undefined) return undefined;
  const record = await readCallRecord(tableOf(table), recordKey);
  const nowMs = Date.now();
  const state = classify(record, nowMs);
  return record?.callId === callId && isInFlight(state) ? keptCallOf(record, state, nowMs) : undefined;
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
 * A dedupe window's intent: kept while the call that holds it is in flight (a fresh key inside the
 * window would otherwise run beside it) — a stalled holder is closed first when erase closes stalled
 * calls —; deleted otherwise, on the holder it was read with (`deleteIntent`).
 */
async function eraseIntent(
  table: IdempotencyTable,
  item: Record<string, unknown>,
  options: Required<EraseRecordOptions>,
): Promise<ItemErasure> {
  const intent = intentOf(item, table.attributes);
  if (!intent) return { outcome: 'nothing' };
  const holder = await readCallRecord(table, intent.holder.recordKey);
  const state = classify(holder, Date.now());
  if (holder?.callId === intent.holder.callId && isInFlight(state)) {
    if (state !== 'stalled' || !options.closeStalled || options.dryRun || holder.claimId === undefined) {
      return { outcome: 'in_flight', kept: keptCallOf(holder, state, Date.now()) };
    }
    // Its holder's own record may come later in the scan (or was done already: `changed` then).
    const closed = await closeStalled(table, holder.recordKey, holder.claimId, Date.now());
    if (closed === 'changed') {
      const now = await readCallRecord(table, holder.recordKey);
      const nowState: CallState = classify(now, Date.now());
      if (now !== undefined && isInFlight(nowState)) {
        return { outcome: 'in_flight', kept: keptCallOf(now, nowState, Date.now()) };
      }
    }
  }
  if (options.dryRun) return { outcome: 'nothing' };
  const deleted = (await deleteIntent(table, intent.intentKey, intent.holder)) === 'deleted';
  return { outcome: deleted ? 'erased' : 'nothing' };
}
