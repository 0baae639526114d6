// Rule 3 (docs/state-machine.md): an intent’s downstream key is fixed once.
// Rule 4 (docs/state-machine.md): every pending is pollable.
import { randomUUID } from 'node:crypto';
import { DeleteItemCommand, ScanCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { NotFoundError } from '../../lib/idempotency';
import type { ToolContext } from '../../lib/idempotency/tool';
import { advanceClock, movableClock } from '../helpers/clock';
import { createProtocolWorld, deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { gate, type NoteArgs, noteTool, runGates } from '../helpers/tools';

let world: ProtocolWorld;
beforeAll(() => {
  world = createProtocolWorld();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

const WINDOW_SECONDS = 600;

/** A client-key tool with a dedupe window, whose every real execution is a call of `execute`. */
function windowedNote(behaviour?: Parameters<typeof noteTool>[1]) {
  return noteTool('send_note', behaviour, { dedupeWindowSeconds: WINDOW_SECONDS });
}

describe('a dedupe window', () => {
  it('answers a fresh key with identical arguments inside the window with the first receipt, executing once', async () => {
    const caller = identity();
    const { tool, execute } = windowedNote();

    const first = await world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    const fresh = await world.runtime.invoke(tool, caller, { idempotency_key: 'k2', text: 'hi' }, deadline());
    const freshAgain = await world.runtime.invoke(tool, caller, { idempotency_key: 'k2', text: 'hi' }, deadline());

    expect(first).toMatchObject({ ok: true, idempotent: false, key: 'k1' });
    expect(fresh).toEqual({ ...first, idempotent: true, key: 'k2' });
    expect(freshAgain).toEqual(fresh);
    expect(execute).toHaveBeenCalledTimes(1);
  });

  it('treats other arguments, another user, another tenant, or another tool as other intents', async () => {
    const caller = identity();
    const { tool, execute } = windowedNote();
    const other = noteTool('send_other_note', undefined, { dedupeWindowSeconds: WINDOW_SECONDS });

    await world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    const otherArgs = await world.runtime.invoke(tool, caller, { idempotency_key: 'k2', text: 'bye' }, deadline());
    const otherUser = await world.runtime.invoke(
      tool,
      { tenant: caller.tenant, user: 'bob' },
      { idempotency_key: 'k3', text: 'hi' },
      deadline(),
    );
    const otherTenant = await world.runtime.invoke(tool, identity(), { idempotency_key: 'k4', text: 'hi' }, deadline());
    const otherTool = await world.runtime.invoke(other.tool, caller, { idempotency_key: 'k5', text: 'hi' }, deadline());

    for (const result of [otherArgs, otherUser, otherTenant, otherTool]) {
      expect(result).toMatchObject({ ok: true, idempotent: false });
    }
    expect(execute).toHaveBeenCalledTimes(4);
    expect(other.execute).toHaveBeenCalledTimes(1);
  });

  it('makes identical arguments a new intent once the window has passed', async () => {
    const caller = identity();
    const { tool, execute } = windowedNote();
    const first = await world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());

    advanceClock((WINDOW_SECONDS + 1) * 1000);
    const later = await world.runtime.invoke(tool, caller, { idempotency_key: 'k2', text: 'hi' }, deadline());

    expect(later).toMatchObject({ ok: true, idempotent: false, key: 'k2' });
    expect(later.ok && first.ok && later.receipt).not.toEqual(first.ok && first.receipt);
    expect(execute).toHaveBeenCalledTimes(2);
  });

  it('lets two fresh keys racing inside the window cause one effect: the other is pending (and pollable), then the replay', async () => {
    const caller = identity();
    const hold = gate();
    const started = gate();
    const { tool, execute } = windowedNote(async (args) => {
      started.open();
      await hold.opened;
      return { receipt: { note_id: `note_${randomUUID()}`, text: args.text }, replayed: false };
    });

    const running = world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    await started.opened;
    const racing = await world.runtime.invoke(tool, caller, { idempotency_key: 'k2', text: 'hi' }, deadline());
    const polled = await world.runtime.lookup(tool.name, caller, 'k2');
    hold.open();
    const first = await running;
    advanceClock(racing.ok === false && 'status' in racing ? racing.retry_after_ms : 0);
    const retried = await world.runtime.invoke(tool, caller, { idempotency_key: 'k2', text: 'hi' }, deadline());

    expect(racing).toEqual({ ok: false, status: 'pending', key: 'k2', retry_after_ms: expect.any(Number) });
    expect(polled).toEqual({ status: 'pending', retryAfterMs: expect.any(Number) });
    expect(retried).toEqual({ ...first, idempotent: true, key: 'k2' });
    expect(execute).toHaveBeenCalledTimes(1);
  });

  it('frees the intent when the first call fails with a business error, so a corrected call runs', async () => {
    const caller = identity();
    let fail = true;
    const { tool, execute } = windowedNote(async (args) => {
      if (fail) throw new NotFoundError('text: nobody to send it to yet');
      return { receipt: { note_id: 'note_1', text: args.text }, replayed: false };
    });

    const failed = await world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    fail = false;
    const retried = await world.runtime.invoke(tool, caller, { idempotency_key: 'k2', text: 'hi' }, deadline());

    expect(failed).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(retried).toMatchObject({ ok: true, idempotent: false, key: 'k2' });
    expect(execute).toHaveBeenCalledTimes(2);
  });

  it('finishes the work of a call that died under the same downstream key, so the effect is found, not repeated', async () => {
    const caller = identity();
    const keys: string[] = [];
    const never = gate();
    const started = gate();
    const { tool } = windowedNote(async (args, { downstreamKey }) => {
      keys.push(downstreamKey);
      if (keys.length === 1) {
        started.open();
        await never.opened; // the worker "dies": it never finishes
      }
      return { receipt: { note_id: `note_${downstreamKey.slice(-8)}`, text: args.text }, replayed: false };
    });
    void world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline(2_000));
    await started.opened;

    advanceClock(3_000); // past the dead call's lock
    const takeover = await world.runtime.invoke(tool, caller, { idempotency_key: 'k2', text: 'hi' }, deadline());

    expect(takeover).toMatchObject({ ok: true, key: 'k2' });
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
    never.open();
  });

  it("answers unavailable (retry with the key), never internal, when its claim is lost before it takes the holder's intent over", async () => {
    const caller = identity();
    const never = gate();
    const started = gate();
    let runs = 0;
    const { tool } = windowedNote(async (args) => {
      runs += 1;
      if (runs === 1) {
        started.open();
        await never.opened; // the intent's holder dies mid-effect
      }
      return { receipt: { note_id: 'n1', text: args.text }, replayed: false };
    });
    void world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline(1_000));
    await started.opened;
    advanceClock(2_000); // the holder's lock ended: k2 takes its intent over, the holder's key fixed on k2's record
    // Right before k2's takeover (one transaction), its record is claimed by someone else (a takeover).
    const stolen = world.client.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as {
          TransactItems?: Array<{
            Update?: { UpdateExpression?: string; Key?: { id?: { S?: string } }; TableName?: string };
          }>;
        };
        const fix = input.TransactItems?.find(({ Update }) =>
          Update?.UpdateExpression?.includes('#downstream'),
        )?.Update;
        if (fix?.Key?.id?.S) {
          await world.client.send(
            new UpdateItemCommand({
              TableName: fix.TableName,
              Key: { id: { S: fix.Key.id.S } },
              UpdateExpression: 'SET claim_id = :other',
              ExpressionAttributeValues: { ':other': { S: 'someone-else' } },
            }),
          );
        }
        return next(args);
      },
      { step: 'initialize', name: 'stealClaimBeforeFix' },
    );

    const answer = await world.runtime.invoke(tool, caller, { idempotency_key: 'k2', text: 'hi' }, deadline());
    world.client.middlewareStack.remove('stealClaimBeforeFix');
    void stolen;

    expect(answer).toMatchObject({ ok: false, error: { code: 'unavailable' } });
    expect(runs).toBe(1); // it never ran: the attempt that holds the record now does
    never.open();
  });

  it('keeps a taken-over call on the downstream key it took over, even when it is retried after the window', async () => {
    const caller = identity();
    const keys: string[] = [];
    const never = gate();
    const first = gate();
    const second = gate();
    const { tool } = windowedNote(async (args, { downstreamKey }) => {
      keys.push(downstreamKey);
      if (keys.length <= 2) {
        (keys.length === 1 ? first : second).open();
        await never.opened; // the first two workers die mid-effect
      }
      return { receipt: { note_id: `note_${downstreamKey.slice(-8)}`, text: args.text }, replayed: false };
    });
    void world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline(1_000));
    await first.opened;
    advanceClock(2_000); // k1's worker is dead: k2 takes its intent over, and dies too
    void world.runtime.invoke(tool, caller, { idempotency_key: 'k2', text: 'hi' }, deadline(1_000));
    await second.opened;
    jest.restoreAllMocks();
    advanceClock((WINDOW_SECONDS + 5) * 1000); // past the window: the intent is free again

    const retry = await world.runtime.invoke(tool, caller, { idempotency_key: 'k2', text: 'hi' }, deadline());

    expect(retry).toMatchObject({ ok: true, key: 'k2' });
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(1); // one downstream key: the effect is found, never made twice
    never.open();
  });

  it("never answers a fresh key with the receipt of other arguments reusing the first call's key", async () => {
    const caller = identity();
    let crash = true;
    const { tool } = windowedNote(async (args) => {
      if (crash) {
        crash = false;
        throw new Error('connection reset by the mail server'); // not a business error: intent kept
      }
      return { receipt: { text: args.text }, replayed: false };
    });
    await world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'A' }, deadline());
    await world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'B' }, deadline()); // k1 reused

    const fresh = await world.runtime.invoke(tool, caller, { idempotency_key: 'k2', text: 'A' }, deadline());

    expect(fresh).toMatchObject({ ok: true, key: 'k2', receipt: { text: 'A' } });
  });
});

describe('a call that took a dedupe-window intent over from a dead holder', () => {
  it('does not free the intent on a business error while the holder whose effect may have happened is still in flight', async () => {
    const clock = movableClock();
    const caller = identity();
    const never = gate();
    const runs = runGates(3);
    let recipientKnown = true;
    // Like refund (invoice first, then the effect under the downstream key): the domain check comes
    // first, then at most one effect per downstream key.
    const effects = new Set<string>();
    const { tool } = noteTool(
      'send_note',
      async (args: NoteArgs, { downstreamKey }: ToolContext) => {
        const run = runs.started();
        if (!recipientKnown) throw new NotFoundError('text: no such recipient');
        effects.add(downstreamKey);
        if (run === 1) await never.opened; // k1's worker dies after the effect, before the receipt
        return { receipt: { note: downstreamKey.slice(-8), text: args.text }, replayed: false };
      },
      { dedupeWindowSeconds: 600 },
    );
    const call = (key: string, ms = 5_000) =>
      world.runtime.invoke(tool, caller, { idempotency_key: key, text: 'hi' }, deadline(ms));

    const k1 = call('k1', 1_000);
    await runs.reached(1);
    clock.advance(2_000); // k1 is abandoned: its effect happened, its record is in flight
    recipientKnown = false; // the world changes for a moment
    const k2 = await call('k2'); // takes the intent over (runs under k1's key): a first attempt, not_found
    recipientKnown = true;
    const k3 = await call('k3'); // a fresh key, same arguments, inside k1's window

    never.open();
    await k1;
    expect(k2).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(k3).toMatchObject({ ok: true });
    expect(effects.size).toBe(1); // k1's note, found again — not a second one under a new key
  });
});

describe('a call answered pending inside a dedupe window, retried after the window', () => {
  it('gets the running call’s receipt even once DynamoDB’s TTL has removed the expired intent item', async () => {
    const clock = movableClock();
    const caller = identity();
    const hold = gate();
    const started = gate();
    let first = true;
    const { tool, execute } = noteTool(
      'send_note',
      async (args) => {
        if (first) {
          first = false;
          started.open();
          await hold.opened;
        }
        return { receipt: { note_id: `note_${execute.mock.calls.length}`, text: args.text }, replayed: false };
      },
      { dedupeWindowSeconds: WINDOW_SECONDS },
    );
    const call = (key: string) => world.runtime.invoke(tool, caller, { idempotency_key: key, text: 'hi' }, deadline());

    // k1 runs; k2 (fresh key, same arguments, same window) is answered pending: one intent.
    const running = call('k1');
    await started.opened;
    const k2 = await call('k2');
    expect(k2).toMatchObject({ ok: false, status: 'pending' });
    hold.open();
    const k1 = await running;
    expect(k1).toMatchObject({ ok: true, idempotent: false });

    // The agent retries k2 later, after the window (it was asked inside it). Meanwhile DynamoDB's TTL
    // process removed the intent item, whose `expiration` (the window's end) has passed.
    clock.advance((WINDOW_SECONDS + 60) * 1000);
    const { Items = [] } = await world.client.send(
      new ScanCommand({
        TableName: world.idempotencyTable.tableName,
        FilterExpression: 'tenant = :t AND attribute_exists(intent_owner)',
        ExpressionAttributeValues: { ':t': { S: caller.tenant } },
        ConsistentRead: true,
      }),
    );
    expect(Items).toHaveLength(1);
    if (Number(Items[0]!.expiration!.N) * 1000 < Date.now()) {
      // Its TTL has passed: DynamoDB may delete it at any moment. It does so now.
      await world.client.send(
        new DeleteItemCommand({ TableName: world.idempotencyTable.tableName, Key: { id: Items[0]!.id! } }),
      );
    }

    const retried = await call('k2');

    expect(execute).toHaveBeenCalledTimes(1); // k2 was a duplicate of k1: one note
    expect(retried).toEqual({ ...k1, idempotent: true, key: 'k2' });
  });
});
