// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
// Rule 5 (docs/state-machine.md): exactly one answer per effect says idempotent: false.
import { randomUUID } from 'node:crypto';
import { marshall } from '@aws-sdk/util-dynamodb';
import { Completer, type Recheck } from '../../lib/idempotency/completer';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callAsTask } from '../../lib/idempotency/task';
import { callRecords } from '../helpers/call-records';
import { pastTheStreamWindow } from '../helpers/clock';
import { createProtocolWorld, deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool } from '../helpers/tools';

/**
 * A call handed to the completer (`InvokeOptions.handOff`, a `longRunning` tool's call where the caller
 * takes a task): its first claim is written, then parked with its lock ended, unrun; the answer is
 * `pending` until the completer looks at it — at once, from the claim's stream image — and the completer's
 * attempt runs it, once. A later request under the key is answered as always: never handed off again.
 */
let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  world = createProtocolWorld();
  runtime = world.idempotencyRuntime();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

function completerOf(tools: ReturnType<typeof noteTool>['tool'][]) {
  const sent: Recheck[] = [];
  const completer = new Completer({
    client: world.client,
    runtime,
    tools,
    queue: { send: async (rechecks) => void sent.push(...rechecks) },
    tableName: world.idempotencyTable.tableName,
    attributes: DEFAULT_RECORD_ATTRIBUTES,
  });
  return { completer, sent };
}

/** An item of the world's idempotency table, read consistently (`callRecords`). */
const itemOf = (recordKey: string) => callRecords(world, runtime).itemOf(recordKey);

describe('a call handed off to the completer', () => {
  it('answers pending at once, its claim parked with its lock ended, nothing run; the completer runs it once, from its stream image, and the poll then reads it completed', async () => {
    const caller = identity();
    const { tool, execute } = noteTool('send_note', undefined, { longRunning: true });
    const { completer, sent } = completerOf([tool]);

    const handed = await callAsTask(runtime, tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline(), {
      handOff: true,
    });

    expect(handed.result).toEqual({ ok: false, status: 'pending', key: 'k1', retry_after_ms: 10_000, queued: true });
    expect(handed.task).toMatchObject({ status: 'working' });
    expect(execute).not.toHaveBeenCalled();
    const recordKey = handed.task?.callId.split('@')[0] ?? '';
    const parked = await itemOf(recordKey);
    expect(parked).toMatchObject({ status: 'INPROGRESS', attempt: 1, parked_claim: parked?.claim_id });
    expect(parked?.in_progress_expiration).toBeLessThanOrEqual(Date.now());
    // What the table's stream delivers, its batching window after the park: the completer schedules its
    // recheck then, due (DelaySeconds 0).
    pastTheStreamWindow();
    await completer.onStream([
      {
        eventName: 'MODIFY',
        dynamodb: { Keys: { id: { S: recordKey } }, NewImage: marshall(parked ?? {}), SequenceNumber: '1' },
      },
    ]);
    expect(sent).toEqual([expect.objectContaining({ key: recordKey, claim: parked?.claim_id, delaySeconds: 0 })]);
    const outcome = await completer.onRecheck({ key: recordKey, claim: String(parked?.claim_id) }, deadline());

    expect(outcome).toBe('finished');
    expect(execute).toHaveBeenCalledTimes(1);
    const [receipt] = await Promise.all(execute.mock.results.map((result) => result.value));
    expect(await runtime.lookup(tool.name, caller, 'k1')).toEqual({ status: 'completed', receipt: receipt.receipt });
    // The task's answer is a replay (rule 5): the completer's attempt answered no one.
    const resent = await runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    expect(resent).toMatchObject({ ok: true, idempotent: true, receipt: receipt.receipt });
  });

  it('a resend while it waits for the completer takes it over and runs it here (never handed off again), once', async () => {
    const caller = identity();
    const { tool, execute } = noteTool('send_note', undefined, { longRunning: true });
    const input = { idempotency_key: 'k2', text: 'hi' };

    await callAsTask(runtime, tool, caller, input, deadline(), { handOff: true });
    const resent = await callAsTask(runtime, tool, caller, input, deadline(), { handOff: true });
    const again = await runtime.invoke(tool, caller, input, deadline());

    expect(resent.result).toMatchObject({ ok: true, idempotent: false, key: 'k2' });
    expect(again).toMatchObject({
      ok: true,
      idempotent: true,
      receipt: (resent.result as { receipt: unknown }).receipt,
    });
    expect(execute).toHaveBeenCalledTimes(1);
  });

  it('without handOff (REST, a client that takes no task), the same tool runs in the request', async () => {
    const caller = identity();
    const { tool, execute } = noteTool('send_note', undefined, { longRunning: true });

    const answered = await runtime.invoke(tool, caller, { idempotency_key: 'k3', text: 'hi' }, deadline());

    expect(answered).toMatchObject({ ok: true, idempotent: false });
    expect(execute).toHaveBeenCalledTimes(1);
  });
});

describe('a handed-off call under the completer’s attempt limit (review 3, H1): its unrun first claim is no attempt', () => {
  it('maxAttempts 0 is refused naming the field (it would give up every handed-off call unrun), and under maxAttempts 1 a handed-off call still runs once', async () => {
    const caller = identity();
    const { tool, execute } = noteTool('send_note', undefined, { longRunning: true });
    const runtimeOf = (maxAttempts: number) => world.idempotencyRuntime({ maxAttempts });
    const options = (maxAttempts: number) => ({
      client: world.client,
      runtime: runtimeOf(maxAttempts),
      tools: [tool],
      queue: { send: async () => undefined },
      tableName: world.idempotencyTable.tableName,
      attributes: DEFAULT_RECORD_ATTRIBUTES,
    });

    expect(() => runtimeOf(0)).toThrow('maxAttempts (0) must be a whole number, at least 1');
    expect(() => runtimeOf(Number.NaN)).toThrow(/maxAttempts \(NaN\)/);
    const handed = await callAsTask(
      runtime,
      tool,
      caller,
      { idempotency_key: `k-${randomUUID()}`, text: 'hi' },
      deadline(),
      {
        handOff: true,
      },
    );
    const recordKey = handed.task?.callId.split('@')[0] ?? '';
    const parked = await itemOf(recordKey);
    pastTheStreamWindow();
    const outcome = await new Completer(options(1)).onRecheck(
      { key: recordKey, claim: String(parked?.claim_id) },
      deadline(60_000),
    );

    expect(parked).toMatchObject({ attempt: 1, unrun_attempts: 1 });
    expect({ outcome, runs: execute.mock.calls.length }).toEqual({ outcome: 'finished', runs: 1 });
  });
});

describe('a handed-off call’s first run meets a business error (review 3, H3): its task ends failed, and nothing spills over', () => {
  it('a dedupe-window tool whose first run (the completer’s) meets not_found: the key keeps the failure, and a fresh key with the same arguments runs, as after a failure in the request', async () => {
    const { NotFoundError } = await import('../../lib/idempotency/errors');
    let customerExists = false;
    const behaviour = async (args: { text: string }) => {
      if (!customerExists) throw new NotFoundError('customer: no such customer');
      return { receipt: { note_id: `note_${randomUUID()}`, text: args.text }, replayed: false };
    };
    const name = `window_note_${Date.now()}`;
    const { tool, execute } = noteTool(name, behaviour, { longRunning: true, dedupeWindowSeconds: 600 });
    const sent: Recheck[] = [];
    const completer = new Completer({
      client: world.client,
      runtime,
      tools: [tool],
      queue: { send: async (rechecks) => void sent.push(...rechecks) },
      tableName: world.idempotencyTable.tableName,
      attributes: DEFAULT_RECORD_ATTRIBUTES,
    });
    const caller = identity();

    // Control: the same tool run in the request (REST) — a first attempt's not_found frees the key and the intent.
    const control = noteTool(`${name}_rest`, behaviour, { dedupeWindowSeconds: 600 });
    const inRequest = await runtime.invoke(control.tool, caller, { idempotency_key: 'r1', text: 'same' }, deadline());
    customerExists = true;
    const freshInRequest = await runtime.invoke(
      control.tool,
      caller,
      { idempotency_key: 'r2', text: 'same' },
      deadline(),
    );
    customerExists = false;
    expect(inRequest).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(freshInRequest).toMatchObject({ ok: true, idempotent: false });

    // Handed off: the completer's run is the tool's first, and meets not_found.
    const handed = await callAsTask(runtime, tool, caller, { idempotency_key: 'h1', text: 'same' }, deadline(), {
      handOff: true,
    });
    const recordKey = handed.task?.callId.split('@')[0] ?? '';
    const parked = await itemOf(recordKey);
    pastTheStreamWindow();
    await completer.onRecheck({ key: recordKey, claim: String(parked?.claim_id) }, deadline(60_000));
    expect(execute).toHaveBeenCalledTimes(1);
    // The caller creates the customer, then asks again with a fresh key (the old one is burned, as documented).
    customerExists = true;
    const fresh = await runtime.invoke(tool, caller, { idempotency_key: 'h2', text: 'same' }, deadline());

    const kept = await runtime.invoke(tool, caller, { idempotency_key: 'h1', text: 'same' }, deadline());

    // The handed-off key ends failed (its task must end); nothing ran under the window, so a fresh key runs.
    expect(kept).toMatchObject({ ok: false, idempotent: true, error: { code: 'not_found' } });
    expect({ fresh, runs: execute.mock.calls.length }).toMatchObject({
      fresh: { ok: true, idempotent: false },
      runs: 2,
    });
  });
});
