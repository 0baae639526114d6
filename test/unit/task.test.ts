// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
import { MIN_RETRY_AFTER_MS } from '../../lib/idempotency/answers';
import { type CallRecord, STATUS } from '../../lib/idempotency/protocol/record';
import { begunTask, STALLED_POLL_MS, taskOf } from '../../lib/idempotency/task';

/**
 * An MCP task as the call record shows it (task.ts `taskOf`): its status, its times and when to poll,
 * for each state of the record — docs/state-machine.md's "task view" column — at a fixed instant.
 */
const NOW = 1_800_000_000_000;
const TTL_S = 86_400;
const reading = { nowMs: NOW, clientKey: 'k1', ttlSeconds: TTL_S };

/** A call record claimed 5 s ago, TTL a day after its claim, live for 10 s more. */
function record(overrides: Partial<CallRecord> = {}): CallRecord {
  return {
    recordKey: 'refund#h',
    status: STATUS.inProgress,
    claimId: 'c1',
    lockEndsMs: NOW + 10_000,
    expiresAtS: (NOW - 5_000) / 1000 + TTL_S,
    validation: 'v1',
    tenant: 't',
    tool: 'refund',
    call: { user: 'ada', clientKey: 'k1', args: {} },
    downstreamKey: undefined,
    attempt: 1,
    callId: 'refund#h@c1',
    outcome: undefined,
    stalledClaimId: undefined,
    createdAtMs: NOW - 5_000,
    completedAtMs: undefined,
    ...overrides,
  };
}

const TIMES = {
  callId: 'refund#h@c1',
  claimId: 'c1',
  createdAtMs: NOW - 5_000,
  expiresAtMs: NOW - 5_000 + TTL_S * 1000,
};

describe('taskOf', () => {
  it('no record: no task', () => {
    expect(taskOf(undefined, reading)).toBeUndefined();
  });

  it('live: working, polled soon — its holder may store it at any moment — at most 1 s, never past its lock (not sooner than 100 ms)', () => {
    expect(taskOf(record(), reading)).toEqual({
      ...TIMES,
      lastUpdatedAtMs: NOW - 5_000,
      status: 'working',
      state: 'live',
      pollIntervalMs: 1_000,
    });
    expect(taskOf(record({ lockEndsMs: NOW + 20.5 }), reading)).toMatchObject({ pollIntervalMs: MIN_RETRY_AFTER_MS });
    expect(taskOf(record({ lockEndsMs: NOW + 150.2 }), reading)).toMatchObject({ pollIntervalMs: 151 });
  });

  it('abandoned: working, last updated when its lock ended, polled when the completer will have looked', () => {
    // First attempt: the completer looks 1 s after the lock's end.
    expect(taskOf(record({ lockEndsMs: NOW - 300 }), reading)).toEqual({
      ...TIMES,
      lastUpdatedAtMs: NOW - 300,
      status: 'working',
      state: 'abandoned',
      pollIntervalMs: 1_000,
    });
    // Attempt 3: after attempt 2's backoff (60 s) past the lock's end.
    expect(taskOf(record({ lockEndsMs: NOW - 10_000, attempt: 3 }), reading)).toMatchObject({
      pollIntervalMs: 50_000,
    });
    // Long past it: still a second at least.
    expect(taskOf(record({ lockEndsMs: NOW - 600_000, attempt: 2 }), reading)).toMatchObject({
      pollIntervalMs: 1_000,
    });
    // A lock that ended before the call was created (an older record's times): last updated at creation.
    expect(taskOf(record({ lockEndsMs: NOW - 9_000 }), reading)).toMatchObject({ lastUpdatedAtMs: NOW - 5_000 });
  });

  it('stalled: working, polled every minute', () => {
    expect(taskOf(record({ lockEndsMs: NOW - 300, stalledClaimId: 'c1' }), reading)).toMatchObject({
      status: 'working',
      state: 'stalled',
      pollIntervalMs: STALLED_POLL_MS,
    });
  });

  it('stalled in its record’s last seconds (no resend fits from TTL − 10 s): polled a second past its TTL, and past it a resend runs it anew (`runsAnew`, as its poll says; review 35, F2)', () => {
    const stalled = record({ lockEndsMs: NOW - 300, stalledClaimId: 'c1', expiresAtS: (NOW + 5_000) / 1000 });
    expect(taskOf(stalled, reading)).toMatchObject({ state: 'stalled', pollIntervalMs: 6_000, runsAnew: true });
    const earlier = { ...reading, nowMs: NOW - 5_001 };
    expect(taskOf(stalled, earlier)).not.toHaveProperty('runsAnew');
  });

  it('completed: its answer as a replay (rule 5: a task is read, never the committing answer), completed or failed, last updated when it completed', () => {
    const done = record({
      status: STATUS.completed,
      outcome: { receipt: '{"id":"r1"}', replayed: false },
      completedAtMs: NOW - 1_000,
    });
    const failed = record({
      status: STATUS.completed,
      outcome: { failure: 'not_found', message: 'no such invoice', replayed: false },
      completedAtMs: NOW - 1_000,
    });

    expect(taskOf(done, reading)).toEqual({
      ...TIMES,
      lastUpdatedAtMs: NOW - 1_000,
      status: 'completed',
      result: { ok: true, idempotent: true, key: 'k1', receipt: { id: 'r1' } },
    });
    expect(taskOf(failed, reading)).toMatchObject({
      status: 'failed',
      result: { ok: false, idempotent: true, error: { code: 'not_found', message: 'no such invoice' } },
    });
  });

  it('completed by an earlier version (no created_at, no completed_at): both read from its TTL', () => {
    // A stored outcome moves the TTL: it was completed TTL seconds before its record expires.
    const older = record({
      status: STATUS.completed,
      outcome: { receipt: '{}', replayed: false },
      createdAtMs: undefined,
      completedAtMs: undefined,
      expiresAtS: (NOW - 2_000) / 1000 + TTL_S,
    });

    expect(taskOf(older, reading)).toMatchObject({ createdAtMs: NOW - 2_000, lastUpdatedAtMs: NOW - 2_000 });
  });

  it('claimed by an earlier version, completed by this one: created when it completed (no earlier time is known)', () => {
    const mixed = record({
      status: STATUS.completed,
      outcome: { receipt: '{}', replayed: false },
      createdAtMs: undefined,
      completedAtMs: NOW - 1_000,
      expiresAtS: Math.floor((NOW - 1_234) / 1000) + TTL_S,
    });

    expect(taskOf(mixed, reading)).toMatchObject({ createdAtMs: NOW - 1_000, lastUpdatedAtMs: NOW - 1_000 });
  });

  it('completed without a readable outcome: failed, internal', () => {
    expect(taskOf(record({ status: STATUS.completed, completedAtMs: NOW }), reading)).toMatchObject({
      status: 'failed',
      result: { ok: false, idempotent: true, error: { code: 'internal', message: 'internal error' } },
    });
  });

  it('erased or expired: no task', () => {
    expect(taskOf(record({ status: STATUS.erased }), reading)).toBeUndefined();
    expect(taskOf(record({ expiresAtS: NOW / 1000 - 1 }), reading)).toBeUndefined();
  });
});

describe('begunTask', () => {
  it('a task this request began is working when it answers, whatever the call reached since', () => {
    const done = taskOf(
      record({ status: STATUS.completed, outcome: { receipt: '{}', replayed: false }, completedAtMs: NOW }),
      reading,
    )!;

    expect(begunTask(done)).toEqual({
      ...TIMES,
      lastUpdatedAtMs: NOW - 5_000,
      status: 'working',
      state: 'live',
      pollIntervalMs: MIN_RETRY_AFTER_MS,
    });
    const live = taskOf(record(), reading)!;
    expect(begunTask(live)).toBe(live);
  });
});

describe('taskOf a record read after a redeploy or a backoff', () => {
  it('a completed task’s lastUpdatedAt does not move when the tool’s TTL is changed by a redeploy', () => {
    const storedAtMs = Date.parse('2026-01-01T12:00:00Z');
    const stored: CallRecord = {
      recordKey: 't#h',
      callId: 't#h@i',
      status: 'COMPLETED',
      claimId: 'c',
      lockEndsMs: storedAtMs,
      expiresAtS: storedAtMs / 1000 + 86_400, // stored with the 24 h default
      validation: 'v',
      tenant: 'acme',
      tool: 't',
      call: undefined,
      downstreamKey: undefined,
      attempt: 1,
      outcome: { receipt: '{}', replayed: false },
      stalledClaimId: undefined,
      createdAtMs: storedAtMs - 1_000,
      completedAtMs: storedAtMs, // the store writes it with the outcome
    };
    const now = storedAtMs + 60_000;
    const before = taskOf(stored, { nowMs: now, clientKey: 'k', ttlSeconds: 86_400 });
    const after = taskOf(stored, { nowMs: now, clientKey: 'k', ttlSeconds: 3_600 }); // the tool's TTL now 1 h
    expect(new Date(after!.lastUpdatedAtMs).toISOString()).toBe(new Date(before!.lastUpdatedAtMs).toISOString());
    expect(after!.lastUpdatedAtMs).toBeLessThanOrEqual(now);
  });

  it('an abandoned call the completer will not look at for minutes is not worth polling every second', () => {
    // attempt 4 parked (abandoned at once): the completer's recheck of it is due after its backoff
    // (onStream: lock end + backoffSeconds(attempt - 1) = 120 s), and nobody else runs it
    const nowMs = Date.now();
    const stored: CallRecord = {
      recordKey: 't#h',
      callId: 't#h@i',
      status: 'INPROGRESS',
      claimId: 'c4',
      lockEndsMs: nowMs - 1,
      expiresAtS: nowMs / 1000 + 86_000,
      validation: 'v',
      tenant: 'acme',
      tool: 't',
      call: undefined,
      downstreamKey: undefined,
      attempt: 4,
      outcome: undefined,
      stalledClaimId: undefined,
      createdAtMs: nowMs - 600_000,
      completedAtMs: undefined,
    };
    const task = taskOf(stored, { nowMs, clientKey: 'k', ttlSeconds: 86_400 });
    expect(task).toMatchObject({ status: 'working', state: 'abandoned' });
    expect(task!.status === 'working' && task!.pollIntervalMs).toBeGreaterThanOrEqual(60_000);
  });
});
