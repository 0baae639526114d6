// Rule 3 (docs/state-machine.md): an intent names its runners; while one of them is in flight the intent is
// never deleted, started afresh under another key, nor replaced after its window.
// Rule 6 (docs/state-machine.md): erase keeps what a call in flight may still need.
/**
 * Review 13 (helper of h-review13), of the dedupe window's runners. Each R13 test fails on the commit it was
 * added to (f60f906's lib/): it states the defect, and turns green once it is fixed.
 */
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { eraseItem } from '../../lib/idempotency/protocol/erase';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callRecords } from '../helpers/call-records';
import { movableClock } from '../helpers/clock';
import {
  intentIdsOf as intentIdsInWorld,
  keyedMissingCustomerTool,
  recordIdsOf as recordIdsInWorld,
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
/** The next store (a call record's UpdateItem) fails as throttled: the attempt made its effect and stays in flight. */
const failNextStore = () => throttleNextRecordUpdate(world);
const noteOf = (answer: unknown) => (answer as { receipt?: { note_id?: string } }).receipt?.note_id;

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
});
