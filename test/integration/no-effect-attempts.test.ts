// Rule 1 (docs/state-machine.md): a record whose effect may have happened is never deleted.
// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * Attempts that made no effect but were not queued: an attempt that failed before its tool ran (a store
 * error writing the dedupe window's intent), and a business error whose intent release failed.
 * `Claim.ranBefore` (attempt − 1 > unrun_attempts) is a later attempt's only memory of "nothing ran": such an
 * attempt is counted in `unrun_attempts`, so the next attempt may still be the call's first run (its
 * business error frees the intent it created, and a fresh key with the same arguments runs), while the
 * completer's budget counts it (`queued_attempts` counts only the queued parks), so a call whose attempts
 * keep failing is given up on, its answers saying nothing happened — not that it is queued. An intent is
 * never left naming a released record, and one taken over from a holder that made no effect is the taker's
 * own. Found by reviews 6 and 7 (helper-26, helper-27), each first as a failing test.
 */
import { randomUUID } from 'node:crypto';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callAsTask } from '../../lib/idempotency/task';
import { readOperation } from '../../lib/reads/operation';
import { callRecords } from '../helpers/call-records';
import { movableClock, pastTheStreamWindow } from '../helpers/clock';
import {
  asQueuedByAnEarlierVersion,
  completerOn,
  missingCustomerTool,
  throttleIntentPuts,
  throttleNextIntentWrite,
} from '../helpers/no-effect';
import { createProtocolWorld, deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool } from '../helpers/tools';

let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  world = createProtocolWorld();
  runtime = world.idempotencyRuntime();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks()); // movableClock's Date.now

const itemOf = (recordKey: string) => callRecords(world, runtime).itemOf(recordKey);

const completerOf = (tools: ReturnType<typeof noteTool>['tool'][]) => completerOn(world, runtime, tools);

describe('attempts that failed before their tool ran: no effect, yet counted by the completer’s budget', () => {
  it('R6-1 a plain call: attempt 1 fails writing the intent (throttled), the retry meets not_found — a fresh key with the same arguments, once the customer exists, runs (nothing of the first call ran)', async () => {
    const t = missingCustomerTool();
    throttleNextIntentWrite(world, 'create');
    const first = await runtime.invoke(t.tool, t.caller, { idempotency_key: 'k1', text: 'same' }, deadline());
    expect(first).toMatchObject({ ok: false, error: { code: 'unavailable' } });
    expect(t.execute).not.toHaveBeenCalled(); // attempt 1 never reached its tool

    // The caller retries as told (same key): attempt 2 is the call's first run, and meets not_found.
    const retry = await runtime.invoke(t.tool, t.caller, { idempotency_key: 'k1', text: 'same' }, deadline());
    expect(retry).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(t.execute).toHaveBeenCalledTimes(1);

    // Nothing of k1 made an effect (its only run failed with not_found). The customer is created, and the
    // same request is asked with a fresh key: as after any first run's business error, it runs.
    t.createCustomer();
    const fresh = await runtime.invoke(t.tool, t.caller, { idempotency_key: 'f1', text: 'same' }, deadline());

    expect(fresh).toEqual(expect.objectContaining({ ok: true, idempotent: false }));
  });

  it('R6-2 a handed-off call: attempt 1 queued, attempt 2 (the completer) fails writing the intent, attempt 3 meets not_found — a fresh key with the same arguments runs', async () => {
    const t = missingCustomerTool({ longRunning: true });
    const handed = await callAsTask(runtime, t.tool, t.caller, { idempotency_key: 'h1', text: 'same' }, deadline(), {
      handOff: true,
    });
    const recordKey = handed.task?.callId.split('@')[0] ?? '';
    const parked = await itemOf(recordKey);
    throttleNextIntentWrite(world, 'create');
    pastTheStreamWindow();
    const second = await completerOf([t.tool]).onRecheck(
      { key: recordKey, claim: String(parked.claim_id) },
      deadline(),
    );
    expect(second).toBe('unsettled');
    expect(t.execute).not.toHaveBeenCalled();
    // Neither attempt made an effect; only the first was queued (the completer's budget counts the second).
    expect(await itemOf(recordKey)).toMatchObject({ attempt: 2, unrun_attempts: 2, queued_attempts: 1 });

    // A resend with the key (what the poll offers): attempt 3, the call's first run, meets not_found.
    const third = await runtime.invoke(t.tool, t.caller, { idempotency_key: 'h1', text: 'same' }, deadline());
    expect(third).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(t.execute).toHaveBeenCalledTimes(1);

    t.createCustomer();
    const fresh = await runtime.invoke(t.tool, t.caller, { idempotency_key: 'f1', text: 'same' }, deadline());

    expect(fresh).toEqual(expect.objectContaining({ ok: true, idempotent: false }));
  });

  it('R6-3 a call given up after attempts that all failed before their tool ran: its poll says nothing happened, not that its effect may have', async () => {
    const clock = movableClock();
    const t = missingCustomerTool();
    const throttling = throttleIntentPuts(world);
    try {
      for (let attempt = 1; attempt <= 9; attempt++) {
        await runtime.invoke(t.tool, t.caller, { idempotency_key: 'p1', text: 'x' }, deadline());
      }
    } finally {
      throttling.stop();
    }
    const [record] = (await world.idempotencyRecordKeys(t.caller.tenant)).filter((r) => !r.id.includes('#intent#'));
    const item = await itemOf(record!.id);
    clock.advance(16 * 60_000);
    const outcome = await completerOf([t.tool]).onRecheck(
      { key: record!.id, claim: String(item.claim_id) },
      deadline(),
    );
    const poll = await readOperation({ runtime, toolNames: [t.tool.name] }, t.caller, t.tool.name, 'p1');

    expect(outcome).toBe('gave_up');
    expect(t.execute).not.toHaveBeenCalled();
    expect(poll).toMatchObject({ ok: true, status: 'stalled' });
    // As for a handed-off call given up before it ran (unrun-attempts.test.ts, unknown_tool): nothing ran.
    expect(JSON.stringify(poll)).not.toMatch(/may or may not have happened/);
  });
});

describe('a first run’s failure whose intent release fails: parked as having made no effect', () => {
  it('R6-4 handed off; attempt 2 meets not_found and its intent release is throttled; the resend (attempt 3) meets not_found again — a fresh key with the same arguments, once the customer exists, runs', async () => {
    const t = missingCustomerTool({ longRunning: true });
    const handed = await callAsTask(runtime, t.tool, t.caller, { idempotency_key: 'h1', text: 'same' }, deadline(), {
      handOff: true,
    });
    const recordKey = handed.task?.callId.split('@')[0] ?? '';
    const parked = await itemOf(recordKey);
    // Attempt 2 (the completer): the call's first run, not_found; the release of the intent it created fails.
    throttleNextIntentWrite(world, 'release');
    pastTheStreamWindow();
    await completerOf([t.tool]).onRecheck({ key: recordKey, claim: String(parked.claim_id) }, deadline());
    expect(t.execute).toHaveBeenCalledTimes(1);
    expect(await itemOf(recordKey)).toMatchObject({ attempt: 2, status: 'INPROGRESS' });

    // The caller resends with the key before creating the customer: attempt 3, not_found again.
    const third = await runtime.invoke(t.tool, t.caller, { idempotency_key: 'h1', text: 'same' }, deadline());
    expect(third).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(t.execute).toHaveBeenCalledTimes(2);

    // Both runs failed with not_found: nothing of h1 made an effect. The customer is created; a fresh key runs.
    t.createCustomer();
    const fresh = await runtime.invoke(t.tool, t.caller, { idempotency_key: 'f1', text: 'same' }, deadline());

    expect(fresh).toEqual(expect.objectContaining({ ok: true, idempotent: false }));
  });
});

describe('answers of a call whose only run met a business error (its intent release failed): not queued (review 7, R7-2)', () => {
  it('get_operation does not say it is queued or that none of its attempts ran: its tool ran (and met not_found)', async () => {
    const t = missingCustomerTool({ longRunning: true });
    const handed = await callAsTask(runtime, t.tool, t.caller, { idempotency_key: 'h2', text: 'same' }, deadline(), {
      handOff: true,
    });
    const recordKey = handed.task?.callId.split('@')[0] ?? '';
    const parked = await itemOf(recordKey);
    throttleNextIntentWrite(world, 'release');
    pastTheStreamWindow();
    await completerOf([t.tool]).onRecheck({ key: recordKey, claim: String(parked.claim_id) }, deadline());
    expect(t.execute).toHaveBeenCalledTimes(1); // its tool ran
    expect(await itemOf(recordKey)).toMatchObject({ attempt: 2, unrun_attempts: 2, status: 'INPROGRESS' });

    const poll = await readOperation({ runtime, toolNames: [t.tool.name] }, t.caller, t.tool.name, 'h2');

    expect(poll).toMatchObject({ ok: true, status: 'abandoned' });
    // "nothing happened" is true; "none of its attempts has run yet" / "queued" is not: its run failed.
    expect(JSON.stringify(poll)).not.toMatch(/none of its attempts has run yet/);
  });
});

describe('a record an earlier version queued (unrun_attempts counted its queued parks, no queued_attempts) (review 7, R7-3)', () => {
  it('a handed-off call then queued behind a stalled window holder 8 times is not given up for its attempts: its queued parks are not in the budget', async () => {
    const clock = movableClock();
    const { tool, execute } = noteTool(`r7_old_${randomUUID().slice(0, 8)}`, undefined, { longRunning: true });
    const caller = identity();
    const handed = await callAsTask(runtime, tool, caller, { idempotency_key: 'o1', text: 'x' }, deadline(), {
      handOff: true,
    });
    const recordKey = handed.task?.callId.split('@')[0] ?? '';
    // As 826ee99 left it: attempt 9, each parked queued (unrun_attempts 9: its count of queued parks), no
    // queued_attempts attribute (it had none). Under 826ee99 the completer counted 9 − 9 = 0 attempts.
    await asQueuedByAnEarlierVersion(world, recordKey, 9);
    const item = await itemOf(recordKey);
    clock.advance(16 * 60_000); // its due time: lock + backoff(8) = 15 min
    const outcome = await completerOf([tool]).onRecheck({ key: recordKey, claim: String(item.claim_id) }, deadline());

    // None of its attempts ran or failed: the budget is not spent, and it runs.
    expect(outcome).not.toBe('gave_up');
    expect(execute).toHaveBeenCalled();
  });
});
