// Rule 3 (docs/state-machine.md): an intent's downstream key is fixed once.
// Rule 6 (docs/state-machine.md): erase keeps what a call in flight may still need.
// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * An intent's runners: every call that may run under its key (its creator, each call that took it over;
 * review 13 dropped the join: a call that never ran under the key is answered a replay). The intent is never deleted, nor started
 * anew under another key, nor replaced after its window, while one of them may still run; a call runs
 * under its key only as one of them. Review 11 (helper-32) found each case; each test failed on 07e56bd.
 */
import { TransactionCanceledException, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { completerLooksAtMs, dueAfterParkMs, WAIT_LOOK_BEFORE_LAST_LOOK_MS } from '../../lib/idempotency/backoff';
import { closeStalled, eraseItem, eraseRecord } from '../../lib/idempotency/protocol/erase';
import { callRecordOf, DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callRecords } from '../helpers/call-records';
import { movableClock } from '../helpers/clock';
import { beforeNext } from '../helpers/intercept';
import {
  completerOn,
  intentIdsOf as intentIdsInWorld,
  isIntentWriteOf,
  keyedMissingCustomerTool,
  landThenFailNextIntentWrite,
  noteOf,
  recordIdsOf as recordIdsInWorld,
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

const recordIdsOf = (tenant: string) => recordIdsInWorld(world, tenant);
const intentIdsOf = (tenant: string) => intentIdsInWorld(world, tenant);

/** Erase, item by item, as a tenant's erase does to its idempotency items (eraseItem; no domain tables). */
async function eraseIdempotencyItems(tenant: string): Promise<string[]> {
  const outcomes: string[] = [];
  for (const { id } of await world.idempotencyRecordKeys(tenant)) {
    outcomes.push(
      `${id.includes('#intent#') ? 'intent' : 'record'}:${await eraseRecord(world.idempotencyTable, await itemOf(id))}`,
    );
  }
  return outcomes;
}

describe('R11-1 erase keeps an intent while one of its runners (an earlier taker, its key fixed) is in flight, whoever holds it', () => {
  it('R11-1 Y (dA fixed, ran) in flight, the intent held by Z (released): erase keeps both; Y commits under dA, and a fresh key in the window is answered Y’s effect (was: the intent deleted, a second effect)', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    // A: creates the intent (dA); its provider fails before any effect: parked now (counted as run), abandoned.
    t.failNextRun();
    expect(await runtime.invoke(t.tool, t.caller, args('a1'), deadline())).toMatchObject({ ok: false });
    clock.advance(1000);
    // Y: takes the intent over from A (one transaction: holds it, dA fixed on Y), fails the same way: abandoned,
    // its next attempt runs under dA without the intent (rule 3: an attempt of it ran under it).
    t.failNextRun();
    expect(await runtime.invoke(t.tool, t.caller, args('y1'), deadline())).toMatchObject({ ok: false });
    clock.advance(1000);
    // Z: takes the intent over from Y; not_found on its first attempt: its record released, the intent kept
    // naming Z (a taker's business error is kept on the intent: only its creator frees it).
    expect(await runtime.invoke(t.tool, t.caller, args('z1'), deadline())).toMatchObject({
      ok: false,
      error: { code: 'not_found' },
    });
    expect(await intentIdsOf(t.caller.tenant)).toHaveLength(1);
    expect(t.effects.size).toBe(0);

    // The tenant's idempotency items are erased: A and Y are in flight (kept); the intent's holder Z is gone,
    // so the intent is deleted — though Y, in flight, runs under its key.
    const erased = await eraseIdempotencyItems(t.caller.tenant);
    expect(erased.filter((o) => o.startsWith('record:')).sort()).toEqual(['record:in_flight', 'record:in_flight']);

    // The customer is created. Y's resend runs under dA (fixed, ran before): the effect, idempotent: false.
    t.createCustomer();
    expect(await runtime.invoke(t.tool, t.caller, args('y1'), deadline())).toEqual(
      expect.objectContaining({ ok: true, idempotent: false }),
    );
    expect(t.effects.size).toBe(1);

    // F: a fresh key, the same arguments, inside the window (A asked ~2 s ago): Y's effect must answer it.
    const f = await runtime.invoke(t.tool, t.caller, args('f1'), deadline());
    expect({ effects: t.effects.size, f }).toEqual({
      effects: 1,
      f: expect.not.objectContaining({ ok: true, idempotent: false }),
    });
  });
});

/** The next store (a call record's UpdateItem) fails as throttled: the attempt made its effect and stays in flight. */
const failNextStore = () => throttleNextRecordUpdate(world);

const sameText = (key: string) => ({ idempotency_key: key, text: 'same' });

/**
 * The set-up most of these findings start from: A (key `a`) creates the intent, commits its effect under dA
 * and dies before its store; once A's lock (10 s) has ended, Z (key `z`, fresh) takes the intent over from
 * abandoned A, runs under dA, finds A's effect and completes — a replay. A stays in flight. Answers A's
 * record key, its note (the one effect), and Z's record key and answer.
 */
async function commitDieThenReplay(
  t: ReturnType<typeof keyedMissingCustomerTool>,
  clock: ReturnType<typeof movableClock>,
  a: string,
  z: string,
) {
  failNextStore();
  expect(await runtime.invoke(t.tool, t.caller, sameText(a), deadline())).toMatchObject({ ok: false });
  expect(t.effects.size).toBe(1);
  const [aKey] = await recordIdsOf(t.caller.tenant);
  clock.advance(15_000);
  const zAnswer = await runtime.invoke(t.tool, t.caller, sameText(z), deadline());
  expect(zAnswer).toEqual(expect.objectContaining({ ok: true, idempotent: true }));
  const zKey = (await recordIdsOf(t.caller.tenant)).find((id) => id !== aKey);
  if (aKey === undefined || zKey === undefined) throw new Error('A and Z each have a record');
  return { aKey, aNote: t.effects.values().next().value, zKey, zAnswer };
}

/** The completer gives up on `recordKey`'s claim (stalled) and an erase with the domain tables closes it. */
async function giveUpAndClose(recordKey: string): Promise<void> {
  await giveUp(recordKey);
  const item = await itemOf(recordKey);
  const lockEnd = Number(item.in_progress_expiration);
  expect(await closeStalled(world.idempotencyTable, recordKey, String(item.claim_id), lockEnd + 1)).toBe('erased');
}

describe('R11-2 an erased holder’s intent is started afresh only when none of its runners is in flight', () => {
  it('R11-2 A commits under dA and dies before its store; Z takes over and is closed (stalled): a fresh key F takes the intent over under dA, one effect, and A’s resend is answered its own (was: F afresh under dF, two effects)', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    t.createCustomer();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    // A: creates the intent (dA), makes its effect under dA, dies at its store: in flight.
    failNextStore();
    expect(await runtime.invoke(t.tool, t.caller, args('a2'), deadline())).toMatchObject({ ok: false });
    expect(t.effects.size).toBe(1);
    const [aKey] = await recordIdsOf(t.caller.tenant);
    clock.advance(15_000); // A's lock (10 s) ended: abandoned

    // Z: takes the intent over from A (dA fixed on Z), its provider fails before anything: parked now.
    t.failNextRun();
    expect(await runtime.invoke(t.tool, t.caller, args('z2'), deadline())).toMatchObject({ ok: false });
    const zKey = (await recordIdsOf(t.caller.tenant)).find((id) => id !== aKey) ?? '';
    clock.advance(1000);
    // The completer gives up on Z; an erase with the domain tables closes it (A, abandoned, is not stalled: kept).
    await giveUpAndClose(zKey);
    expect(await itemOf(zKey)).toMatchObject({ status: 'ERASED' });
    expect(await itemOf(aKey)).toMatchObject({ status: 'INPROGRESS' });

    // F: a fresh key inside A's window. The intent names Z (erased): F holds afresh under its own key.
    const f = await runtime.invoke(t.tool, t.caller, args('f2'), deadline());
    // A's resend (A kept in flight by erase): the effect it made under dA is its own.
    const a = await runtime.invoke(t.tool, t.caller, args('a2'), deadline());
    expect({
      effects: t.effects.size,
      f,
      aNote: (a as { receipt?: { note_id?: string } }).receipt?.note_id,
    }).toEqual({
      effects: 1,
      f: expect.not.objectContaining({ ok: true, idempotent: false }),
      aNote: t.effects.values().next().value,
    });
  });
});

describe('R11-3 an intent is not replaced after its window while one of its runners (its creator, after a takeover) may ask it again', () => {
  it('R11-3 A commits under dA and dies before its store; Z takes over and completes (a replay of A’s effect); past the window F waits while A is in flight (was: F replaced it, and A’s resend was answered F’s receipt)', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    t.createCustomer();
    const args = sameText;
    const { aNote } = await commitDieThenReplay(t, clock, 'a3', 'z3');

    // Past the window (600 s). F: a new intent, its window ended before F was asked and its holder Z settled —
    // but its creator A, whose effect Z replayed, is in flight and may ask it again: F waits (pending).
    clock.advance(11 * 60_000);
    expect(await runtime.invoke(t.tool, t.caller, args('f3'), deadline())).toMatchObject({
      ok: false,
      status: 'pending',
    });

    // A's resend (asked in the first window, still in flight): its own effect, found under dA, not F's (this
    // tool tells a replay by its key alone; a tool that stamps its commit, createOnce, answers its committer
    // idempotent: false).
    const a = await runtime.invoke(t.tool, t.caller, args('a3'), deadline());
    expect(a).toEqual(expect.objectContaining({ ok: true, receipt: expect.objectContaining({ note_id: aNote }) }));
    expect(t.effects.size).toBe(1);

    // F's resend, once A settled: the new window's intent, a second effect (allowed: a new window).
    expect(await runtime.invoke(t.tool, t.caller, args('f3'), deadline())).toEqual(
      expect.objectContaining({ ok: true, idempotent: false }),
    );
    expect(t.effects.size).toBe(2);
  });
});

describe('R11-4 another call of the intent holder’s record (its client key claimed anew) takes the intent over, the key fixed on its record in the same transaction', () => {
  it('R11-4 X (a taker) released on not_found; X’s resend (a new instance) takes the intent over with dA fixed, commits; after its next holder is closed, X’s resend runs under dA again: one effect (was: under its own key dX, two)', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    // A: creates the intent (dA); its provider fails before any effect: abandoned.
    t.failNextRun();
    expect(await runtime.invoke(t.tool, t.caller, args('a4'), deadline())).toMatchObject({ ok: false });
    const [aKey] = await recordIdsOf(t.caller.tenant);
    clock.advance(1000);
    // X: takes the intent over from A (dA fixed on X); not_found on its first attempt: X's record released,
    // the intent kept naming X (a taker never frees it).
    expect(await runtime.invoke(t.tool, t.caller, args('x4'), deadline())).toMatchObject({
      ok: false,
      error: { code: 'not_found' },
    });
    t.createCustomer();
    // X's resend: a new instance under X's record key. The intent names X's record: the own-record swap; it
    // runs under the intent's key dA and commits; its store fails: in flight.
    failNextStore();
    expect(await runtime.invoke(t.tool, t.caller, args('x4'), deadline())).toMatchObject({ ok: false });
    expect(t.effects.size).toBe(1);
    const xKey = (await recordIdsOf(t.caller.tenant)).find((id) => id !== aKey) ?? '';
    const x = await itemOf(xKey);
    clock.advance(15_000); // X's lock ended

    // C: takes the intent over from X (abandoned); its provider fails before anything; given up and closed.
    t.failNextRun();
    expect(await runtime.invoke(t.tool, t.caller, args('c4'), deadline())).toMatchObject({ ok: false });
    const cKey = (await recordIdsOf(t.caller.tenant)).find((id) => id !== aKey && id !== xKey) ?? '';
    clock.advance(1000);
    await giveUpAndClose(cKey);

    // X's resend: the same call (instance) that committed under dA.
    const again = await runtime.invoke(t.tool, t.caller, args('x4'), deadline());
    expect({ xDownstreamKeyFixed: x.downstream_key !== undefined, effects: t.effects.size, again }).toEqual({
      xDownstreamKeyFixed: true,
      effects: 1,
      again: expect.not.objectContaining({ idempotent: false }),
    });
  });
});

describe('R11-5 a takeover transaction cancelled with a failed condition on one item and a conflict on the other is answered by its failed condition', () => {
  it('R11-5 the taker is not answered internal: the intent moved while a write on its record was in flight — the failed condition decides (was: rethrown, internal)', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });
    t.failNextRun();
    expect(await runtime.invoke(t.tool, t.caller, args('a5'), deadline())).toMatchObject({ ok: false });
    clock.advance(1000);

    // X's takeover: DynamoDB cancels it — the intent's holder changed (ConditionalCheckFailed) while a write on
    // X's own record was in flight (TransactionConflict). Reasons per item, in order, as DynamoDB answers.
    beforeNext(world.client, 'TransactWriteItemsCommand', async () => {
      throw new TransactionCanceledException({
        message:
          'Transaction cancelled, please refer cancellation reasons for specific reasons [ConditionalCheckFailed, TransactionConflict]',
        $metadata: { httpStatusCode: 400 },
        CancellationReasons: [{ Code: 'ConditionalCheckFailed' }, { Code: 'TransactionConflict' }],
      });
    });
    const x = await runtime.invoke(t.tool, t.caller, args('x5'), deadline());
    expect(x).toEqual(expect.not.objectContaining({ error: expect.objectContaining({ code: 'internal' }) }));
  });
});

describe('R11-6 a call that never ran under the intent’s key is answered a completed holder’s replay, and added to no runners', () => {
  it('R11-6 G commits under dG and dies; H takes over (a replay) and completes; X, a fresh key, is answered H’s receipt as a replay: it runs nothing, writes nothing to the intent, has no key fixed (was: joined the runners, one runner a call, and ran the tool)', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    t.createCustomer();
    const args = sameText;
    const { aKey: gKey, zKey: hKey, zAnswer: h } = await commitDieThenReplay(t, clock, 'g6', 'h6');
    const [intentKey] = await intentIdsOf(t.caller.tenant);
    const intentBefore = await itemOf(intentKey!);
    const runs = t.execute.mock.calls.length;

    const x = await runtime.invoke(t.tool, t.caller, args('x6'), deadline());

    const xKey = (await recordIdsOf(t.caller.tenant)).find((id) => id !== gKey && id !== hKey) ?? '';
    expect({
      x,
      runs: t.execute.mock.calls.length - runs,
      fixed: (await itemOf(xKey)).downstream_key,
      intent: await itemOf(intentKey!),
    }).toEqual({
      x: expect.objectContaining({ ok: true, idempotent: true, receipt: h.ok ? h.receipt : undefined }),
      runs: 0,
      fixed: undefined,
      intent: intentBefore,
    });
    expect([...(intentBefore.intent_runners as Set<string>)].sort()).toEqual(
      [`${gKey}@${String((await itemOf(gKey)).call_id)}`, `${hKey}@${String((await itemOf(hKey)).call_id)}`].sort(),
    );
  });
});

// Review 12 (helper-33), of the runners (63138ba): each R12 test failed on it.

/** The completer gives up on `recordKey`'s claim: stalled (not closed). */
async function giveUp(recordKey: string): Promise<void> {
  const item = await itemOf(recordKey);
  await world.client.send(
    new UpdateItemCommand({
      TableName: world.idempotencyTable.tableName,
      Key: { id: { S: recordKey } },
      UpdateExpression: 'SET stalled_claim = :c',
      ExpressionAttributeValues: { ':c': { S: String(item.claim_id) } },
    }),
  );
}

describe('checked sound: a window is not replaced while a stalled runner (a resend can still take it over) may ask it again', () => {
  it('sound: A commits under dA and dies before its store; Z takes over (a replay) and completes; A is given up on (stalled); past the window F waits, and A’s resend is answered its own receipt (replaceEnded blocks on stalled runners: isAbandoned — its comment and the doc table say only live or abandoned do)', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    t.createCustomer();
    const args = sameText;
    const { aKey, aNote } = await commitDieThenReplay(t, clock, 'a1', 'z1');
    // The completer gives up on A: stalled — a resend with A's key still takes it over (call-state.ts).
    await giveUp(aKey);

    // Past the window: F, a new window's call. Its intent's holder Z settled; its creator A is stalled, so
    // replaceEnded holds the window back for it too.
    clock.advance(11 * 60_000);
    const f = await runtime.invoke(t.tool, t.caller, args('f1'), deadline());
    // Nothing scheduled moves A before its TTL (only its resend): F is parked until then, and says so — not
    // "ask again in a second" for a change no schedule makes.
    // A second past it: the first instant every reader counts it expired (review 36, F4).
    const aExpiresMs = Number((await itemOf(aKey)).expiration) * 1000 + 1_000;
    expect(f).toMatchObject({ status: 'pending' });
    const waitMs = (f as { retry_after_ms: number }).retry_after_ms;
    expect(Math.abs(Date.now() + waitMs - aExpiresMs)).toBeLessThan(1_000);
    const fKey = (await recordIdsOf(t.caller.tenant)).find((id) => !(id === aKey || id.endsWith('z1')));
    expect(fKey).toBeDefined();

    // A's resend (asked in the first window): its own effect under dA is E1 — it must not be answered F's.
    const a = await runtime.invoke(t.tool, t.caller, args('a1'), deadline());
    expect({ aNote: noteOf(a) }).toEqual({ aNote });
  });
});

describe('liveness: a new window’s call parked behind an old window’s stalled call', () => {
  it('is parked no later than its wait look, a minute before its own last look before its TTL, however far the stalled call’s TTL — a look then runs it once a resend settled that call (review 26, F2), and the completer can still give it up, `expiring`, before it expires unreported', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    t.createCustomer();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });
    failNextStore();
    expect(await runtime.invoke(t.tool, t.caller, args('a2'), deadline())).toMatchObject({ ok: false });
    const [aKey] = await recordIdsOf(t.caller.tenant);
    await giveUp(aKey!);
    // A's TTL far past any new call's (as a takeover near its end, or a long TTL of an earlier deploy, sets it).
    await world.client.send(
      new UpdateItemCommand({
        TableName: world.idempotencyTable.tableName,
        Key: { id: { S: aKey! } },
        UpdateExpression: 'SET expiration = :far',
        ExpressionAttributeValues: { ':far': { N: String(Math.floor(Date.now() / 1000) + 3 * 86_400) } },
      }),
    );

    clock.advance(11 * 60_000);
    const f = await runtime.invoke(t.tool, t.caller, args('f2'), deadline());

    const fKey = (await recordIdsOf(t.caller.tenant)).find((id) => id !== aKey) ?? '';
    const fItem = await itemOf(fKey);
    const waitLookMs = Number(fItem.expiration) * 1000 - 10_000 - 60_000 - WAIT_LOOK_BEFORE_LAST_LOOK_MS;
    expect(f).toMatchObject({ status: 'pending' });
    // Due at its wait look: parked until the stream's window before it (review 29, F2: its due, not its lock).
    const lookAtMs = completerLooksAtMs(callRecordOf(fItem, DEFAULT_RECORD_ATTRIBUTES)!);
    expect(Math.abs(lookAtMs - waitLookMs)).toBeLessThan(1_000);
    expect(lookAtMs - Number(fItem.in_progress_expiration)).toBe(dueAfterParkMs(1));
    // Its caller may resend it once its lock ends: its answer says so.
    const retryAtMs = Date.now() + (f as { retry_after_ms: number }).retry_after_ms;
    expect(Math.abs(retryAtMs - Number(fItem.in_progress_expiration))).toBeLessThan(1_000);

    // A's resend settles it (its own effect, under dA) long before F's wait look (review 26, F2: F was parked
    // until its last look, and given up there though A had settled).
    expect(await runtime.invoke(t.tool, t.caller, args('a2'), deadline())).toMatchObject({ ok: true });
    // F's wait look: the completer re-runs it, and it runs — its window's intent is free of A now.
    clock.advance(lookAtMs + 1_000 - Date.now());
    const outcome = await completerOn(world, runtime, [t.tool]).onRecheck(
      { key: fKey, claim: String(fItem.claim_id) },
      deadline(60_000),
    );
    expect({ outcome, f: (await itemOf(fKey)).status }).toEqual({ outcome: 'finished', f: 'COMPLETED' });
  });
});

describe('R12-2 an intent a call holds again under its own key, after a taker ran under it, is not freed by that call', () => {
  it('R12-2 C creates (dC), not_found, its free throttled; T takes over (dC fixed) and fails before any effect; C takes it back (answer lost); C’s next attempt meets not_found and does not free the intent (T among its runners): one effect (was: freed, two)', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    // C, attempt 1: creates the intent under dC; not_found; freeing the intent is throttled: C parked unrun,
    // the intent still held by C (attempt.ts: "Not freed: the call stays in flight, as having made no effect").
    throttleNextIntentWrite(world, 'release');
    expect(await runtime.invoke(t.tool, t.caller, args('c2'), deadline())).toMatchObject({ ok: false });
    expect(await intentIdsOf(t.caller.tenant)).toHaveLength(1);
    const [cKey] = await recordIdsOf(t.caller.tenant);
    clock.advance(1000);

    // T: takes the intent over from C (abandoned): dC fixed on T, T among the runners. Its provider fails
    // before any effect: parked now, counted as run — T's next attempt runs under dC without the intent.
    t.failNextRun();
    expect(await runtime.invoke(t.tool, t.caller, args('t2'), deadline())).toMatchObject({ ok: false });
    const tKey = (await recordIdsOf(t.caller.tenant)).find((id) => id !== cKey) ?? '';
    expect((await itemOf(tKey)).downstream_key).toBeDefined();
    clock.advance(1000);

    // C, attempt 2: takes the intent back from T (abandoned) — the transaction lands (C holds it, dC fixed on
    // C), its answer is lost: C parked unrun (a store error before its tool ran).
    landThenFailNextIntentWrite(world, 'TransactWriteItemsCommand');
    expect(await runtime.invoke(t.tool, t.caller, args('c2'), deadline())).toMatchObject({ ok: false });
    clock.advance(1000);

    // C, attempt 3: no attempt of it ran; the intent names C's call, under dC = its own key: the swap answers
    // "created" though T, a runner in flight, ran under dC. not_found again: the intent is freed.
    await runtime.invoke(t.tool, t.caller, args('c2'), deadline());
    const intentsAfterC = (await intentIdsOf(t.caller.tenant)).length;

    // The customer exists. T's resend runs under dC (fixed, ran before): E1. F, a fresh key in the window.
    t.createCustomer();
    await runtime.invoke(t.tool, t.caller, args('t2'), deadline());
    const f = await runtime.invoke(t.tool, t.caller, args('f2'), deadline());
    expect({ intentsAfterC, effects: t.effects.size, f }).toEqual({
      intentsAfterC: 1,
      effects: 1,
      f: expect.not.objectContaining({ ok: true, idempotent: false }),
    });
  });
});

describe('R12-3 erase with the app’s tables (closeStalled) closes an intent’s stalled runner as it closes its stalled holder', () => {
  it('R12-3 A commits under dA and dies; Z takes over (a replay) and completes; A is given up on (stalled): the intent’s erasure closes A and erases the intent (was: kept, reported stalled with no time to erase again)', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    t.createCustomer();
    const { aKey } = await commitDieThenReplay(t, clock, 'a3', 'z3');
    await giveUp(aKey);
    const [intentKey] = await intentIdsOf(t.caller.tenant);

    // The scan finds the intent before A's record (a Scan's order is the hash's): the intent's erasure closes
    // A (stalled, a runner), as it closes a stalled holder, and erases the intent; A's record is then done.
    const intentErasure = await eraseItem(world.idempotencyTable, await itemOf(intentKey!), { closeStalled: true });
    expect(intentErasure).toEqual({ outcome: 'erased' });
    expect(await itemOf(aKey)).toMatchObject({ status: 'ERASED' });
    expect(await eraseItem(world.idempotencyTable, await itemOf(aKey), { closeStalled: true })).toEqual({
      outcome: 'nothing',
    });
  });
});

describe('R12-4 erase takes an intent on its holder as read: a call after it is answered by what is left', () => {
  it('R12-4 G commits under dG and dies; H takes over (a replay) and completes; G settles. Between erase’s read and its write, J (a fresh key) is answered H’s replay and runs nothing; the intent is erased (to a marker of no tenant whose window ends at the erase), and a fresh key after the erase makes the effect once (was: J joined the runners and ran under dG)', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    t.createCustomer();
    const args = sameText;
    await commitDieThenReplay(t, clock, 'g4', 'h4');
    // G's resend: one of the runners, beside H (completed, a replay): runs under dG, finds its effect, completes.
    expect(await runtime.invoke(t.tool, t.caller, args('g4'), deadline())).toMatchObject({ ok: true });
    const [intentKey] = await intentIdsOf(t.caller.tenant);

    // Erase reads the intent: H completed, no runner in flight. Before its write, J (a fresh key, inside the
    // window) is answered H's outcome, a replay: nothing run, nothing written to the intent.
    let runsOfJ = -1;
    beforeNext(
      world.client,
      'UpdateItemCommand',
      async () => {
        const runs = t.execute.mock.calls.length;
        expect(await runtime.invoke(t.tool, t.caller, args('j4'), deadline())).toEqual(
          expect.objectContaining({ ok: true, idempotent: true }),
        );
        runsOfJ = t.execute.mock.calls.length - runs;
      },
      (input) => isIntentWriteOf('erase', 'UpdateItemCommand', input),
    );
    const erased = await eraseItem(world.idempotencyTable, await itemOf(intentKey!));
    // The tenant's domain items go with it (every call settled).
    t.effects.clear();

    clock.advance(15_000);
    // J's resend: its stored replay. F, a fresh key asked after the erase (inside the intent's window): the
    // erase ended the window, and the effect is gone with the tenant's items — F makes it once.
    expect(await runtime.invoke(t.tool, t.caller, args('j4'), deadline())).toEqual(
      expect.objectContaining({ ok: true, idempotent: true }),
    );
    const f = await runtime.invoke(t.tool, t.caller, args('f4'), deadline());
    expect({ runsOfJ, intentDeleted: erased.outcome === 'erased', effects: t.effects.size, f }).toEqual({
      runsOfJ: 0,
      intentDeleted: true,
      effects: 1,
      f: expect.objectContaining({ ok: true, idempotent: false }),
    });
  });
});
