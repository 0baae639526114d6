// Rule 3 (docs/state-machine.md): an intent names its runners; while one of them is in flight the intent is
// never deleted, started afresh under another key, nor replaced after its window.
// Rule 6 (docs/state-machine.md): erase keeps what a call in flight may still need.
/**
 * Review 13 (helper of h-review13), of the dedupe window's runners. Each R13 test fails on the commit it was
 * added to (f60f906's lib/): it states the defect, and turns green once it is fixed.
 */
import { randomUUID } from 'node:crypto';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { eraseTenant } from '../../lib/admin/erase-tenant';
import { askAgainAfterMs } from '../../lib/idempotency/answers';
import { NotFoundError } from '../../lib/idempotency/errors';
import { eraseItem } from '../../lib/idempotency/protocol/erase';
import { callRecordOf, DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callRecords } from '../helpers/call-records';
import { movableClock } from '../helpers/clock';
import { beforeNext } from '../helpers/intercept';
import {
  intentIdsOf as intentIdsInWorld,
  isIntentWrite,
  keyedMissingCustomerTool,
  landThenFailNextIntentWrite,
  noteOf,
  recordIdsOf as recordIdsInWorld,
  throttleNextIntentWrite,
  throttleNextRecordUpdate,
} from '../helpers/no-effect';
import { ownIdempotencyTable } from '../helpers/own-table';
import { createProtocolWorld, deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool } from '../helpers/tools';

ownIdempotencyTable('intent-review13');

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
/** The next store (a call record's UpdateItem) fails as throttled: the attempt made its effect and stays in flight. */
const failNextStore = () => throttleNextRecordUpdate(world);

/** Leaves `intentKey` as a version before the runners wrote it: no `intent_runners` (its holder alone). */
async function asWrittenBeforeRunners(intentKey: string): Promise<void> {
  await world.client.send(
    new UpdateItemCommand({
      TableName: world.idempotencyTable.tableName,
      Key: { id: { S: intentKey } },
      UpdateExpression: 'REMOVE intent_runners',
    }),
  );
}

describe('review 13: the dedupe window intent’s runners', () => {
  it('R13-1 a takeover of an intent an earlier version wrote (no intent_runners) drops the holder it took over from the runners: erase then deletes the intent while that holder, which made the effect, is in flight, and a fresh key in the window makes a second effect', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    t.createCustomer();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    // A (as an earlier version ran it: its intent has no runners): creates the intent (dA), makes its effect
    // under dA, dies at its store — in flight.
    failNextStore();
    expect(await runtime.invoke(t.tool, t.caller, args('a1'), deadline())).toMatchObject({ ok: false });
    expect(t.effects.size).toBe(1);
    const [aKey] = await recordIdsOf(t.caller.tenant);
    const [intentKey] = await intentIdsOf(t.caller.tenant);
    await asWrittenBeforeRunners(intentKey!);
    clock.advance(15_000); // A's lock ended: abandoned

    // This version from here on. Z takes the intent over from A (abandoned): ADD {Z} makes the set {Z} — A,
    // the holder it read, is in it nowhere now. Z runs under dA: A's effect, replayed; Z completes.
    expect(await runtime.invoke(t.tool, t.caller, args('z1'), deadline())).toEqual(
      expect.objectContaining({ ok: true, idempotent: true }),
    );
    const runners = [...((await itemOf(intentKey!)).intent_runners as Set<string>)];

    // Erase (no domain tables) meets the intent: its holder Z completed, its runners {Z}: deleted — though
    // A, which made the effect under dA, is in flight (abandoned: a retry or the completer finishes it).
    expect(await itemOf(aKey!)).toMatchObject({ status: 'INPROGRESS' });
    const erased = await eraseItem(world.idempotencyTable, await itemOf(intentKey!));

    // F: a fresh key, the same arguments, inside the window: A's effect must answer it.
    const f = await runtime.invoke(t.tool, t.caller, args('f1'), deadline());
    expect({
      aAmongRunners: runners.some((r) => r.startsWith(`${aKey}@`)),
      erased: erased.outcome,
      effects: t.effects.size,
      f,
    }).toEqual({
      aAmongRunners: true,
      erased: 'in_flight',
      effects: 1,
      f: expect.not.objectContaining({ ok: true, idempotent: false }),
    });
  });

  it('R13-2 the same takeover of an earlier version’s intent: past the window a new call replaces the intent while its creator A (in flight, its effect made under dA) may still ask it, and A’s resend is answered the new window’s receipt — its own effect’s receipt never stored', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    t.createCustomer();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    failNextStore();
    expect(await runtime.invoke(t.tool, t.caller, args('a2'), deadline())).toMatchObject({ ok: false });
    const aNote = t.effects.values().next().value;
    const [intentKey] = await intentIdsOf(t.caller.tenant);
    await asWrittenBeforeRunners(intentKey!);
    clock.advance(15_000);
    expect(await runtime.invoke(t.tool, t.caller, args('z2'), deadline())).toEqual(
      expect.objectContaining({ ok: true, idempotent: true }),
    );

    // Past the window (600 s): F, a new window's call. Its intent's holder Z settled; its creator A is in
    // flight and may ask it again (R11-3): F must wait.
    clock.advance(11 * 60_000);
    const f = await runtime.invoke(t.tool, t.caller, args('f2'), deadline());
    // A's resend (asked in the first window): its own effect under dA.
    const a = await runtime.invoke(t.tool, t.caller, args('a2'), deadline());
    expect({ f: (f as { status?: string }).status, aNote: noteOf(a) }).toEqual({ f: 'pending', aNote });
  });

  it('R13-3 every fresh key asked in the window of a holder whose outcome was a replay is answered that replay and added to no runners (was: each joined the runners for good — ~4,200 such calls filled the intent to DynamoDB’s 400 KB item limit, and every fresh key after was answered internal)', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    t.createCustomer();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    // G creates the intent (dG), makes its effect, dies at its store; H takes it over: a replay, completed.
    failNextStore();
    expect(await runtime.invoke(t.tool, t.caller, args('g3'), deadline())).toMatchObject({ ok: false });
    clock.advance(15_000);
    const h = await runtime.invoke(t.tool, t.caller, args('h3'), deadline());
    expect(h).toEqual(expect.objectContaining({ ok: true, idempotent: true }));
    const [intentKey] = await intentIdsOf(t.caller.tenant);
    const intentBefore = await itemOf(intentKey!);
    const runs = t.execute.mock.calls.length;

    // An agent that retries with a fresh key each time (what a dedupe window is for): 30 of them, for real.
    const answers = [];
    for (let i = 0; i < 30; i++) answers.push(await runtime.invoke(t.tool, t.caller, args(`x3-${i}`), deadline()));

    expect({
      answers: new Set(answers.map((a) => JSON.stringify({ ...a, key: undefined }))),
      runs: t.execute.mock.calls.length - runs,
      intent: await itemOf(intentKey!),
    }).toEqual({
      answers: new Set([JSON.stringify({ ...h, key: undefined })]),
      runs: 0,
      intent: intentBefore,
    });
  });

  it('R13-4 an intent an earlier version left held by its creator C, taken back from a taker T that ran under C’s key (no intent_runners to say so), is freed by C’s business error as though C were its only runner: T, in flight, commits under dC and a fresh key makes a second effect', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    // R12-2's history, as the version before the runners could leave it: C creates the intent (dC), meets
    // not_found, its free throttled (parked unrun); T takes the intent over (dC fixed on T) and fails before
    // any effect (counted as run: T's next attempt runs under dC without the intent); C takes it back (the
    // transaction lands, its answer is lost: C parked unrun).
    throttleNextIntentWrite(world, 'release');
    expect(await runtime.invoke(t.tool, t.caller, args('c4'), deadline())).toMatchObject({ ok: false });
    const [intentKey] = await intentIdsOf(t.caller.tenant);
    const [cKey] = await recordIdsOf(t.caller.tenant);
    clock.advance(1000);
    t.failNextRun();
    expect(await runtime.invoke(t.tool, t.caller, args('t4'), deadline())).toMatchObject({ ok: false });
    clock.advance(1000);
    landThenFailNextIntentWrite(world, 'TransactWriteItemsCommand');
    expect(await runtime.invoke(t.tool, t.caller, args('c4'), deadline())).toMatchObject({ ok: false });
    expect((await itemOf(intentKey!)).intent_owner).toBe(cKey);
    // The intent as that version wrote it: no runners — nothing on it says T ran under dC.
    await asWrittenBeforeRunners(intentKey!);
    clock.advance(1000);

    // This version from here on. C, attempt 3 (none of its attempts ran): it holds the intent under dC, its own
    // key — counted as created (alone: the runners read are its holder only). not_found: the intent is freed.
    await runtime.invoke(t.tool, t.caller, args('c4'), deadline());
    const intentsAfterC = (await intentIdsOf(t.caller.tenant)).length;

    // The customer exists. T's resend runs under dC (fixed, ran before): E1. F, a fresh key in the window.
    t.createCustomer();
    await runtime.invoke(t.tool, t.caller, args('t4'), deadline());
    const f = await runtime.invoke(t.tool, t.caller, args('f4'), deadline());
    expect({ intentsAfterC, effects: t.effects.size, f }).toEqual({
      intentsAfterC: 1,
      effects: 1,
      f: expect.not.objectContaining({ ok: true, idempotent: false }),
    });
  });

  it('R13-5 an intent 07e56bd left (no intent_runners) names only its last holder: erase deletes it while an earlier taker T, its effect made under dA and its key fixed, is in flight — though the same scan finds T in flight with the intent’s key — and a fresh key in the window makes a second effect', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    // As 07e56bd runs it (this version's writes, the runners removed at the end, as 07e56bd wrote none).
    // A creates the intent (dA), its provider fails before any effect: abandoned.
    t.failNextRun();
    expect(await runtime.invoke(t.tool, t.caller, args('a5'), deadline())).toMatchObject({ ok: false });
    const [aKey] = await recordIdsOf(t.caller.tenant);
    const [intentKey] = await intentIdsOf(t.caller.tenant);
    clock.advance(1000);
    // T takes the intent over (dA fixed on T), makes the effect under dA, dies at its store: in flight.
    t.createCustomer();
    failNextStore();
    expect(await runtime.invoke(t.tool, t.caller, args('t5'), deadline())).toMatchObject({ ok: false });
    expect(t.effects.size).toBe(1);
    const tKey = (await recordIdsOf(t.caller.tenant)).find((id) => id !== aKey) ?? '';
    clock.advance(15_000); // T's lock ended: abandoned
    // Z takes the intent over from T: a replay of T's effect; completes. A's resend settles A the same way.
    expect(await runtime.invoke(t.tool, t.caller, args('z5'), deadline())).toEqual(
      expect.objectContaining({ ok: true, idempotent: true }),
    );
    expect(await runtime.invoke(t.tool, t.caller, args('a5'), deadline())).toMatchObject({ ok: true });
    await asWrittenBeforeRunners(intentKey!);
    expect(await itemOf(tKey)).toMatchObject({ status: 'INPROGRESS', downstream_key: expect.any(String) });

    // This version: erase (no domain tables) meets the intent — its holder Z completed, and no runners to read.
    const erased = await eraseItem(world.idempotencyTable, await itemOf(intentKey!));
    // F: a fresh key, the same arguments, inside the window: T's effect must answer it.
    const f = await runtime.invoke(t.tool, t.caller, args('f5'), deadline());
    expect({ erased: erased.outcome, effects: t.effects.size, f }).toEqual({
      erased: 'in_flight',
      effects: 1,
      f: expect.not.objectContaining({ ok: true, idempotent: false }),
    });
  });

  it('R13-6 a tenant’s erase whose intent delete is refused (a fresh key took it afresh after erase tombstoned its holder) reads it again and erases or reports it (was: left the intent and reported nothing of it — the report read complete with the tenant’s intent still in the table)', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    t.createCustomer();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    // R12-4's start: G commits under dG and dies; H takes over (a replay) and completes; G's resend completes.
    failNextStore();
    expect(await runtime.invoke(t.tool, t.caller, args('g6'), deadline())).toMatchObject({ ok: false });
    clock.advance(15_000);
    expect(await runtime.invoke(t.tool, t.caller, args('h6'), deadline())).toMatchObject({ ok: true });
    expect(await runtime.invoke(t.tool, t.caller, args('g6'), deadline())).toMatchObject({ ok: true });

    // The tenant's erase reads the intent (H completed, no runner in flight); before its delete, J (a fresh key
    // inside the window) joins the runners, runs under dG (a replay) and completes: the delete is refused.
    beforeNext(
      world.client,
      'DeleteItemCommand',
      async () => {
        expect(await runtime.invoke(t.tool, t.caller, args('j6'), deadline())).toMatchObject({ ok: true });
      },
      isIntentWrite,
    );
    const env = { ...process.env, IDEMPOTENCY_TABLE: world.idempotencyTable.tableName };
    const report = await eraseTenant(world.client, { tenant: t.caller.tenant }, env);
    const intentLeft = (await intentIdsOf(t.caller.tenant)).length > 0;

    // Left, it must be reported as kept (rule 6: a partial erase says so, with when to erase again).
    expect({
      intentLeft,
      reportedKept: report.tables.idempotency!.inFlight > 0 && report.retryAfter !== undefined,
    }).toEqual({ intentLeft, reportedKept: intentLeft });
  });

  it('R13-7 erase with the app’s tables meets an intent whose stalled runner A is resent (and completes) just before its close: the close is refused, and the intent is kept with A reported as a stalled call that nothing moves (no time to erase again), though A completed and nothing is in flight (its holder’s close re-reads; a runner’s does not)', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    t.createCustomer();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    // R12-3's start: A commits under dA and dies; Z takes over (a replay) and completes; A is given up on.
    failNextStore();
    expect(await runtime.invoke(t.tool, t.caller, args('a7'), deadline())).toMatchObject({ ok: false });
    const [aKey] = await recordIdsOf(t.caller.tenant);
    clock.advance(15_000);
    expect(await runtime.invoke(t.tool, t.caller, args('z7'), deadline())).toMatchObject({ ok: true });
    await world.client.send(
      new UpdateItemCommand({
        TableName: world.idempotencyTable.tableName,
        Key: { id: { S: aKey! } },
        UpdateExpression: 'SET stalled_claim = claim_id',
      }),
    );
    expect(await itemOf(aKey!)).toMatchObject({ status: 'INPROGRESS' });
    const [intentKey] = await intentIdsOf(t.caller.tenant);

    // The intent's erasure closes A (a stalled runner) — but just before, A's resend takes it over and completes
    // (its own effect under dA): the close is refused.
    beforeNext(
      world.client,
      'UpdateItemCommand',
      async () => {
        expect(await runtime.invoke(t.tool, t.caller, args('a7'), deadline())).toMatchObject({ ok: true });
      },
      (input) => JSON.stringify(input.Key).includes(aKey!) && String(input.UpdateExpression).includes(':erased'),
    );
    const erasure = await eraseItem(world.idempotencyTable, await itemOf(intentKey!), { closeStalled: true });
    expect(await itemOf(aKey!)).toMatchObject({ status: 'COMPLETED' });

    // Nothing of the intent's is in flight now: erased — or, kept, with a time to erase again.
    expect(erasure).toEqual(
      erasure.outcome === 'erased'
        ? { outcome: 'erased' }
        : { outcome: 'in_flight', kept: expect.objectContaining({ changesAtMs: expect.any(Number) }) },
    );
  });

  it('R13-8 a fresh key Q asked inside A’s window, queued behind A (live), is no runner: past the window F replaces the intent (A settled) and frees it on its first run’s business error; Q’s next attempt creates an intent of its own and makes a second effect for A’s window (Q must be answered A’s effect)', async () => {
    const clock = movableClock();
    // keyedMissingCustomerTool, with a customer that can also go away.
    let customerExists = true;
    const effects = new Map<string, string>();
    const { tool } = noteTool(
      `keyed8_${randomUUID().slice(0, 8)}`,
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

    // A creates the intent (dA) and makes its effect E1; just before A stores it, Q (a fresh key, the same
    // arguments, A's window) finds A live: pending, parked queued. A stores: completed, idempotent: false.
    let q: unknown;
    beforeNext(
      world.client,
      'UpdateItemCommand',
      async () => {
        q = await runtime.invoke(tool, caller, args('q8'), deadline());
      },
      (input) => !isIntentWrite(input) && String(input.UpdateExpression).includes('#data'),
    );
    const a = await runtime.invoke(tool, caller, args('a8'), deadline());
    expect(a).toEqual(expect.objectContaining({ ok: true, idempotent: false }));
    expect(q).toMatchObject({ ok: false, status: 'pending' });
    expect(effects.size).toBe(1);

    // Past A's window: F, a new window's call, replaces the intent (A settled, no runner in flight). The customer
    // is gone: not_found on F's first run — F frees the intent it created.
    clock.advance(11 * 60_000);
    customerExists = false;
    expect(await runtime.invoke(tool, caller, args('f8'), deadline())).toMatchObject({
      ok: false,
      error: { code: 'not_found' },
    });
    customerExists = true;

    // Q's resend (asked in A's window, none of its attempts ran): A's effect must answer it.
    const qAgain = await runtime.invoke(tool, caller, args('q8'), deadline());
    expect({ effects: effects.size, q: qAgain }).toEqual({
      effects: 1,
      q: expect.objectContaining({ ok: true, idempotent: true, receipt: (a as { receipt: unknown }).receipt }),
    });
  });

  it('R13-9 past the window, a new call waiting on the old window’s abandoned holder is told to ask again in 1 s, though the holder changes only at the completer’s next look (its backoff: 30 s after its second attempt) — the waiter’s hint is not the holder’s (a parked holder’s waiter is told all of its wait, b75a430)', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    // A creates the intent (dA); its provider fails before any effect: parked now, abandoned (attempt 1).
    t.failNextRun();
    expect(await runtime.invoke(t.tool, t.caller, args('a9'), deadline())).toMatchObject({ ok: false });
    const [aKey] = await recordIdsOf(t.caller.tenant);
    // Past the window, A's resend (asked in its window: its own intent) fails the same way: attempt 2,
    // abandoned, the completer's next look 30 s after its park (backoffSeconds(1)).
    clock.advance(11 * 60_000);
    t.failNextRun();
    expect(await runtime.invoke(t.tool, t.caller, args('a9'), deadline())).toMatchObject({ ok: false });
    const a = callRecordOf(await itemOf(aKey!), DEFAULT_RECORD_ATTRIBUTES);
    expect(a).toMatchObject({ attempt: 2, status: 'INPROGRESS' });
    const holderWaitMs = askAgainAfterMs(a!, 'abandoned', Date.now());
    expect(holderWaitMs).toBeGreaterThan(20_000);

    // F, a new window's call: A, abandoned, holds the old window — F waits (pending) for A to settle, which
    // nothing makes happen before the completer's look (or A's own resend).
    const f = await runtime.invoke(t.tool, t.caller, args('f9'), deadline());
    expect(f).toMatchObject({ ok: false, status: 'pending' });
    expect((f as { retry_after_ms: number }).retry_after_ms).toBeGreaterThanOrEqual(holderWaitMs - 2_000);
  });
});
