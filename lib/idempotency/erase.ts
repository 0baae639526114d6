/**
 * Erase's decisions about idempotency items (docs/state-machine.md, rule 6) — what an operator's erase
 * does with each item of a tenant it found, and whether the call that stamped an app item is still in
 * flight. The scan and the app's own tables are the caller's; the state is `classify`'s and every write
 * is a transition of `protocol/`.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type CallRecord, callRecordOf, classify, intentOf, isInFlight, recordKeyOfCallId } from './call-state';
import { closeStalled, deleteExpired, tombstone } from './protocol/erasure';
import { deleteIntent } from './protocol/intent';
import { type IdempotencyTable, readCallRecord } from './protocol/table';
import { DEFAULT_IDEMPOTENCY_TABLE_NAME, DEFAULT_RECORD_ATTRIBUTES, type RecordAttributes } from './record';

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
  const within = tableOf(table);
  const settled = { dryRun: options.dryRun ?? false, closeStalled: options.closeStalled ?? false };
  if (item[within.attributes.intentHolder] !== undefined) return eraseIntent(within, item, settled);
  return eraseCallRecord(within, callRecordOf(item, within.attributes), settled);
}

/**
 * Whether the call `callId` names (a stamp on an app's item) may still commit its effect: its record is
 * live, abandoned or stalled — and still that call's (a record claimed anew after its TTL is another's).
 */
export async function isCallInFlight(table: ErasedTable, callId: string): Promise<boolean> {
  const recordKey = recordKeyOfCallId(callId);
  if (recordKey === undefined) return false;
  const record = await readCallRecord(tableOf(table), recordKey);
  return record?.callId === callId && isInFlight(classify(record, Date.now()));
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
  record: CallRecord | undefined,
  options: Required<EraseRecordOptions>,
): Promise<RecordErasure> {
  const nowMs = Date.now();
  const state = classify(record, nowMs);
  if (!record || state === 'absent' || state === 'erased') return 'nothing';
  if (state === 'stalled' && options.closeStalled && record.claimId !== undefined) {
    if (options.dryRun) return 'nothing';
    return (await closeStalled(table, record.recordKey, record.claimId, nowMs)) === 'erased' ? 'erased' : 'in_flight';
  }
  if (isInFlight(state)) return 'in_flight';
  if (options.dryRun) return 'nothing';
  const done =
    state === 'expired'
      ? await deleteExpired(table, record.recordKey, nowMs)
      : await tombstone(table, record.recordKey);
  return done === 'changed' ? 'nothing' : 'erased';
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
): Promise<RecordErasure> {
  const intent = intentOf(item, table.attributes);
  if (!intent) return 'nothing';
  const holder = await readCallRecord(table, intent.holder.recordKey);
  const state = classify(holder, Date.now());
  if (holder?.callId === intent.holder.callId && isInFlight(state)) {
    if (state !== 'stalled' || !options.closeStalled || options.dryRun || holder.claimId === undefined) {
      return 'in_flight';
    }
    // Its holder's own record may come later in the scan (or was done already: `changed` then).
    const closed = await closeStalled(table, holder.recordKey, holder.claimId, Date.now());
    if (closed === 'changed' && isInFlight(classify(await readCallRecord(table, holder.recordKey), Date.now()))) {
      return 'in_flight';
    }
  }
  if (options.dryRun) return 'nothing';
  return (await deleteIntent(table, intent.intentKey, intent.holder)) === 'deleted' ? 'erased' : 'nothing';
}
