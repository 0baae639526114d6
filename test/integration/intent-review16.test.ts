// Rule 1 and rule 3 (docs/state-machine.md): a dedupe window's intent, and the calls that wait on its holder.
/**
 * Review 16 (helper of h-review16), of c06aece (`outcomeOf`'s "freed": a business error the holder's first run
 * met under its own key). Each R16 test fails on c06aece's lib/: it states the defect, and turns green once it
 * is fixed.
 */
import { randomUUID } from 'node:crypto';
import { NotFoundError } from '../../lib/idempotency/errors';
import { eraseItem } from '../../lib/idempotency/protocol/erase';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callRecords } from '../helpers/call-records';
import { movableClock } from '../helpers/clock';
import {
  intentIdsOf as intentIdsInWorld,
  landThenFailNextIntentWrite,
  recordIdsOf as recordIdsInWorld,
  throttleNextIntentWrite,
} from '../helpers/no-effect';
import { receiptOf } from '../helpers/past-window';
import { createProtocolWorld, deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool } from '../helpers/tools';

let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  world = createProtocolWorld();
  runtime = world.idempotencyRuntime();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

const itemOf = (recordKey: string) => callRecords(world, runtime).itemOf(recordKey);
const recordIdsOf = (tenant: string) => recordIdsInWorld(world, tenant);
const intentIdsOf = (tenant: string) => intentIdsInWorld(world, tenant);

/**
 * A dedupe-window tool idempotent by its downstream key, whose customer is missing until created
 * (`not_found`), whose next run can fail before any effect (`failNext`), and whose next run calls `during`
 * first.
 */
function keyedTool(prefix: string) {
  const state = {
    customerExists: false,
    failNext: false,
    during: undefined as (() => Promise<void>) | undefined,
  };
  const effects = new Map<string, string>();
  const { tool } = noteTool(
    `${prefix}_${randomUUID().slice(0, 8)}`,
    async (a, context) => {
      const hook = state.during;
      state.during = undefined;
      await hook?.();
      if (state.failNext) {
        state.failNext = false;
        throw new Error('provider: 503 before any effect'); // transient: the attempt counts as run
      }
      const found = effects.get(context.downstreamKey);
      if (found) return { receipt: { note_id: found, text: a.text }, replayed: true };
      if (!state.customerExists) throw new NotFoundError('customer: no such customer');
      const noteId = `note_${randomUUID()}`;
      effects.set(context.downstreamKey, noteId);
      return { receipt: { note_id: noteId, text: a.text }, replayed: false };
    },
    { dedupeWindowSeconds: 600 },
  );
  return { tool, effects, state, caller: identity() };
}

describe('review 16: outcomeOf’s "freed" after c06aece', () => {
  // Fixed: the store writes `intent_freed` when the attempt freed the intent it created first; outcomeOf reads it.
  it('R16-1 a holder C that started the intent afresh (its holder U erased) under the key fixed on its record by an earlier takeover of its own intent was created (freeable), freed it on not_found, and outcomeOf answered the waiter Q C’s not_found while a fresh key R ran and succeeded (R14-3 by another road) — since R19-4 an erased holder’s window ends instead: C and Q run under dC as its calls, and Q’s resend and R make one effect', async () => {
    const clock = movableClock();
    const t = keyedTool('r16a');
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    // C, attempt 1: creates the intent under dC; not_found; freeing it is throttled: C parked unrun.
    throttleNextIntentWrite(world, 'release');
    expect(await runtime.invoke(t.tool, t.caller, args('c1'), deadline())).toMatchObject({ ok: false });
    const [cKey] = await recordIdsOf(t.caller.tenant);
    clock.advance(1000);

    // T takes the intent over from C (abandoned): dC fixed on T; fails before any effect (counted as run).
    t.state.failNext = true;
    expect(await runtime.invoke(t.tool, t.caller, args('t1'), deadline())).toMatchObject({ ok: false });
    clock.advance(1000);

    // C, attempt 2: takes the intent back from T — the transaction lands (dC fixed on C), its answer is lost:
    // C parked unrun (no attempt of C has run).
    landThenFailNextIntentWrite(world, 'TransactWriteItemsCommand');
    expect(await runtime.invoke(t.tool, t.caller, args('c1'), deadline())).toMatchObject({ ok: false });
    expect((await itemOf(cKey!)).downstream_key).toBeDefined();
    clock.advance(1000);

    // T's resend runs under dC (fixed, ran before): not_found, stored — T is no longer in flight.
    expect(await runtime.invoke(t.tool, t.caller, args('t1'), deadline())).toMatchObject({
      error: { code: 'not_found' },
    });
    // U takes the intent over from C (abandoned), fails before any effect; its resend meets not_found; erased.
    const before = new Set(await recordIdsOf(t.caller.tenant));
    t.state.failNext = true;
    expect(await runtime.invoke(t.tool, t.caller, args('u1'), deadline())).toMatchObject({ ok: false });
    const uKey = (await recordIdsOf(t.caller.tenant)).find((id) => !before.has(id)) ?? '';
    clock.advance(1000);
    expect(await runtime.invoke(t.tool, t.caller, args('u1'), deadline())).toMatchObject({
      error: { code: 'not_found' },
    });
    expect((await eraseItem(world.idempotencyTable, await itemOf(uKey))).outcome).toBe('erased');
    clock.advance(1000);

    // C, attempt 3 (its first run): the intent's holder U is erased, no runner in flight. Since review 19
    // (R19-4) that ends the window, as the erase would: C runs under dC as that window's call, created by
    // none (it frees nothing) — no longer held afresh, the path R16-1 was found on. While its tool runs, Q (a
    // fresh key, asked in that window) runs under dC too.
    let q: unknown;
    t.state.during = async () => {
      q = await runtime.invoke(t.tool, t.caller, args('q1'), deadline());
    };
    expect(await runtime.invoke(t.tool, t.caller, args('c1'), deadline())).toMatchObject({
      error: { code: 'not_found' },
    });
    // Q, asked in the window C's claim ended (the same second), runs under dC too: the customer is missing.
    expect(q).toMatchObject({ ok: false, error: { code: 'not_found' } });
    // Nothing happened, and no intent is held: the erased window's marker.
    const intentsAfterC = await intentIdsOf(t.caller.tenant);

    // The customer is created. Q's resend (none of its attempts ran) and R, a fresh key, in the same window.
    t.state.customerExists = true;
    clock.advance(2_000);
    const qAgain = await runtime.invoke(t.tool, t.caller, args('q1'), deadline());
    const r = await runtime.invoke(t.tool, t.caller, args('r1'), deadline());
    expect({ intentsAfterC, q: qAgain, r, effects: t.effects.size }).toEqual({
      intentsAfterC: [],
      q: expect.objectContaining({ ok: true, idempotent: false }),
      r: expect.objectContaining({ ok: true, idempotent: true, receipt: receiptOf(qAgain) }),
      effects: 1,
    });
  });
});
