// Rule 3 (docs/state-machine.md): a dedupe window's intent, its runners and the calls that wait on it.
/**
 * Review 15 (helper of h-review15), of 3d1c943..8ef9aa7. Each R15 test fails on 8ef9aa7's lib/: it states the
 * defect, and turns green once it is fixed.
 */
import { randomUUID } from 'node:crypto';
import { NotFoundError } from '../../lib/idempotency/errors';
import { MAX_RECEIPT_BYTES } from '../../lib/idempotency/receipt';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { movableClock } from '../helpers/clock';
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

/**
 * A dedupe-window tool idempotent by its downstream key (one effect per key, replayed under it), whose
 * customer can go away (`not_found`), and whose next receipt can break the receipt rule (too big: the effect
 * ran, the call's outcome is stored as `internal`). `during` runs once, inside the next run, before its effect.
 */
function keyedTool(prefix: string) {
  const state = {
    customerExists: true,
    badReceiptNext: false,
    notFoundNext: false,
    during: undefined as (() => Promise<void>) | undefined,
  };
  const effects = new Map<string, string>();
  const { tool } = noteTool(
    `${prefix}_${randomUUID().slice(0, 8)}`,
    async (a, context) => {
      const hook = state.during;
      state.during = undefined;
      await hook?.();
      if (state.notFoundNext) {
        state.notFoundNext = false;
        throw new NotFoundError('customer: no such customer');
      }
      const found = effects.get(context.downstreamKey);
      if (found) return { receipt: { note_id: found, text: a.text }, replayed: true };
      if (!state.customerExists) throw new NotFoundError('customer: no such customer');
      const noteId = `note_${randomUUID()}`;
      effects.set(context.downstreamKey, noteId);
      if (state.badReceiptNext) {
        state.badReceiptNext = false;
        return { receipt: { note_id: noteId, text: 'x'.repeat(MAX_RECEIPT_BYTES + 1) }, replayed: false };
      }
      return { receipt: { note_id: noteId, text: a.text }, replayed: false };
    },
    { dedupeWindowSeconds: 600 },
  );
  return { tool, effects, state, caller: identity() };
}

describe('review 15: the dedupe window intent after R14', () => {
  it('R15-1 a fresh key Q queued behind its window’s live holder A (waited_on A) makes a second effect for A’s window when A’s effect ran but its outcome is a failure (internal: a receipt that breaks the rule): outcomeOf now skips every failure, so past the window — F having replaced the intent and freed it on its first run’s not_found — Q creates an intent of its own and runs (R13-8 reopened by R14-3’s fix: "the intent keeps" a later failure only until it is replaced)', async () => {
    const clock = movableClock();
    const t = keyedTool('r15a');
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    // A creates the intent (dA) and makes its effect E1, but its receipt breaks the rule: stored `internal` (the
    // effect ran; the intent is kept, not freed). While A runs, Q (a fresh key, A's window) finds A live: queued.
    let q: unknown;
    t.state.badReceiptNext = true;
    t.state.during = async () => {
      q = await runtime.invoke(t.tool, t.caller, args('q1'), deadline());
    };
    const a = await runtime.invoke(t.tool, t.caller, args('a1'), deadline());
    expect(a).toMatchObject({ ok: false, error: { code: 'internal' } });
    expect(q).toMatchObject({ ok: false, status: 'pending' });
    expect(t.effects.size).toBe(1);

    // Past A's window: F replaces the intent (A settled) and frees it on its first run's not_found.
    clock.advance(11 * 60_000);
    t.state.customerExists = false;
    expect(await runtime.invoke(t.tool, t.caller, args('f1'), deadline())).toMatchObject({
      error: { code: 'not_found' },
    });
    t.state.customerExists = true;

    // Q's resend (asked in A's window, queued behind A, none of its attempts ran): A's effect is its window's.
    const qAgain = await runtime.invoke(t.tool, t.caller, args('q1'), deadline());
    expect({ effects: t.effects.size, q: qAgain }).toEqual({
      effects: 1,
      q: expect.objectContaining({ ok: false, error: expect.objectContaining({ code: 'internal' }) }),
    });
  });

  it('R15-2 the same waiter Q (queued behind A, whose effect ran but whose outcome is a failure) is answered, past the window, the receipt of F’s effect — a later window’s, made after Q was asked — instead of A’s outcome: outcomeOf skips A’s failure and Q reads F’s replacing intent as its own window’s (R14-5’s answer, by a waiter that did reach its intent)', async () => {
    const clock = movableClock();
    const t = keyedTool('r15b');
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    let q: unknown;
    t.state.badReceiptNext = true;
    t.state.during = async () => {
      q = await runtime.invoke(t.tool, t.caller, args('q2'), deadline());
    };
    expect(await runtime.invoke(t.tool, t.caller, args('a2'), deadline())).toMatchObject({
      ok: false,
      error: { code: 'internal' },
    });
    expect(q).toMatchObject({ ok: false, status: 'pending' });

    // Past A's window: F replaces the intent (A settled) and commits E2 under its own key.
    clock.advance(11 * 60_000);
    const f = await runtime.invoke(t.tool, t.caller, args('f2'), deadline());
    expect(f).toEqual(expect.objectContaining({ ok: true, idempotent: false }));
    expect(t.effects.size).toBe(2);

    // Q's resend: its window's outcome is A's, not F's effect.
    const qAgain = await runtime.invoke(t.tool, t.caller, args('q2'), deadline());
    expect(qAgain).toEqual(
      expect.objectContaining({ ok: false, error: expect.objectContaining({ code: 'internal' }) }),
    );
  });
});
