/**
 * Review (fresh eye): a write that runs until its invocation's deadline — the long-running call that
 * tasks are for — is in flight (claimed; abandoned when its lock ends), yet its task-augmented tools/call
 * answers a JSON-RPC error instead of a `working` task: the task is read with one more GetItem *after*
 * the call's answer, when the invocation's store calls are already refused.
 */

import { writeTool } from '../../lib/mcp/tools';
import { withInvocationDeadline } from '../../lib/store/deadline';
import { noteTool } from '../helpers/tools';
import { createWorld, identity, type World } from '../helpers/world';
import { mcpOf } from './review-mcp';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());

it('a call that used its whole invocation is created as a working task', async () => {
  // prepare: a tool whose provider answers only after the invocation's store calls have stopped
  const { tool } = noteTool('slow_note', async (args) => {
    await new Promise((resolve) => setTimeout(resolve, 900));
    return { receipt: { note_id: 'n', text: args.text }, replayed: false };
  });
  const rpc = mcpOf(world, [writeTool(tool, world.runtime)]);
  const caller = identity();
  const end = Date.now() + 1_800;
  const deadline = { getRemainingTimeInMillis: () => end - Date.now() };

  // act: as the deployed handler runs it (withErrorBoundary → withInvocationDeadline)
  const created = await withInvocationDeadline(deadline, () =>
    rpc(
      caller,
      'tools/call',
      { name: 'slow_note', arguments: { idempotency_key: 's1', text: 'hi' }, task: {} },
      deadline,
    ),
  );
  const lookup = await world.runtime.lookup('slow_note', caller, 's1');

  // assess: the call is in flight under its key; the request should have its task
  expect(lookup?.status).toMatch(/pending|abandoned/);
  expect({ error: created.error, status: created.result?.task?.status }).toEqual({
    error: undefined,
    status: 'working',
  });
});
