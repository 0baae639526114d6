import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callAsTask } from '../../lib/idempotency/task';
import { readOperation } from '../../lib/reads/operation';
import { callRecords } from '../helpers/call-records';
import { movableClock } from '../helpers/clock';
import { completerOn, missingCustomerTool, throttleIntentPuts, throttleNextIntentWrite } from '../helpers/no-effect';
import { createProtocolWorld, deadline, type ProtocolWorld } from '../helpers/protocol-world';
import type { noteTool } from '../helpers/tools';

let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  world = createProtocolWorld();
  runtime = world.idempotencyRuntime();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks()); // movableClock's Date.now

const itemOf = (recordKey: string) => callRecords(world, runtime).itemOf(recordKey);

const completerOf = (tools: ReturnType<typeof noteTool>['tool'][], maxAttempts?: number) =>
  completerOn(world, runtime, tools, maxAttempts);

describe('attempts that failed before their tool ran: no effect, yet counted by the completer’s budget', () => {
  it('R6-1 a plain call: attempt 1 fails writing the intent (throttled), the retry meets not_found — a fresh key with the same arguments, once the customer exists, runs (nothing of the first call ran)', async () => {
    const t = missingCustomerTool();
    throttleNextIntentWrite(world, 'PutItemCommand');
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
    throttleNextIntentWrite(world, 'PutItemCommand');
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
    throttleNextIntentWrite(world, 'DeleteItemCommand');
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
