// Review 3 (h-review3): the hand-off (261765d) against the completer's options and a tool's definition.
// Each test fails today; each names the invariant it holds.
import { randomUUID } from 'node:crypto';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { Completer, type Recheck } from '../../lib/idempotency/completer';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callAsTask } from '../../lib/idempotency/task';
import { createProtocolWorld, deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool } from '../helpers/tools';

let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  world = createProtocolWorld();
  runtime = world.idempotencyRuntime();
});
afterAll(() => world.destroy());

async function itemOf(recordKey: string) {
  const { Item } = await world.client.send(
    new GetItemCommand({
      TableName: world.idempotencyTable.tableName,
      Key: { id: { S: recordKey } },
      ConsistentRead: true,
    }),
  );
  return Item && unmarshall(Item);
}

describe('review3 H1: a handed-off call under a completer whose maxAttempts is 0 (invariant 5: never zero runs; invariant 6: bad input named)', () => {
  it('maxAttempts 0 is either refused naming the field, or the handed-off call still runs once — not given up unrun', async () => {
    const caller = identity();
    const { tool, execute } = noteTool('send_note', undefined, { longRunning: true });
    const sent: Recheck[] = [];
    let completer: Completer | undefined;
    let refused: unknown;
    try {
      completer = new Completer({
        client: world.client,
        runtime,
        tools: [tool],
        queue: { send: async (rechecks) => void sent.push(...rechecks) },
        tableName: world.idempotencyTable.tableName,
        attributes: DEFAULT_RECORD_ATTRIBUTES,
        maxAttempts: 0,
      });
    } catch (error) {
      refused = error;
    }
    if (refused !== undefined) {
      // Acceptable: the option is refused up front, naming the field.
      expect(String(refused)).toMatch(/maxAttempts/);
      return;
    }
    const key = `k-${randomUUID()}`;
    const handed = await callAsTask(runtime, tool, caller, { idempotency_key: key, text: 'hi' }, deadline(), {
      handOff: true,
    });
    // The caller was told: pending, ask again in 1 s — the server runs it.
    expect(handed.result).toMatchObject({ ok: false, status: 'pending', retry_after_ms: 1_000 });
    const recordKey = handed.task?.callId.split('@')[0] ?? '';
    const parked = await itemOf(recordKey);

    const outcome = await completer!.onRecheck({ key: recordKey, claim: String(parked?.claim_id) }, deadline(60_000));

    // Today: 'gave_up' — the call is stalled (`attempts`) with its one attempt the hand-off's unrun claim.
    expect({ outcome, runs: execute.mock.calls.length }).toEqual({ outcome: 'finished', runs: 1 });
  });
});

describe('review3 H3: the hand-off’s unrun claim counts as an attempt that “may have made the effect” (invariant 5: a handed-off call’s business error as documented — and no further)', () => {
  it('a dedupe-window tool whose first-ever run (the completer’s) meets not_found: a fresh key with the same arguments is not run — the window replays that failure, as it would not had the request run it', async () => {
    const { NotFoundError } = await import('../../lib/idempotency/errors');
    let customerExists = false;
    const behaviour = async (args: { text: string }) => {
      if (!customerExists) throw new NotFoundError('customer: no such customer');
      return { receipt: { note_id: `note_${randomUUID()}`, text: args.text }, replayed: false };
    };
    const name = `window_note_${Date.now()}`;
    const { tool, execute } = noteTool(name, behaviour, { longRunning: true, dedupeWindowSeconds: 600 });
    const sent: Recheck[] = [];
    const completer = new Completer({
      client: world.client,
      runtime,
      tools: [tool],
      queue: { send: async (rechecks) => void sent.push(...rechecks) },
      tableName: world.idempotencyTable.tableName,
      attributes: DEFAULT_RECORD_ATTRIBUTES,
    });
    const caller = identity();

    // Control: the same tool run in the request (REST) — a first attempt's not_found frees the key and the intent.
    const control = noteTool(`${name}_rest`, behaviour, { dedupeWindowSeconds: 600 });
    const inRequest = await runtime.invoke(control.tool, caller, { idempotency_key: 'r1', text: 'same' }, deadline());
    customerExists = true;
    const freshInRequest = await runtime.invoke(
      control.tool,
      caller,
      { idempotency_key: 'r2', text: 'same' },
      deadline(),
    );
    customerExists = false;
    expect(inRequest).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(freshInRequest).toMatchObject({ ok: true, idempotent: false });

    // Handed off: the completer's run is the tool's first, and meets not_found.
    const handed = await callAsTask(runtime, tool, caller, { idempotency_key: 'h1', text: 'same' }, deadline(), {
      handOff: true,
    });
    const recordKey = handed.task?.callId.split('@')[0] ?? '';
    const parked = await itemOf(recordKey);
    await completer.onRecheck({ key: recordKey, claim: String(parked?.claim_id) }, deadline(60_000));
    expect(execute).toHaveBeenCalledTimes(1);
    // The caller creates the customer, then asks again with a fresh key (the old one is burned, as documented).
    customerExists = true;
    const fresh = await runtime.invoke(tool, caller, { idempotency_key: 'h2', text: 'same' }, deadline());

    // Nothing ever happened under the window; the fresh key should run as it does in the control.
    expect({ fresh, runs: execute.mock.calls.length }).toMatchObject({
      fresh: { ok: true, idempotent: false },
      runs: 2,
    });
  });
});

