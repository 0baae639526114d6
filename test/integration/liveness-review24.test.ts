// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * Review 24 (helper-47) of de7f78a: what an abandoned call's answers say happens at their wait must be what
 * the completer does then. F1 (a call within its attempts that the completer gives up `expiring` was told
 * "the server re-runs it") is fixed at its rule — `givesUpAtNextLook` (backoff.ts), by the record alone, which
 * the completer decides by and every answer reads; F2 and F4 are held in liveness.test, in-flight.test and
 * calls-in-flight.test; F3 (a call whose stored arguments the deployed tool no longer accepts: told "re-runs
 * it", given up `unreadable_call`) is known and left — the read side would have to parse the stored call
 * under the tool the completer serves — a `test.failing` here, listed under Liveness's "Left open".
 */
import { randomUUID } from 'node:crypto';
import { nextAfterRead } from '../../lib/api/next-step';
import { completerLooksAtMs } from '../../lib/idempotency/backoff';
import { callRecordOf, DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { taskOf } from '../../lib/idempotency/task';
import type { ToolDefinition } from '../../lib/idempotency/tool';
import { GIVES_UP_HINTS, readOperation } from '../../lib/reads/operation';
import { callRecords } from '../helpers/call-records';
import { completerRecordingOn } from '../helpers/no-effect';
import { ownIdempotencyTable } from '../helpers/own-table';
import { createProtocolWorld, deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool, tightenedSendNote } from '../helpers/tools';

ownIdempotencyTable('liveness-review24');
let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  world = createProtocolWorld();
  runtime = world.idempotencyRuntime();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

const completerWith = (tools: ToolDefinition[]) => completerRecordingOn(world, runtime, tools as never);

const abandonedCall = (text?: string) => callRecords(world, runtime).abandonedCall(text);
const setAttributes = (key: string, values: Record<string, unknown>) =>
  callRecords(world, runtime).setAttributes(key, values);

function clockAt(atMs: number): void {
  jest.spyOn(Date, 'now').mockImplementation(() => atMs);
}

/** Every answer about one call: the runtime's poll, get_operation's answer, its next step, its task. */
async function answersAbout(call: { caller: ReturnType<typeof identity>; key: string }) {
  const poll = await runtime.lookup('send_note', call.caller, call.key);
  const read = await readOperation({ runtime, toolNames: ['send_note'] }, call.caller, 'send_note', call.key);
  const record = await runtime.readCall('send_note', call.caller, call.key);
  const task = taskOf(record, { nowMs: Date.now(), clientKey: call.key, ttlSeconds: 86_400 });
  const next = nextAfterRead(read as never);
  return { poll, read, task, next, wait: (poll as { retryAfterMs: number }).retryAfterMs };
}

describe('review24 F1: an abandoned call within its budget that the completer gives up `expiring` at the wait its answers give is told so (givesUpAtNextLook)', () => {
  it('review24: its get_operation hint and next step promise a re-run the completer will not make (it stalls it, expiring)', async () => {
    const { tool, execute } = noteTool('send_note');
    const { completer } = completerWith([tool]);
    const call = await abandonedCall();
    // Attempt 5 (well within MAX_ATTEMPTS): due 240 s after its lock's end; its record expires in 200 s, so the
    // completer's look is its last look before the TTL (TTL − 70 s), and no re-run can start by then.
    const ttlS = Math.floor(Date.now() / 1000) + 200;
    await setAttributes(call.recordKey, { attempt: 5, expiration: ttlS });

    const { read, next, wait } = await answersAbout(call);
    clockAt(Date.now() + wait + 1);
    const atWait = await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline());
    jest.restoreAllMocks();

    // What the completer does at the answer's wait: gives it up, never re-runs it.
    expect(atWait).toBe('gave_up');
    expect(execute).not.toHaveBeenCalled();
    // What the answers say at that wait: the server stops retrying it (it was "the server re-runs it").
    expect(read).toMatchObject({ status: 'abandoned', gives_up: 'expiring', hint: GIVES_UP_HINTS.expiring });
    expect(next.message).toMatch(/its record expires before the server could re-run it: the server stops retrying it/);
    expect(next.message).not.toMatch(/re-runs it/);
  });

  it('review24: a tool with the shortest TTL (910 s) whose calls always fail: the poll just before the give-up promised a re-run', async () => {
    const failing = noteTool(
      'send_note',
      async () => {
        throw Object.assign(new Error('provider timed out'), { name: 'TimeoutError' });
      },
      { ttlSeconds: 910 },
    ).tool;
    const { completer } = completerWith([failing]);
    const caller = identity();
    const key = `k-${randomUUID()}`;
    await runtime.invoke(failing, caller, { idempotency_key: key, text: 'hi' }, deadline());
    const [found] = await world.idempotencyRecordKeys(caller.tenant);
    const recordKey = found!.id;
    const itemOf = (k: string) => callRecords(world, runtime).itemOf(k);
    let clock = Date.now();
    jest.spyOn(Date, 'now').mockImplementation(() => clock);
    let lastMessages: { hint?: string; next: string; givesUp: string | undefined } | undefined;
    // At every look, what the answers read just before said the look would do, and what it did.
    const said: [string | undefined, string][] = [];
    let outcome = '';
    for (let i = 0; i < 12; i += 1) {
      const item = await itemOf(recordKey);
      // Just after its attempt failed (its lock ends at the failure): abandoned, as a poll then finds it.
      clock = Math.max(clock, (item.in_progress_expiration as number) + 1);
      const read = await readOperation({ runtime, toolNames: ['send_note'] }, caller, 'send_note', key);
      lastMessages = {
        hint: (read as { hint?: string }).hint,
        next: nextAfterRead(read as never).message,
        givesUp: (read as { gives_up?: string }).gives_up,
      };
      clock = completerLooksAtMs(callRecordOf(item, DEFAULT_RECORD_ATTRIBUTES)!) + 1;
      outcome = await completer.onRecheck({ key: recordKey, claim: item.claim_id as string }, deadline());
      said.push([lastMessages.givesUp, outcome]);
      if (outcome === 'settled' || outcome === 'gave_up') break;
    }
    const stalledReason = (await itemOf(recordKey)).stalled_reason;
    jest.restoreAllMocks();

    expect({ outcome, stalledReason }).toEqual({ outcome: 'gave_up', stalledReason: 'expiring' });
    // The answers read just before that look said it: the server stops retrying it, not re-runs it.
    expect(lastMessages!.givesUp).toBe('expiring');
    expect(lastMessages!.next).not.toMatch(/re-runs it/);
    // And before every earlier look they said a re-run, which came (each failed: unsettled).
    expect(said.slice(0, -1).every(([givesUp, at]) => givesUp === undefined && at === 'unsettled')).toBe(true);
    expect(said.length).toBeGreaterThan(1);
  });
});

describe('review24 F3 (pre-existing, same rule): an abandoned call the completer cannot re-run (unreadable_call) is promised a re-run', () => {
  it.failing('review24 (known, not fixed: docs/state-machine.md Liveness, “Left open”): its stored arguments no longer parse under the deployed tool: the poll says "re-runs it", the completer stalls it at that wait', async () => {
    const { tool, execute } = tightenedSendNote();
    const { completer } = completerWith([tool as never]);
    const call = await abandonedCall('hi');

    const { read, next, wait } = await answersAbout(call);
    clockAt(Date.now() + wait + 1);
    const atWait = await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline());
    jest.restoreAllMocks();

    expect(atWait).toBe('gave_up');
    expect(execute).not.toHaveBeenCalled();
    expect((read as { hint: string }).hint).not.toMatch(/re-runs it/);
    expect(next.message).not.toMatch(/re-runs it/);
  });
});
