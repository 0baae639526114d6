import { randomUUID } from 'node:crypto';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callAsTask } from '../../lib/idempotency/task';
import { createProtocolWorld, deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool } from '../helpers/tools';

/** A call made as an MCP task (task.ts `callAsTask`): the answer, and the task its record shows. */
let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  world = createProtocolWorld();
  runtime = world.idempotencyRuntime();
});
afterAll(() => world.destroy());

describe('callAsTask', () => {
  it('a call this request began is a working task; a replay shows the completed task, whose result is the call’s answer as a replay', async () => {
    const { tool } = noteTool('send_note');
    const caller = identity();
    const input = { idempotency_key: `k-${randomUUID()}`, text: 'hi' };

    const first = await callAsTask(runtime, tool, caller, input, deadline());
    const replay = await callAsTask(runtime, tool, caller, input, deadline());

    expect(first.result).toMatchObject({ ok: true, idempotent: false });
    expect(first.task).toMatchObject({ status: 'working', state: 'live' });
    expect(replay.task).toMatchObject({
      status: 'completed',
      callId: first.task?.callId,
      // The task is the call, read: its result is the call's answer as a replay — the answer that committed it
      // (`first.result`) is the one `idempotent: false` (rule 5, docs/state-machine.md).
      result: { ok: true, idempotent: true, key: input.idempotency_key },
    });
    expect(replay.result).toMatchObject({ ok: true, idempotent: true, key: input.idempotency_key });
  });

  it('a call refused before any claim (bad arguments) has no task', async () => {
    const { tool } = noteTool('send_note');

    const refused = await callAsTask(runtime, tool, identity(), { idempotency_key: 'k1', text: '' }, deadline());

    expect(refused.result).toMatchObject({ ok: false, error: { code: 'invalid_args' } });
    expect(refused.task).toBeUndefined();
  });
});
