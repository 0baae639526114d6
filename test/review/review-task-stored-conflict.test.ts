/**
 * Review (fresh eye): "the same key is the same task" — except when the call's stored outcome is a
 * business `conflict` or `invalid_args` (raised by the tool on a later attempt, stored as the call's
 * outcome). tools/call with `task` then answers -32602 "no task", while tasks/get of the very task an
 * earlier tools/call under the key created reads `failed`.
 */
import { ConflictError, UnavailableError } from '../../lib/idempotency/errors';
import { writeTool } from '../../lib/mcp/tools';
import { noteTool } from '../helpers/tools';
import { createWorld, identity, type World } from '../helpers/world';
import { mcpOf } from './review-mcp';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());

it('a stored business error on a later attempt is the failed task, asked again as a task', async () => {
  // prepare: attempt 1 fails transiently (parked: abandoned); attempt 2 raises a business conflict (stored)
  let attempts = 0;
  const { tool } = noteTool('fresh_note', async () => {
    attempts += 1;
    if (attempts === 1) throw new UnavailableError('the provider did not answer');
    throw new ConflictError('text: the note was already sent with another text');
  });
  const rpc = mcpOf(world, [writeTool(tool, world.runtime)]);
  const caller = identity();
  const call = { name: 'fresh_note', arguments: { idempotency_key: 'n1', text: 'hi' }, task: {} };

  // act
  const created = await rpc(caller, 'tools/call', call);
  const again = await rpc(caller, 'tools/call', call); // attempt 2: conflict, stored as the outcome
  const got = await rpc(caller, 'tasks/get', { taskId: created.result.task.taskId });
  const thirdTime = await rpc(caller, 'tools/call', call); // a replay of the stored conflict

  // assess: one call under one key, one task — failed, whichever request asks
  expect(created.result.task.status).toBe('working');
  expect(got.result.status).toBe('failed');
  expect([again.result?.task, thirdTime.result?.task]).toEqual([
    expect.objectContaining({ taskId: created.result.task.taskId, status: 'failed' }),
    expect.objectContaining({ taskId: created.result.task.taskId, status: 'failed' }),
  ]);
});
