// Rule 6 (docs/state-machine.md): erase is final and keeps what is in flight.

import { nextChangeAtMs, unattributedItem } from '../../lib/idempotency/protocol/erase';
import type { CallRecord } from '../../lib/idempotency/protocol/record';

/**
 * When erase says to come back for a call it kept (rule 6 of docs/state-machine.md, `retryAfter`): when the
 * call can next change by itself — a live call at its lock's end, an abandoned one when the completer
 * next looks at it (docs/state-machine.md, "Liveness": at the lock's end after attempt 1, then 30 s, 60 s,
 * … at most 15 min after it, before its TTL), a stalled one never.
 */
const LOCK_ENDS_MS = 1_700_000_000_000;

function record(attempt: number): CallRecord {
  return {
    recordKey: 'refund#h',
    callId: 'refund#h@c1',
    status: 'INPROGRESS',
    claimId: 'c1',
    lockEndsMs: LOCK_ENDS_MS,
    expiresAtS: LOCK_ENDS_MS / 1000 + 86_400,
    validation: 'v',
    tenant: 'acme',
    tool: 'refund',
    call: undefined,
    downstreamKey: undefined,
    attempt,
    outcome: undefined,
    stalledClaimId: undefined,
    createdAtMs: undefined,
    completedAtMs: undefined,
  };
}

describe('nextChangeAtMs', () => {
  it.each([
    ['live: its lock’s end', 'live', 1, 0],
    ['live on attempt 3: its lock’s end, not the completer’s next look (60 s after it)', 'live', 3, 0],
    ['abandoned on attempt 1: when its lock ended (the completer’s due time)', 'abandoned', 1, 0],
    ['abandoned on attempt 2: 30 s after', 'abandoned', 2, 30_000],
    ['abandoned on attempt 3: 60 s after', 'abandoned', 3, 60_000],
    ['abandoned on attempt 7: 15 min after, the longest', 'abandoned', 7, 900_000],
  ] as const)('%s', (_, state, attempt, afterLockMs) => {
    expect(nextChangeAtMs(record(attempt), state, LOCK_ENDS_MS)).toBe(LOCK_ENDS_MS + afterLockMs);
  });

  it('stalled: never by itself (a resend with its key, or erase with the app tables, settles it)', () => {
    expect(nextChangeAtMs(record(4), 'stalled', LOCK_ENDS_MS)).toBeUndefined();
  });

  it('stalled in its record’s last seconds (no resend fits from TTL − 10 s): a second past its TTL, as its poll says (review 35, F1)', () => {
    const ttlMs = (LOCK_ENDS_MS / 1000 + 86_400) * 1000;
    expect(nextChangeAtMs(record(4), 'stalled', ttlMs - 10_001)).toBeUndefined();
    expect(nextChangeAtMs(record(4), 'stalled', ttlMs - 10_000)).toBe(ttlMs + 1_000);
  });
});

/**
 * What a tenant's erase makes of an item with no tenant (`unattributedItem`): one Powertools' handler
 * wrote, or one no claim wrote. It writes nothing to it and assumes it is the tenant's: in flight, kept
 * with its tool unknown (every app table waits); completed, it may hold the tenant's result until its TTL;
 * anything else, nothing. Found by the mutation run (docs/mutation.md: erase.ts's survivors).
 */
describe('unattributedItem', () => {
  const NOW = 1_800_000_000_000;
  const table = { client: undefined as never };
  const powertools = (overrides: Record<string, unknown>) => ({
    id: 'refund#abc',
    status: 'INPROGRESS',
    expiration: NOW / 1000 + 600,
    validation: 'v',
    ...overrides,
  });
  beforeEach(() => jest.spyOn(Date, 'now').mockReturnValue(NOW));
  afterEach(() => jest.restoreAllMocks());

  it('keeps a Powertools call in flight, its lock live: until its lock ends, its tool unknown', () => {
    expect(unattributedItem(table, powertools({ in_progress_expiration: NOW + 5_000 }))).toEqual({
      kept: { recordKey: 'refund#abc', tool: undefined, state: 'live', changesAtMs: NOW + 5_000 },
    });
  });

  it('keeps a Powertools call whose worker died: stalled, until its TTL (nothing retrysafe runs moves it)', () => {
    // The first instant every reader counts it expired: a second past its TTL (`expiredFromMs`; review 33, F4).
    expect(unattributedItem(table, powertools({ in_progress_expiration: NOW - 5_000 }))).toEqual({
      kept: { recordKey: 'refund#abc', tool: undefined, state: 'stalled', changesAtMs: NOW + 601_000 },
    });
  });

  it('a completed Powertools record may hold the tenant’s result until its TTL: a second past it, when every reader counts it expired (review 35, F3)', () => {
    expect(unattributedItem(table, powertools({ status: 'COMPLETED', data: { a: 1 } }))).toEqual({
      untilMs: NOW + 601_000,
    });
  });

  it.each([
    ['expired', powertools({ status: 'COMPLETED', expiration: NOW / 1000 - 1 })],
    ['a tombstone', powertools({ status: 'ERASED' })],
  ])('leaves nothing of a Powertools record %s', (_what, item) => {
    expect(unattributedItem(table, item)).toBeUndefined();
  });

  it.each([
    ['no TTL', { id: 'x#1', status: 'INPROGRESS' }, 'x#1'],
    ['a TTL this very second', { id: 'x#1', status: 'INPROGRESS', expiration: NOW / 1000 }, 'x#1'],
    ['a TTL that is not a number', { id: 'x#1', status: 'INPROGRESS', expiration: '1' }, 'x#1'],
    ['a key that is not text', { id: 7, status: 'INPROGRESS' }, '?'],
  ])('keeps an unreadable item in progress with %s, every app table waiting', (_what, item, recordKey) => {
    // A call instance and no attempt: half a claim, neither retrysafe's nor Powertools' record.
    expect(unattributedItem(table, { ...item, call_id: 'i1' })).toEqual({
      kept: { recordKey, tool: undefined, state: 'unreadable', changesAtMs: undefined },
    });
  });

  it.each([
    ['whose TTL passed', { id: 'x#1', status: 'INPROGRESS', expiration: NOW / 1000 - 1, call_id: 'i1' }],
    ['not in progress', { id: 'x#1', status: 'DONE', call_id: 'i1' }],
  ])('leaves nothing of an unreadable item %s', (_what, item) => {
    expect(unattributedItem(table, item)).toBeUndefined();
  });
});
