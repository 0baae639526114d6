// Review 4 (h-review4): failing tests for the record attributes' names — not fixed.
import { Completer } from '../../lib/idempotency/completer';
import { recordAttributes } from '../../lib/idempotency/protocol/record';
import { ToolRuntime } from '../../lib/idempotency/runtime';
import { callAsTask } from '../../lib/idempotency/task';
import { createProtocolWorld, deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool } from '../helpers/tools';

let world: ProtocolWorld;
beforeAll(() => {
  world = createProtocolWorld();
});
afterAll(() => world.destroy());

describe('review 4: attribute names that collide are bad input (rule 5: refused naming the field, nothing changes)', () => {
  it('attributes.handedOff named as another attribute (status) is accepted', () => {
    expect(() => recordAttributes({ handedOff: 'status' })).toThrow(/attributes\.handedOff/);
  });

  it('…and a handed-off call under it is lost: the park overwrites its status, no poll finds it, the completer never runs it', async () => {
    const attributes = { handedOff: 'status' };
    const runtime = new ToolRuntime({
      client: world.client,
      tableName: world.idempotencyTable.tableName,
      attributes,
    });
    const { tool, execute } = noteTool(`r4_attr_${Date.now()}`, undefined, { longRunning: true });
    const caller = identity();
    const handed = await callAsTask(runtime, tool, caller, { idempotency_key: 'a1', text: 'hi' }, deadline(), {
      handOff: true,
    });
    const recordKey = handed.task?.callId.split('@')[0] ?? '';
    const completer = new Completer({
      client: world.client,
      runtime,
      tools: [tool],
      queue: { send: async () => undefined },
      tableName: world.idempotencyTable.tableName,
      attributes,
    });
    const claim = handed.task?.claimId ?? '';
    const outcome = await completer.onRecheck({ key: recordKey, claim }, deadline(60_000));
    const poll = await runtime.lookup(tool.name, caller, 'a1');

    expect({ answered: handed.result, outcome, runs: execute.mock.calls.length, poll }).toEqual({
      answered: expect.objectContaining({ status: 'pending' }),
      outcome: 'finished',
      runs: 1,
      poll: expect.objectContaining({ status: 'completed' }),
    });
  });
});
