// Rule 3 (docs/state-machine.md): an intent's downstream key is fixed once.
// Rule 6 (docs/state-machine.md): erase keeps what a call in flight may still need.
/**
 * An intent's runners: every call that may run under its key (its creator, each call that took it over,
 * one that joined a completed holder whose outcome was a replay). The intent is never deleted, nor started
 * anew under another key, nor replaced after its window, while one of them may still run; a call runs
 * under its key only as one of them. Review 11 (helper-32) found each case; each test failed on 07e56bd.
 */
import { randomUUID } from 'node:crypto';
import { TransactionCanceledException, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { NotFoundError } from '../../lib/idempotency/errors';
import { closeStalled, eraseRecord } from '../../lib/idempotency/protocol/erase';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callRecords } from '../helpers/call-records';
import { movableClock } from '../helpers/clock';
import { beforeNext, throttled } from '../helpers/intercept';
import { isIntentWrite } from '../helpers/no-effect';
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

/** As intent-holding.test.ts's: one effect per downstream key (a provider), not_found until the customer exists. */
function keyedMissingCustomerTool() {
  let customerExists = false;
  let failNext = false;
  const effects = new Map<string, string>();
  const { tool, execute } = noteTool(
    `keyed_${randomUUID().slice(0, 8)}`,
    async (args, context) => {
      if (failNext) {
        failNext = false;
        throw new Error('provider: 503 before any effect'); // transient: the attempt counts as run
      }
      const found = effects.get(context.downstreamKey);
      if (found) return { receipt: { note_id: found, text: args.text }, replayed: true };
      if (!customerExists) throw new NotFoundError('customer: no such customer');
      const noteId = `note_${randomUUID()}`;
      effects.set(context.downstreamKey, noteId);
      return { receipt: { note_id: noteId, text: args.text }, replayed: false };
    },
    { dedupeWindowSeconds: 600 },
  );
  return {
    tool,
    execute,
    effects,
    caller: identity(),
    createCustomer: () => {
      customerExists = true;
    },
    failNextRun: () => {
      failNext = true;
    },
  };
}

const recordIdsOf = async (tenant: string) =>
  (await world.idempotencyRecordKeys(tenant)).map((r) => r.id).filter((id) => !id.includes('#intent#'));
const intentIdsOf = async (tenant: string) =>
  (await world.idempotencyRecordKeys(tenant)).map((r) => r.id).filter((id) => id.includes('#intent#'));

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

/** The next store (a non-intent UpdateItem) fails as throttled: the attempt made its effect and stays in flight. */
function failNextStore(): void {
  beforeNext(
    world.client,
    'UpdateItemCommand',
    async () => {
      throw throttled();
    },
    (input) => !isIntentWrite(input),
  );
}

/** The completer gives up on `recordKey`'s claim (stalled) and an erase with the domain tables closes it. */
async function giveUpAndClose(recordKey: string): Promise<void> {
  const item = await itemOf(recordKey);
  await world.client.send(
    new UpdateItemCommand({
      TableName: world.idempotencyTable.tableName,
      Key: { id: { S: recordKey } },
      UpdateExpression: 'SET stalled_claim = :c',
      ExpressionAttributeValues: { ':c': { S: String(item.claim_id) } },
    }),
  );
  expect(
    await closeStalled(
      world.idempotencyTable,
      recordKey,
      String(item.claim_id),
      Number(item.in_progress_expiration) + 1,
    ),
  ).toBe('erased');
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
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });

    failNextStore();
    expect(await runtime.invoke(t.tool, t.caller, args('a3'), deadline())).toMatchObject({ ok: false });
    expect(t.effects.size).toBe(1);
    const aNote = t.effects.values().next().value;
    clock.advance(15_000);

    // Z: takes the intent over from A (abandoned), runs under dA: A's effect, replayed; Z completes.
    expect(await runtime.invoke(t.tool, t.caller, args('z3'), deadline())).toEqual(
      expect.objectContaining({ ok: true, idempotent: true }),
    );

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

describe('R11-6 a call that runs beside a completed holder whose outcome was a replay joins the intent’s runners', () => {
  it('R11-6 G commits under dG and dies; H takes over (a replay) and completes; X, a fresh key, runs under dG as one of the runners, dG fixed on it in the same transaction (was: fixed with no trace on the intent)', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    t.createCustomer();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });
    failNextStore();
    expect(await runtime.invoke(t.tool, t.caller, args('g6'), deadline())).toMatchObject({ ok: false });
    const [gKey] = await recordIdsOf(t.caller.tenant);
    clock.advance(15_000);
    expect(await runtime.invoke(t.tool, t.caller, args('h6'), deadline())).toEqual(
      expect.objectContaining({ ok: true, idempotent: true }),
    );
    const hKey = (await recordIdsOf(t.caller.tenant)).find((id) => id !== gKey) ?? '';
    const [intentKey] = await intentIdsOf(t.caller.tenant);
    expect(await runtime.invoke(t.tool, t.caller, args('x6'), deadline())).toEqual(
      expect.objectContaining({ ok: true, idempotent: true }),
    );
    const xKey = (await recordIdsOf(t.caller.tenant)).find((id) => id !== gKey && id !== hKey) ?? '';
    const [x, intent, g] = await Promise.all([itemOf(xKey), itemOf(intentKey!), itemOf(gKey)]);
    // dG fixed on X in the same transaction that made X one of the intent's runners; the intent still names H.
    expect(x.downstream_key).toBe(intent.downstream_key);
    expect(intent.intent_owner).toBe(hKey);
    expect([...(intent.intent_runners as Set<string>)].sort()).toEqual(
      [
        `${gKey}@${String(g.call_id)}`,
        `${hKey}@${String((await itemOf(hKey)).call_id)}`,
        `${xKey}@${String(x.call_id)}`,
      ].sort(),
    );
  });
});
