// Rule 3 (docs/state-machine.md): a dedupe window's intent, its runners and the calls that wait on it.
// Rule 6 (docs/state-machine.md): erase keeps what a call in flight may still need, and says when to erase again.
/**
 * Review 14 (helper of h-review14), of a373436..c7895a3. Each R14 test fails on c7895a3's lib/: it states the
 * defect, and turns green once it is fixed.
 */
import { randomUUID } from 'node:crypto';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { NotFoundError } from '../../lib/idempotency/errors';
import { eraseItem } from '../../lib/idempotency/protocol/erase';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callRecords } from '../helpers/call-records';
import { movableClock } from '../helpers/clock';
import {
  intentIdsOf as intentIdsInWorld,
  keyedMissingCustomerTool,
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
afterEach(() => jest.restoreAllMocks());

const itemOf = (recordKey: string) => callRecords(world, runtime).itemOf(recordKey);
const intentIdsOf = (tenant: string) => intentIdsInWorld(world, tenant);

/**
 * Leaves `intentKey` as a version before the runners wrote it: no `intent_runners` (its holder alone), and
 * living its window plus its creator's TTL (24 h, the default), as every version before review 22 wrote it.
 */
async function asWrittenBeforeRunners(intentKey: string): Promise<void> {
  await world.client.send(
    new UpdateItemCommand({
      TableName: world.idempotencyTable.tableName,
      Key: { id: { S: intentKey } },
      UpdateExpression: 'SET expiration = window_end + :ttl REMOVE intent_runners',
      ExpressionAttributeValues: { ':ttl': { N: String(24 * 60 * 60) } },
    }),
  );
}

/** The window (600 s), the records' TTL (24 h, the default) and a minute more: the intent's own TTL has passed. */
const PAST_THE_INTENTS_TTL_MS = (600 + 24 * 60 * 60 + 60) * 1000;

describe('review 14: the dedupe window intent after the join', () => {
  it('R14-1 an intent an earlier version wrote (no intent_runners) blocks every new window’s call after its own TTL too, until DynamoDB’s TTL sweep happens to delete it (days): replaceEnded parks the call to a TTL already past (told 100 ms, again and again) and never replaces the intent', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    t.createCustomer();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    // A (as an earlier version ran it: its intent lists no runners) completes its effect.
    expect(await runtime.invoke(t.tool, t.caller, args('a1'), deadline())).toEqual(
      expect.objectContaining({ ok: true, idempotent: false }),
    );
    const [intentKey] = await intentIdsOf(t.caller.tenant);
    await asWrittenBeforeRunners(intentKey!);

    // Past the intent's TTL (every call asked in its window has expired), not yet swept by DynamoDB (its TTL
    // deletes "within a few days"). F, a new window's call with the same arguments, must run.
    clock.advance(PAST_THE_INTENTS_TTL_MS);
    const f = await runtime.invoke(t.tool, t.caller, args('f1'), deadline());
    clock.advance(5_000);
    const fAgain = await runtime.invoke(t.tool, t.caller, args('f1'), deadline());
    expect({ f, fAgain }).toEqual({
      f: expect.objectContaining({ ok: true, idempotent: false }),
      fAgain: expect.objectContaining({ ok: true }),
    });
  });

  it('R14-2 erase keeps an intent an earlier version wrote after its TTL too, reporting it unreadable with a time to erase again that is already past: a tenant’s erase never completes until DynamoDB’s sweep deletes the intent', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    t.createCustomer();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    expect(await runtime.invoke(t.tool, t.caller, args('a2'), deadline())).toMatchObject({ ok: true });
    const [intentKey] = await intentIdsOf(t.caller.tenant);
    await asWrittenBeforeRunners(intentKey!);

    clock.advance(PAST_THE_INTENTS_TTL_MS);
    const erasure = await eraseItem(world.idempotencyTable, await itemOf(intentKey!));
    // Past its TTL every call asked in its window has expired: nothing can need it — erased (or, kept, with a
    // time to erase again that is still ahead).
    const kept = erasure.outcome === 'in_flight' ? erasure.kept : undefined;
    const eraseAgainInThePast = kept !== undefined && (kept.changesAtMs ?? 0) <= Date.now();
    expect({ outcome: erasure.outcome, eraseAgainInThePast }).toEqual({
      outcome: 'erased',
      eraseAgainInThePast: false,
    });
  });

  it('R14-3 a fresh key Q queued behind its window’s holder A (waited_on) is answered A’s business failure when A’s first run made no effect and freed the intent — though rule 1 frees it exactly so that no fresh key is answered such a failure (a fresh key R asked just after runs and succeeds)', async () => {
    const clock = movableClock();
    let customerExists = false;
    let during: (() => Promise<void>) | undefined;
    const { tool } = noteTool(
      `waited3_${randomUUID().slice(0, 8)}`,
      async (a) => {
        const hook = during;
        during = undefined;
        await hook?.();
        if (!customerExists) throw new NotFoundError('customer: no such customer');
        return { receipt: { note_id: `note_${randomUUID()}`, text: a.text }, replayed: false };
      },
      { dedupeWindowSeconds: 600 },
    );
    const caller = identity();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    // A's first attempt fails before it runs (its intent's create throttled): parked, no effect (unrun).
    throttleNextIntentWrite(world, 'create');
    expect(await runtime.invoke(tool, caller, args('a3'), deadline())).toMatchObject({ ok: false });
    // A's resend (attempt 2, its first run): creates the intent. While its tool runs, Q (a fresh key, the same
    // arguments, A's window) finds A live: pending, parked queued behind A (waited_on A).
    let q: unknown;
    during = async () => {
      q = await runtime.invoke(tool, caller, args('q3'), deadline());
    };
    // Its run meets not_found: nothing happened — A frees the intent it created, then stores its failure.
    const a = await runtime.invoke(tool, caller, args('a3'), deadline());
    expect(a).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(q).toMatchObject({ ok: false, status: 'pending' });
    expect(await intentIdsOf(caller.tenant)).toEqual([]);

    // The customer is created. Q's resend (none of its attempts ran) and R, a fresh key, in the same window.
    customerExists = true;
    clock.advance(2_000);
    const qAgain = await runtime.invoke(tool, caller, args('q3'), deadline());
    const r = await runtime.invoke(tool, caller, args('r3'), deadline());
    expect({ q: qAgain, r }).toEqual({
      q: expect.objectContaining({ ok: true }),
      r: expect.objectContaining({ ok: true }),
    });
  });

  // Fixed: the intent that replaces a window keeps it (`replaced_window`), and a release of that intent leaves it
  // behind (a marker): a call asked in the earlier window is answered from it.
  it('R14-4 R13-8 by another road: a fresh key Q asked in A’s window whose first attempt failed before it reached the intent (a throttled intent write: parked unrun, no waited_on) runs anew past the window once F replaced and freed the intent — a second effect for A’s window, Q answered idempotent: false', async () => {
    const clock = movableClock();
    let customerExists = true;
    const effects = new Map<string, string>();
    const { tool } = noteTool(
      `keyed4_${randomUUID().slice(0, 8)}`,
      async (a, context) => {
        const found = effects.get(context.downstreamKey);
        if (found) return { receipt: { note_id: found, text: a.text }, replayed: true };
        if (!customerExists) throw new NotFoundError('customer: no such customer');
        const noteId = `note_${randomUUID()}`;
        effects.set(context.downstreamKey, noteId);
        return { receipt: { note_id: noteId, text: a.text }, replayed: false };
      },
      { dedupeWindowSeconds: 600 },
    );
    const caller = identity();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    // A creates the intent (dA) and commits E1: completed, idempotent: false.
    const a = await runtime.invoke(tool, caller, args('a4'), deadline());
    expect(a).toEqual(expect.objectContaining({ ok: true, idempotent: false }));
    // Q, a fresh key in A's window: its read of the intent is throttled (a transient error before anything ran).
    throttleNextIntentWrite(world, 'create');
    expect(await runtime.invoke(tool, caller, args('q4'), deadline())).toMatchObject({ ok: false });
    expect(effects.size).toBe(1);

    // Past A's window: F replaces the intent (A settled, Q no runner) and frees it on its first run's not_found.
    clock.advance(11 * 60_000);
    customerExists = false;
    expect(await runtime.invoke(tool, caller, args('f4'), deadline())).toMatchObject({ error: { code: 'not_found' } });
    customerExists = true;

    // Q's resend (asked in A's window, none of its attempts ran): A's effect must answer it.
    const qAgain = await runtime.invoke(tool, caller, args('q4'), deadline());
    expect({ effects: effects.size, q: qAgain }).toEqual({
      effects: 1,
      q: expect.objectContaining({ ok: true, idempotent: true, receipt: (a as { receipt: unknown }).receipt }),
    });
  });

  // Fixed with R14-4: a call asked before the intent's window began is answered from the window it replaced.
  it('R14-5 a fresh key Q asked in A’s window whose first attempt failed before it reached the intent is answered, past the window, the receipt of F’s effect — a later window’s — instead of A’s: takeFromAnother takes F’s intent for Q’s window (its end is after Q was asked) though F’s window began after it', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    t.createCustomer();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    // A creates the intent (dA) and commits E1. Q, a fresh key in A's window: its intent write throttled.
    const a = await runtime.invoke(t.tool, t.caller, args('a5'), deadline());
    expect(a).toEqual(expect.objectContaining({ ok: true, idempotent: false }));
    throttleNextIntentWrite(world, 'create');
    expect(await runtime.invoke(t.tool, t.caller, args('q5'), deadline())).toMatchObject({ ok: false });

    // Past A's window: F, a new window's call, replaces the intent (A settled) and commits E2 under dF.
    clock.advance(11 * 60_000);
    const f = await runtime.invoke(t.tool, t.caller, args('f5'), deadline());
    expect(f).toEqual(expect.objectContaining({ ok: true, idempotent: false }));
    expect(t.effects.size).toBe(2);

    // Q's resend (asked in A's window, none of its attempts ran): its window's effect is A's.
    const qAgain = await runtime.invoke(t.tool, t.caller, args('q5'), deadline());
    expect(qAgain).toEqual(
      expect.objectContaining({ ok: true, idempotent: true, receipt: (a as { receipt: unknown }).receipt }),
    );
  });
});
