// Rule 1 (docs/state-machine.md): a record whose effect may have happened is never deleted.
// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * Attempts that parked before their tool ran (`CallRecord.unrunAttempts`): a hand-off, a dedupe window's
 * holder in the way. The first attempt after them is the call's first run — its business error frees the
 * intent it created — the completer counts only the attempts that ran, and until one runs every answer
 * says the call is queued, nothing happened, and when the server starts it. Found by the second review of
 * issue 35's fixes (helper-24), each first as a failing test; and by the third (review 5): a first run's
 * failure frees its intent before it is stored, an attempt that fails before its tool runs is a failed
 * attempt (not queued), and a handed-off call that always fails stalls when the Liveness table says.
 */
import { randomUUID } from 'node:crypto';
import { NotFoundError } from '../../lib/idempotency/errors';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callAsTask } from '../../lib/idempotency/task';
import { readOperation } from '../../lib/reads/operation';
import { callRecords } from '../helpers/call-records';
import { movableClock, pastTheStreamWindow } from '../helpers/clock';
import { beforeNext, throttled } from '../helpers/intercept';
import { completerOn, isIntentWriteOf, missingCustomerTool, throttleIntentPuts } from '../helpers/no-effect';
import { createProtocolWorld, deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { gate, noteTool } from '../helpers/tools';

let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  world = createProtocolWorld();
  runtime = world.idempotencyRuntime();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks()); // movableClock's Date.now

/** An item of the world's idempotency table, read consistently (`callRecords`). */
const itemOf = (recordKey: string) => callRecords(world, runtime).itemOf(recordKey);

const completerOf = (tools: ReturnType<typeof noteTool>['tool'][]) => completerOn(world, runtime, tools);

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
  pastTheStreamWindow(); // the completer looks at a handed-off call then
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
    // The deployed completer no longer serves the tool (renamed by a deploy): it gives up at its look.
    pastTheStreamWindow();
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

/**
 * A handed-off call H of a dedupe-window tool whose customer does not exist yet, parked unrun (attempt 1).
 * `firstRun` runs the completer's attempt 2 — H's first run: it creates the window's intent and meets
 * not_found, stored (attempt > 1), and the intent it created is to be freed (nothing ran) —, with
 * `beforeRelease` run just before that intent's DeleteItem.
 */
async function handedOffCallOfAMissingCustomer() {
  const { tool, execute, caller, createCustomer } = missingCustomerTool({ longRunning: true });
  const handed = await callAsTask(runtime, tool, caller, { idempotency_key: 'h1', text: 'same' }, deadline(), {
    handOff: true,
  });
  const recordKey = handed.task?.callId.split('@')[0] ?? '';
  const parked = await itemOf(recordKey);
  return {
    tool,
    execute,
    caller,
    recordKey,
    createCustomer,
    async firstRun(beforeRelease: () => Promise<unknown>) {
      beforeNext(world.client, 'UpdateItemCommand', beforeRelease, (input) =>
        isIntentWriteOf('release', 'UpdateItemCommand', input),
      );
      pastTheStreamWindow();
      return completerOf([tool]).onRecheck({ key: recordKey, claim: String(parked.claim_id) }, deadline());
    },
  };
}

describe('a first run’s failure (attempt > 1, nothing ran before) and the intent it created: freed before the failure is stored (review 5, F1)', () => {
  it('a fresh key with the same arguments asked between the failure’s store and the intent’s release runs: it is not answered the failure as a replay', async () => {
    const h = await handedOffCallOfAMissingCustomer();
    let fresh: unknown;
    const outcome = await h.firstRun(async () => {
      // Another request of the same user, the same arguments, a fresh key — the customer exists by now.
      h.createCustomer();
      fresh = await runtime.invoke(h.tool, h.caller, { idempotency_key: 'f1', text: 'same' }, deadline());
    });

    expect(outcome).toBe('finished');
    expect(await itemOf(h.recordKey)).toMatchObject({ status: 'COMPLETED' });
    // Nothing of H made an effect (its only run failed with not_found): the fresh key may run, or wait
    // (pending) — as after a first attempt's business error, whose intent is released before its record —
    // but it must not be answered H's failure as its own replayed outcome, stored under its key.
    expect(fresh).not.toMatchObject({ ok: false, idempotent: true });
  });

  it('when the intent’s release fails (an outage), the call stays in flight: a later fresh key with the same arguments is not answered a failure as a replay', async () => {
    const h = await handedOffCallOfAMissingCustomer();
    await h.firstRun(async () => {
      throw throttled();
    });

    // The caller creates the customer and asks again with a fresh key (docs/guarantees.md "Long-running":
    // "the dedupe window's intent it created is freed, and a fresh key with the same arguments runs").
    h.createCustomer();
    const fresh = await runtime.invoke(h.tool, h.caller, { idempotency_key: 'f2', text: 'same' }, deadline());

    expect(fresh).toEqual(expect.objectContaining({ ok: true, idempotent: false }));
  });
});

describe('attempts that fail before their tool runs are failed attempts, not queued ones (review 5, F2)', () => {
  it('a call whose every attempt fails before its tool runs is given up after maxAttempts (8), as the Liveness table bounds it — not re-run until its TTL', async () => {
    const clock = movableClock();
    const { tool, execute } = noteTool(`r5_prerun_${randomUUID().slice(0, 8)}`, undefined, {
      dedupeWindowSeconds: 600,
    });
    const caller = identity();
    // The window's intent cannot be written (a hot intent item throttled; or, for good, an item under its key
    // that is not an intent: claimIntent throws): every attempt fails in the choose phase, before its tool.
    const throttling = throttleIntentPuts(world);
    try {
      const answers = [];
      for (let attempt = 1; attempt <= 9; attempt++) {
        answers.push(await runtime.invoke(tool, caller, { idempotency_key: 'p1', text: 'x' }, deadline()));
      }
      expect(answers.every((answer) => 'error' in answer && answer.error.code === 'unavailable')).toBe(true);
      const [record] = (await world.idempotencyRecordKeys(caller.tenant)).filter((r) => !r.id.includes('#intent#'));
      const item = await itemOf(record!.id);
      expect(item).toMatchObject({ attempt: 9, status: 'INPROGRESS' });
      // Nine attempts failed: past the default maxAttempts (8). Its due time (lock + backoff(8) = 15 min) comes.
      clock.advance(16 * 60_000);
      const outcome = await completerOf([tool]).onRecheck(
        { key: record!.id, claim: String(item.claim_id) },
        deadline(),
      );

      expect(execute).not.toHaveBeenCalled();
      expect(outcome).toBe('gave_up');
    } finally {
      throttling.stop();
    }
  });
});

describe('when a handed-off call that always fails is given up (docs/state-machine.md, Liveness; review 5, F5)', () => {
  it('after its runs (maxAttempts counts only those): stalled ≈ 76 min after its first failure — the backoff counts the unrun attempt too, one 15-min step later than ≈ 61', async () => {
    const clock = movableClock();
    const { tool, execute } = noteTool(
      `r5_bound_${randomUUID().slice(0, 8)}`,
      async () => {
        throw Object.assign(new Error('provider timed out'), { name: 'TimeoutError' });
      },
      { longRunning: true },
    );
    const caller = identity();
    const handed = await callAsTask(runtime, tool, caller, { idempotency_key: 'b1', text: 'x' }, deadline(), {
      handOff: true,
    });
    const recordKey = handed.task?.callId.split('@')[0] ?? '';
    const completer = completerOf([tool]);
    let firstFailureMs: number | undefined;
    let outcome = '';
    for (let look = 0; look < 20 && outcome !== 'gave_up'; look++) {
      const item = await itemOf(recordKey);
      // The completer's next look, as the record says (what every answer about it hints).
      const poll = await readOperation({ runtime, toolNames: [tool.name] }, caller, tool.name, 'b1');
      clock.advance(((poll as { retry_after_ms?: number }).retry_after_ms ?? 1_000) + 10);
      outcome = await completer.onRecheck({ key: recordKey, claim: String(item.claim_id) }, deadline());
      if (firstFailureMs === undefined && execute.mock.calls.length > 0) firstFailureMs = Date.now();
    }
    const minutes = (Date.now() - (firstFailureMs ?? Date.now())) / 60_000;

    expect(outcome).toBe('gave_up');
    // ≈ 61 min for any abandoned call (test/integration/completer.test.ts), one 15-min step more here.
    expect(execute).toHaveBeenCalledTimes(9); // as any call whose every run fails (docs/state-machine.md): 9 runs
    expect(minutes).toBeGreaterThan(70);
    expect(minutes).toBeLessThan(80);
  });
});
