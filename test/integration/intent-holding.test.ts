// Rule 3 (docs/state-machine.md): an intent's downstream key is fixed once.
// Rule 1 (docs/state-machine.md): a record whose effect may have happened is never deleted.
/**
 * A call runs under a dedupe window's key only holding the window's intent, unless an attempt of it already
 * ran under that key (review 8: a taker whose swap lost, or whose intent was freed since, ran beside a fresh
 * call's new intent — two effects). And the count of queued attempts survives a park of a record an
 * earlier version queued. Each test first failed on e9d5e25.
 */
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { closeStalled } from '../../lib/idempotency/protocol/erase';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callAsTask } from '../../lib/idempotency/task';
import { callRecords } from '../helpers/call-records';
import { movableClock } from '../helpers/clock';
import { beforeNext, throttled } from '../helpers/intercept';
import {
  asQueuedByAnEarlierVersion,
  completerOn,
  keyedMissingCustomerTool,
  missingCustomerTool,
  throttleNextIntentWrite,
  throttleNextRecordUpdate,
} from '../helpers/no-effect';
import { createProtocolWorld, deadline, type ProtocolWorld } from '../helpers/protocol-world';

let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  world = createProtocolWorld();
  runtime = world.idempotencyRuntime();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

const itemOf = (recordKey: string) => callRecords(world, runtime).itemOf(recordKey);

describe('R8-3 a record 826ee99 queued (unrun_attempts its queued parks, no queued_attempts), then parked once by this version', () => {
  it('R8-3 queued 9 times by an earlier version, then one attempt fails writing the intent: the park keeps the 9 queued (if_not_exists), and the call is not given up', async () => {
    const clock = movableClock();
    const t = missingCustomerTool({ longRunning: true });
    const handed = await callAsTask(runtime, t.tool, t.caller, { idempotency_key: 'o3', text: 'x' }, deadline(), {
      handOff: true,
    });
    const recordKey = handed.task?.callId.split('@')[0] ?? '';
    // As 826ee99 left it (the R7-3 test's record): attempt 9, each parked queued, no queued_attempts.
    await asQueuedByAnEarlierVersion(world, recordKey, 9);
    const completer = completerOn(world, runtime, [t.tool]);
    clock.advance(16 * 60_000);
    // Attempt 10 (the completer): its intent write is throttled — one failed attempt, parked unrun.
    throttleNextIntentWrite(world, 'create');
    const first = await completer.onRecheck(
      { key: recordKey, claim: String((await itemOf(recordKey)).claim_id) },
      deadline(),
    );
    expect(first).toBe('unsettled');
    const after = await itemOf(recordKey);
    expect(after).toMatchObject({ attempt: 10, unrun_attempts: 10 });

    clock.advance(60 * 60_000);
    const second = await completer.onRecheck({ key: recordKey, claim: String(after.claim_id) }, deadline());

    // 9 queued attempts and 1 failure: one attempt of the budget (8) is spent — it runs.
    expect(second).not.toBe('gave_up');
    expect(after.queued_attempts).toBe(9);
  });
});

describe('R8-4 two fresh keys take the intent over from the same neverRan holder at once (one release fault only)', () => {
  it('R8-4 K swaps first and frees the intent on not_found; X, whose swap lost, claims the intent again before it runs: a fresh key in the window is answered X’s effect', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    // A: attempt 1 creates the intent (dA), not_found, its intent release throttled: parked unrun (R7-1).
    throttleNextIntentWrite(world, 'release');
    expect(await runtime.invoke(t.tool, t.caller, args('a4'), deadline())).toMatchObject({ ok: false });
    clock.advance(1000); // parked "now": abandoned

    // X reads A (abandoned, neverRan); just before X's takeover, K does the same and takes it over first
    // (created: true before review 10), meets not_found and frees the intent.
    let k: unknown;
    beforeNext(world.client, 'TransactWriteItemsCommand', async () => {
      k = await runtime.invoke(t.tool, t.caller, args('k4'), deadline());
    });
    const x = await runtime.invoke(t.tool, t.caller, args('x4'), deadline());
    expect(k).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(x).toMatchObject({ ok: false, status: 'pending' });
    expect(t.effects.size).toBe(0);

    // The customer is created; X's record (the intent's key fixed on it) is re-run by the completer.
    t.createCustomer();
    const xKey = (await world.idempotencyRecordKeys(t.caller.tenant))
      .map((r) => r.id)
      .filter((id) => !id.includes('#intent#'));
    const items = await Promise.all(xKey.map((id) => itemOf(id)));
    const xItem = items.find((i) => i.status === 'INPROGRESS' && i.attempt === 1 && i.queued_attempts === 1);
    expect(xItem).toBeDefined();
    expect(xItem?.downstream_key).toBeUndefined(); // its swap lost: no key fixed (rule 3, review 9)
    clock.advance(2 * 60_000); // X's re-run is due; D below is still inside the window (600 s)
    await completerOn(world, runtime, [t.tool]).onRecheck(
      { key: String(xItem?.id), claim: String(xItem?.claim_id) },
      deadline(),
    );
    expect(t.effects.size).toBe(1);

    // D: a fresh key, the same arguments, inside the window: X's effect must answer it.
    const d = await runtime.invoke(t.tool, t.caller, args('d4'), deadline());

    expect(d).toEqual(expect.objectContaining({ ok: true, idempotent: true }));
    expect(t.effects.size).toBe(1);
  });
});

describe('R8-6 docs/state-machine.md’s Transitions row of park says what park writes', () => {
  it('R8-6 the park row says every park writes queued_attempts (+0 when not queued), as settle.ts’s park does', () => {
    const { readFileSync } = require('node:fs') as typeof import('node:fs');
    const doc = readFileSync(`${__dirname}/../../docs/state-machine.md`, 'utf8');
    const row = doc.split('\n').find((line) => line.startsWith('| park |')) ?? '';
    expect(row).toMatch(/queued_attempts/);
    // settle.ts: `ADD #queued :queued` on every park, :queued 0 when not queued.
    expect(row).toMatch(/every park|0 when not queued|ADD queued_attempts 1 or 0/);
  });
});

describe('a taker that dies at its swap (review 9, R9-1: the key was fixed before the swap, then run without the intent)', () => {
  it('R9-1 no key is fixed on it, so its next attempt claims the intent again: a fresh key is answered its effect, not a second one', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    // A: creates the intent (dA), not_found, its release throttled: parked unrun (neverRan), abandoned.
    throttleNextIntentWrite(world, 'release');
    expect(await runtime.invoke(t.tool, t.caller, args('a9'), deadline())).toMatchObject({ ok: false });
    clock.advance(1000);

    // B: takes the intent over from A and dies at its takeover: the takeover and the park after it both fail
    // (as a Lambda timeout would leave it: attempt 1, no unrun_attempts). Before review 9 the key was fixed
    // first, in a write of its own; since review 10 the swap and the fix are one transaction.
    beforeNext(world.client, 'TransactWriteItemsCommand', async () => {
      throttleNextRecordUpdate(world);
      throw throttled();
    });
    expect(await runtime.invoke(t.tool, t.caller, args('b9'), deadline())).toMatchObject({ ok: false });
    const keys = (await world.idempotencyRecordKeys(t.caller.tenant))
      .map((r) => r.id)
      .filter((id) => !id.includes('#intent#'));
    const items = await Promise.all(keys.map((id) => itemOf(id)));
    // B never held the intent and ran nothing; its record reads as having run (attempt 1, no unrun count)
    // — and has no key fixed: a key is fixed only after the swap (rule 3), so B claims the intent again.
    const bItem = items.find((i) => i.attempt === 1 && i.status === 'INPROGRESS' && i.unrun_attempts === undefined);
    expect(bItem).toBeDefined();
    expect(bItem?.downstream_key).toBeUndefined();
    clock.advance(10 * 60_000 - 60_000); // B's lock ended; still inside the 600 s window

    // C: a fresh key takes the intent over from A (abandoned, neverRan: created true); not_found frees it.
    expect(await runtime.invoke(t.tool, t.caller, args('c9'), deadline())).toMatchObject({
      ok: false,
      error: { code: 'not_found' },
    });
    expect(t.effects.size).toBe(0);

    // The customer is created. B's resend: attempt 2, no key fixed — it claims the intent (none: created).
    t.createCustomer();
    const b = await runtime.invoke(t.tool, t.caller, args('b9'), deadline());
    expect(b).toEqual(expect.objectContaining({ ok: true, idempotent: false }));
    expect(t.effects.size).toBe(1);

    // D: a fresh key, the same arguments, inside the window: B's effect must answer it.
    const d = await runtime.invoke(t.tool, t.caller, args('d9'), deadline());
    expect(d).toEqual(expect.objectContaining({ ok: true, idempotent: true }));
    expect(t.effects.size).toBe(1);
  });
});

describe('a taker whose takeover fails (a store error) is parked unrun (review 10, R10-2: on 8ef71f6 its swap passed and its fix failed, holding the intent)', () => {
  it('R10-2 the next taker holds the intent as taken over, never as created: its not_found does not free it, and a fresh key in the window is answered the one effect', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    // A: creates the intent (dA), not_found, its release throttled: parked unrun (neverRan), abandoned.
    throttleNextIntentWrite(world, 'release');
    expect(await runtime.invoke(t.tool, t.caller, args('a11'), deadline())).toMatchObject({ ok: false });
    clock.advance(1000);

    // X: takes the intent over from A (dA fixed on X in the same transaction), runs, and its provider fails before any
    // effect: parked now, counted as having run, with dA fixed — its next attempt runs under dA, intent or not.
    t.failNextRun();
    expect(await runtime.invoke(t.tool, t.caller, args('x11'), deadline())).toMatchObject({ ok: false });
    expect(t.effects.size).toBe(0);
    clock.advance(1000);

    // Y: takes the intent over from X (may have run: not created). On 8ef71f6 its swap passed and its fix
    // failed (a store error): parked unrun, a record that never ran holding the intent X ran under. The two
    // are one transaction now (R10-1): it fails whole, and Y is parked unrun without the intent.
    beforeNext(world.client, 'TransactWriteItemsCommand', async () => {
      throw throttled();
    });
    expect(await runtime.invoke(t.tool, t.caller, args('y11'), deadline())).toMatchObject({ ok: false });
    clock.advance(1000);

    // Z: takes the intent over from Y (abandoned, neverRan: created true), meets not_found, frees the intent.
    expect(await runtime.invoke(t.tool, t.caller, args('z11'), deadline())).toMatchObject({
      ok: false,
      error: { code: 'not_found' },
    });
    // (On 8ef71f6 the intent is gone now; with the fix before the swap, Y never held it and Z was not created.)

    // The customer is created. X's resend: ranBefore, dA fixed — runs under dA without the intent: an effect.
    t.createCustomer();
    expect(await runtime.invoke(t.tool, t.caller, args('x11'), deadline())).toEqual(
      expect.objectContaining({ ok: true, idempotent: false }),
    );
    expect(t.effects.size).toBe(1);

    // W: a fresh key, the same arguments, inside the window: X's effect must answer it.
    const w = await runtime.invoke(t.tool, t.caller, args('w11'), deadline());
    expect({ effects: t.effects.size, w }).toEqual({
      effects: 1,
      w: expect.not.objectContaining({ ok: true, idempotent: false }),
    });
  });
});

describe('a taker erased (closeStalled) before its takeover (review 10, R10-1: on 8ef71f6 the swap passed, then the fix found the record erased)', () => {
  it('R10-1 the takeover, one transaction, fails whole: the intent still names the abandoned holder, and a fresh key in the window is answered its effect, not a second one', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    t.createCustomer();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });
    const recordIds = async () =>
      (await world.idempotencyRecordKeys(t.caller.tenant)).map((r) => r.id).filter((id) => !id.includes('#intent#'));

    // A: creates the intent (dA), makes its effect under dA, and dies at its store: in flight, abandoned.
    throttleNextRecordUpdate(world);
    expect(await runtime.invoke(t.tool, t.caller, args('a10'), deadline())).toMatchObject({ ok: false });
    expect(t.effects.size).toBe(1);
    const [aKey] = await recordIds();
    clock.advance(9 * 60_000); // A's lock ended (abandoned, kept in flight); still inside the 600 s window

    // B: a fresh key reads A (abandoned) and goes to take the intent over. Just before its takeover, B's
    // attempt is past its lock, given up on by the completer (stalled) and closed by an erase with the domain
    // tables (closeStalled) — erase keeps A (in flight) and the intent A holds.
    let bKey = '';
    beforeNext(world.client, 'TransactWriteItemsCommand', async () => {
      bKey = (await recordIds()).find((id) => id !== aKey) ?? '';
      const b = await itemOf(bKey);
      await world.client.send(
        new UpdateItemCommand({
          TableName: world.idempotencyTable.tableName,
          Key: { id: { S: bKey } },
          UpdateExpression: 'SET stalled_claim = :c',
          ExpressionAttributeValues: { ':c': { S: String(b.claim_id) } },
        }),
      );
      const lockEnd = Number(b.in_progress_expiration);
      expect(await closeStalled(world.idempotencyTable, bKey, String(b.claim_id), lockEnd + 1)).toBe('erased');
    });
    expect(await runtime.invoke(t.tool, t.caller, args('b10'), deadline())).toMatchObject({ ok: false });
    expect(await itemOf(bKey)).toMatchObject({ status: 'ERASED' });

    // D: a fresh key, the same arguments, inside A's window: A's effect (under dA) must answer it, not a second.
    const d = await runtime.invoke(t.tool, t.caller, args('d10'), deadline());
    expect({ effects: t.effects.size, d }).toEqual({
      effects: 1,
      d: expect.not.objectContaining({ ok: true, idempotent: false }),
    });
  });
});
