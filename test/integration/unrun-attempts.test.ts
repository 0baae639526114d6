// Rule 1 (docs/state-machine.md): a record whose effect may have happened is never deleted.
// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * Attempts that parked before their tool ran (`CallRecord.unrunAttempts`): a hand-off, a dedupe window's
 * holder in the way. The first attempt after them is the call's first run — its business error frees the
 * intent it created — the completer counts only the attempts that ran, and until one runs every answer
 * says the call is queued, nothing happened, and when the server starts it. Found by the second review of
 * issue 35's fixes (helper-24), each first as a failing test.
 */
import { randomUUID } from 'node:crypto';
import { Completer } from '../../lib/idempotency/completer';
import { NotFoundError } from '../../lib/idempotency/errors';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callAsTask } from '../../lib/idempotency/task';
import { readOperation } from '../../lib/reads/operation';
import { callRecords } from '../helpers/call-records';
import { createProtocolWorld, deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { gate, noteTool } from '../helpers/tools';

let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  world = createProtocolWorld();
  runtime = world.idempotencyRuntime();
});
afterAll(() => world.destroy());

/** An item of the world's idempotency table, read consistently (`callRecords`). */
const itemOf = (recordKey: string) => callRecords(world, runtime).itemOf(recordKey);

function completerOf(tools: ReturnType<typeof noteTool>['tool'][]) {
  return new Completer({
    client: world.client,
    runtime,
    tools,
    queue: { send: async () => undefined },
    tableName: world.idempotencyTable.tableName,
    attributes: DEFAULT_RECORD_ATTRIBUTES,
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A handed-off call H of a dedupe-window tool whose completer attempt (attempt 2) finds the window's intent
 * held by another live call B (a fresh key, the same arguments): attempt 2 parks `running`, unrun. B then
 * meets not_found on its first attempt and frees the intent. Nothing of H has run when its lock ends.
 */
async function handedOffBehindALiveHolder() {
  let customerExists = false;
  const bGate = gate();
  let runs = 0;
  const behaviour = async (args: { text: string }) => {
    runs += 1;
    if (runs === 1) await bGate.opened; // B, held in flight
    if (!customerExists) throw new NotFoundError('customer: no such customer');
    return { receipt: { note_id: `note_${randomUUID()}`, text: args.text }, replayed: false };
  };
  const name = `r4_window_${Date.now()}`;
  const { tool, execute } = noteTool(name, behaviour, { longRunning: true, dedupeWindowSeconds: 600 });
  const caller = identity();

  // B: a request in flight holding the window's intent.
  const b = runtime.invoke(tool, caller, { idempotency_key: 'b1', text: 'same' }, deadline(20_000));
  while (runs < 1) await sleep(20);
  // H: handed off; the completer's attempt 2 finds B live and parks `running`.
  const handed = await callAsTask(runtime, tool, caller, { idempotency_key: 'h1', text: 'same' }, deadline(), {
    handOff: true,
  });
  const recordKey = handed.task?.callId.split('@')[0] ?? '';
  const parked = await itemOf(recordKey);
  const second = await completerOf([tool]).onRecheck(
    { key: recordKey, claim: String(parked?.claim_id) },
    deadline(60_000),
  );
  const afterSecond = await itemOf(recordKey);
  // B meets not_found on its first attempt: its claim and the intent it created are released.
  bGate.open();
  const bAnswer = await b;
  // H's park (at most MAX_RETRY_AFTER_MS) ends.
  await sleep(1_200);
  return {
    tool,
    execute,
    caller,
    recordKey,
    second,
    afterSecond,
    bAnswer,
    setCustomerExists: (v: boolean) => {
      customerExists = v;
    },
  };
}

describe('a handed-off call whose attempt 2 did not run (it waited on a window holder)', () => {
  it('its first run (attempt 3) meets not_found: stored, and the intent it created freed — a fresh key with the same arguments runs', async () => {
    const s = await handedOffBehindALiveHolder();
    expect(s.second).toBe('unsettled');
    expect(s.afterSecond).toMatchObject({ attempt: 2, unrun_attempts: 2, status: 'INPROGRESS' });
    expect(s.bAnswer).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(s.execute).toHaveBeenCalledTimes(1); // only B ran; H never did

    // H's first run: a resend takes it over (attempt 3) and meets not_found — stored, as documented.
    const first = await runtime.invoke(s.tool, s.caller, { idempotency_key: 'h1', text: 'same' }, deadline());
    expect(first).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(s.execute).toHaveBeenCalledTimes(2);
    // The caller creates the customer and asks again with a fresh key: nothing ran, so it must run
    // (docs/guarantees.md "Long-running": "the dedupe window's intent it created is freed, and a fresh key
    // with the same arguments runs").
    s.setCustomerExists(true);
    const fresh = await runtime.invoke(s.tool, s.caller, { idempotency_key: 'f1', text: 'same' }, deadline());

    expect(fresh).toEqual(expect.objectContaining({ ok: true, idempotent: false }));
  });

  it('its poll, once the park ends, says it is queued — not that it stopped', async () => {
    const s = await handedOffBehindALiveHolder();
    const poll = await readOperation({ runtime, toolNames: [s.tool.name] }, s.caller, s.tool.name, 'h1');

    expect(s.execute).toHaveBeenCalledTimes(1); // only B ran
    expect(poll).toMatchObject({ ok: true, status: 'abandoned', queued: true });
    expect(JSON.stringify(poll)).not.toMatch(/worker died|attempt failed|stopped before it finished/);
  });
});

describe('a handed-off call the completer gives up on before it ever ran', () => {
  it('unknown_tool: get_operation says none of its attempts ran, not that its effect may have happened', async () => {
    const caller = identity();
    const { tool, execute } = noteTool(`r4_gone_${Date.now()}`, undefined, { longRunning: true });
    const handed = await callAsTask(runtime, tool, caller, { idempotency_key: 'g1', text: 'hi' }, deadline(), {
      handOff: true,
    });
    const recordKey = handed.task?.callId.split('@')[0] ?? '';
    const parked = await itemOf(recordKey);
    // The deployed completer no longer serves the tool (renamed by a deploy): it gives up at once.
    const outcome = await completerOf([]).onRecheck(
      { key: recordKey, claim: String(parked?.claim_id) },
      deadline(60_000),
    );
    const poll = await readOperation({ runtime, toolNames: [tool.name] }, caller, tool.name, 'g1');

    expect(outcome).toBe('gave_up');
    expect(execute).not.toHaveBeenCalled();
    expect(poll).toMatchObject({ ok: true, status: 'stalled' });
    expect(JSON.stringify(poll)).not.toMatch(/may or may not have happened/);
    expect(poll).toMatchObject({ hint: expect.stringContaining('none of its attempts ran: nothing happened') });
  });
});

describe('when a handed-off call starts, as its answers say it, on the stack', () => {
  it('its answer and poll wait the stack’s stream batching window (streamBatchingWindowSeconds): the completer sees the park no sooner', async () => {
    const { COMPLETER_DEFAULTS } = await import('../../lib/infra/defaults');
    const { nextAfterRead } = await import('../../lib/api/next-step');
    const caller = identity();
    const { tool } = noteTool(`r4_when_${Date.now()}`, undefined, { longRunning: true });
    const handed = await callAsTask(runtime, tool, caller, { idempotency_key: 'w1', text: 'hi' }, deadline(), {
      handOff: true,
    });
    const poll = await readOperation({ runtime, toolNames: [tool.name] }, caller, tool.name, 'w1');
    const next = nextAfterRead(poll as never);
    const firstLookMs = COMPLETER_DEFAULTS.streamBatchingWindowSeconds * 1000;
    expect(next.message).toMatch(/queued \(nothing ran yet\): the server starts it within (9|10) s/);
    expect((handed.result as { retry_after_ms: number }).retry_after_ms).toBeGreaterThanOrEqual(firstLookMs);
    expect((poll as { retry_after_ms: number }).retry_after_ms).toBeGreaterThan(firstLookMs - 1_000);
  });
});
