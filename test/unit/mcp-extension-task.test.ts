// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
import { type CallRecord, STATUS } from '../../lib/idempotency/protocol/record';
import { STALLED_POLL_MS, taskOf } from '../../lib/idempotency/task';
import { extensionTaskOf, type TaskWording } from '../../lib/mcp/tasks';

/**
 * The tasks extension's `Task` (2026-07-28) for each state of a call record, as `tasks/get` answers it
 * (lib/mcp/tasks.ts `extensionTaskOf` over the core's `taskOf`): docs/state-machine.md's task view, in the
 * extension's words — in flight is `working` with its poll interval, a stored outcome is `completed` with
 * the call's result (a failure too: the extension keeps `failed` for JSON-RPC errors), erased is none.
 */
const NOW = 1_800_000_000_000;
const TTL_S = 86_400;
const reading = { nowMs: NOW, clientKey: 'k1', ttlSeconds: TTL_S };
const TASK_ID = 'rs1.x.c1';

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

const wording: TaskWording = {
  working: {
    live: 'live',
    abandoned: 'abandoned',
    powertools: 'powertools',
    queued: 'queued',
  },
  givesUp: { attempts: 'gives up: attempts', expiring: 'gives up: expiring', queued: 'gives up: queued' },
  stalled: {
    attempts: 'stalled: attempts',
    unknown_tool: 'stalled: unknown tool',
    unreadable_call: 'stalled: unreadable call',
    expiring: 'stalled: expiring',
    powertools: 'stalled: powertools',
  },
  stalledNeverRan: {
    attempts: 'stalled, never ran: attempts',
    unknown_tool: 'stalled, never ran: unknown tool',
    unreadable_call: 'stalled, never ran: unreadable call',
    expiring: 'stalled, never ran: expiring',
    powertools: 'stalled, never ran: powertools',
  },
  expiringNow: 'stalled: expiring now',
  failed: (result) => `failed: ${result.error?.code}`,
};
/** The result a completed task carries: here, the answer itself, tagged. */
const resultOf = (answer: object) => ({ answer });

function viewOf(overrides: Partial<CallRecord>) {
  const task = taskOf(record(overrides), reading);
  return task && extensionTaskOf(TASK_ID, task, wording, resultOf);
}

const TIMES = {
  taskId: TASK_ID,
  createdAt: new Date(NOW - 5_000).toISOString(),
  ttlMs: TTL_S * 1000,
};

describe('extensionTaskOf', () => {
  it('live: working, polled when its holder may have stored it (at most 1 s)', () => {
    const view = viewOf({});

    expect(view).toEqual({
      ...TIMES,
      lastUpdatedAt: new Date(NOW - 5_000).toISOString(),
      status: 'working',
      statusMessage: 'live',
      pollIntervalMs: expect.any(Number),
    });
    expect(view?.pollIntervalMs).toBeGreaterThan(0);
    expect(view?.pollIntervalMs).toBeLessThanOrEqual(1_000);
  });

  it('stalled: working (only a resend finishes it), polled every minute, last updated when its lock ended', () => {
    expect(viewOf({ lockEndsMs: NOW - 300, stalledClaimId: 'c1' })).toEqual({
      ...TIMES,
      lastUpdatedAt: new Date(NOW - 300).toISOString(),
      status: 'working',
      statusMessage: 'stalled: attempts',
      pollIntervalMs: STALLED_POLL_MS,
    });
  });

  it('stalled in its record’s last seconds (no resend fits): says so, polled a second past its TTL, as get_operation does (review 35, F2)', () => {
    const view = viewOf({ lockEndsMs: NOW - 300, stalledClaimId: 'c1', expiresAtS: (NOW + 5_000) / 1000 });
    expect(view).toMatchObject({ statusMessage: 'stalled: expiring now', pollIntervalMs: 6_000 });
  });

  it('stalled before any attempt ran (unrun_attempts: a hand-off the completer gave up on): says nothing happened, as get_operation does', () => {
    const stalled = { lockEndsMs: NOW - 300, stalledClaimId: 'c1', stalledReason: 'unknown_tool' as const };
    expect(viewOf({ ...stalled, unrunAttempts: 1 })?.statusMessage).toBe('stalled, never ran: unknown tool');
    // One attempt ran (attempt 2 after one unrun): its effect may have happened.
    expect(viewOf({ ...stalled, attempt: 2, unrunAttempts: 1 })?.statusMessage).toBe('stalled: unknown tool');
  });

  it('completed with a receipt: completed, its result the call’s answer, no poll interval', () => {
    expect(
      viewOf({
        status: STATUS.completed,
        outcome: { receipt: '{"id":"r1"}', replayed: false },
        completedAtMs: NOW - 1_000,
      }),
    ).toEqual({
      ...TIMES,
      lastUpdatedAt: new Date(NOW - 1_000).toISOString(),
      status: 'completed',
      result: { answer: { ok: true, idempotent: true, key: 'k1', receipt: { id: 'r1' } } },
    });
  });

  it('completed with a stored failure: completed (not failed), its result the error answer, said in statusMessage', () => {
    expect(
      viewOf({
        status: STATUS.completed,
        outcome: { failure: 'not_found', message: 'no such invoice', replayed: false },
        completedAtMs: NOW - 1_000,
      }),
    ).toEqual({
      ...TIMES,
      lastUpdatedAt: new Date(NOW - 1_000).toISOString(),
      status: 'completed',
      statusMessage: 'failed: not_found',
      result: { answer: { ok: false, idempotent: true, error: { code: 'not_found', message: 'no such invoice' } } },
    });
  });

  it('erased: no task (tasks/get answers Task not found)', () => {
    expect(viewOf({ status: STATUS.erased })).toBeUndefined();
  });
});
