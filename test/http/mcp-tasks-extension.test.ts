// Rule 5 (docs/state-machine.md): exactly one answer per effect says idempotent: false — a task's answer is a replay.
/**
 * The MCP tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663; protocol revision 2026-07-28) over the
 * call record, raw JSON-RPC as its spec text writes the messages: a write still in flight when its request
 * must answer comes back as the task it is, `tasks/get` reads it (one GetItem, no write) until it is
 * completed with the call's answer; `tasks/update` and `tasks/cancel` as the spec defines them; every
 * refusal the spec names. (2025-11-25's experimental tasks: mcp-tasks.test.ts.)
 */
import { TASKS_EXTENSION } from '../../lib/mcp/tasks';
import { startTestApi, type TestApi } from '../helpers/api';
import { email, heldCall as heldCallOn } from '../helpers/held-send-email';
import { commandsDuring as commandsSentDuring, modernRequest } from '../helpers/raw-mcp';
import { newTenant } from '../helpers/world';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

/** One 2026-07-28 request (see `modernRequest`); `tasks`: whether the client declares the extension. */
function rpc(
  token: string,
  method: string,
  params: Record<string, unknown>,
  options: { tasks?: boolean; name?: string } = {},
) {
  return modernRequest(api.url, token, method, params, { client: 'raw-tasks', ...options });
}

/** The DynamoDB commands the server's client sends while `work` runs. */
function commandsDuring(work: () => Promise<unknown>): Promise<string[]> {
  return commandsSentDuring(api.services.client, work);
}

/** A send_email held in flight under `key` for `tenant`'s ada (`heldCall`). */
const heldCall = (tenant: string, key: string) => heldCallOn(api.runtime, tenant, key);

describe('the tasks extension, declared as it says', () => {
  it('is in server/discover capabilities.extensions', async () => {
    const token = await api.token(newTenant());

    const discovered = await rpc(token, 'server/discover', {});

    expect(discovered.result.capabilities.extensions).toEqual({ [TASKS_EXTENSION]: {} });
    expect(discovered.result.capabilities.tasks).toBeUndefined();
  });
});

describe('a write in flight becomes a task, read until it is completed', () => {
  it('answers the call still in flight with a working task, tasks/get reads it working, then completed with the call’s answer', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const held = await heldCall(tenant, 'e1');

    const created = await rpc(token, 'tools/call', { name: 'send_email', arguments: email('e1') });
    const taskId = created.result.taskId as string;
    let working: unknown;
    const whileRunning = await commandsDuring(async () => {
      working = (await rpc(token, 'tasks/get', { taskId })).result;
    });
    const finished = await held.finish();
    let completed: unknown;
    const onceDone = await commandsDuring(async () => {
      completed = (await rpc(token, 'tasks/get', { taskId })).result;
    });

    expect(created.result).toEqual({
      resultType: 'task',
      taskId: expect.stringMatching(/^rs1\./),
      status: 'working',
      statusMessage: expect.stringContaining('"e1"'),
      createdAt: expect.any(String),
      lastUpdatedAt: expect.any(String),
      ttlMs: expect.any(Number),
      pollIntervalMs: expect.any(Number),
      _meta: expect.anything(),
    });
    // The poll interval is the truthful one: at most 1 s while its holder may store it at any moment.
    expect(created.result.pollIntervalMs).toBeGreaterThan(0);
    expect(created.result.pollIntervalMs).toBeLessThanOrEqual(1_000);
    expect(working).toMatchObject({
      resultType: 'complete',
      taskId,
      status: 'working',
      pollIntervalMs: expect.any(Number),
    });
    expect(completed).toMatchObject({
      resultType: 'complete',
      taskId,
      status: 'completed',
      result: {
        isError: false,
        // Rule 5: another request began (and committed) the call; its task is a replay, as that request's retry.
        structuredContent: { ok: true, idempotent: true, key: 'e1', receipt: finished.ok ? finished.receipt : {} },
      },
    });
    // tasks/get is one consistent GetItem and no write, working or completed.
    expect(whileRunning).toEqual(['GetItemCommand']);
    expect(onceDone).toEqual(['GetItemCommand']);
  });

  it('answers the same call to a client that did not declare the extension with today’s pending answer, not a task', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const held = await heldCall(tenant, 'e2');

    const answered = await rpc(token, 'tools/call', { name: 'send_email', arguments: email('e2') }, { tasks: false });
    await held.finish();

    expect(answered.result.resultType).toBe('complete');
    expect(answered.result.taskId).toBeUndefined();
    expect(answered.result.structuredContent).toMatchObject({ ok: false, status: 'pending', key: 'e2' });
  });

  it('answers a write that completes within its request with its CallToolResult, and its retry with the replay', async () => {
    const token = await api.token(newTenant());
    const args = { idempotency_key: 'inv-1', customer: 'cus_ada', amount: 4_200 };

    const first = await rpc(token, 'tools/call', { name: 'create_invoice', arguments: args });
    const again = await rpc(token, 'tools/call', { name: 'create_invoice', arguments: args });

    expect(first.result).toMatchObject({ resultType: 'complete', structuredContent: { ok: true, idempotent: false } });
    expect(again.result).toMatchObject({ resultType: 'complete', structuredContent: { ok: true, idempotent: true } });
    expect(again.result.structuredContent.receipt).toEqual(first.result.structuredContent.receipt);
  });
});

describe('rule 5 (docs/state-machine.md): exactly one answer per effect says idempotent: false', () => {
  // The ext-tasks text: "The tasks/get endpoint returns exactly what the underlying request would have
  // returned". The tools/call that became this task attached to a call another request began (not
  // `fresh`): had it waited, it would have answered the replay, `idempotent: true`. Its task said false,
  // so two requests were each told that they made the one effect.
  it('answers the task of a call another request began with idempotent: true, as that request would have', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const held = await heldCall(tenant, 'rule5');
    const taskId = (await rpc(token, 'tools/call', { name: 'send_email', arguments: email('rule5') })).result.taskId;

    const own = await held.finish();
    const task = (await rpc(token, 'tasks/get', { taskId })).result;
    const retried = (await rpc(token, 'tools/call', { name: 'send_email', arguments: email('rule5') })).result;

    expect(own).toMatchObject({ ok: true, idempotent: false });
    expect(retried.structuredContent).toMatchObject({ ok: true, idempotent: true });
    expect(task.result.structuredContent).toMatchObject({ ok: true, idempotent: true });
  });
});

describe('tasks/update and tasks/cancel', () => {
  it('acknowledges tasks/update of a known task with an empty result (it never asks for input), and refuses one without inputResponses naming it', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const held = await heldCall(tenant, 'e3');
    const taskId = (await rpc(token, 'tools/call', { name: 'send_email', arguments: email('e3') })).result.taskId;

    const updated = await rpc(token, 'tasks/update', { taskId, inputResponses: { name: { action: 'accept' } } });
    const malformed = await rpc(token, 'tasks/update', { taskId });
    const after = await rpc(token, 'tasks/get', { taskId });
    await held.finish();

    expect(updated.result).toEqual({ resultType: 'complete', _meta: expect.anything() });
    expect(malformed.error).toMatchObject({ code: -32602, message: expect.stringContaining('inputResponses') });
    expect(after.result.status).toBe('working');
  });

  // ext-tasks, "Task Cancellation": "A server is not obligated to actually stop the work; it is only
  // obligated to acknowledge the request." -32602 is the extension's "Invalid or nonexistent taskId": a
  // client told so of a task that is running drops it (the spec lets it delete its state at once).
  it('acknowledges tasks/cancel of a working task and of a completed one with an empty result, and changes nothing: the task still completes', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const held = await heldCall(tenant, 'e4');
    const taskId = (await rpc(token, 'tools/call', { name: 'send_email', arguments: email('e4') })).result.taskId;

    const whileWorking = await rpc(token, 'tasks/cancel', { taskId });
    const during = await rpc(token, 'tasks/get', { taskId });
    const finished = await held.finish();
    const onceCompleted = await rpc(token, 'tasks/cancel', { taskId });
    const after = await rpc(token, 'tasks/get', { taskId });

    expect(whileWorking.error).toBeUndefined();
    expect(whileWorking.result).toEqual({ resultType: 'complete', _meta: expect.anything() });
    expect(during.result.status).toBe('working');
    expect(onceCompleted.error).toBeUndefined();
    expect(onceCompleted.result).toEqual({ resultType: 'complete', _meta: expect.anything() });
    expect(finished.ok).toBe(true);
    expect(after.result).toMatchObject({ status: 'completed', result: { isError: false } });
  });
});

describe('refusals', () => {
  it('answers tasks/get from a client that did not declare the extension with -32021 naming it, and reads nothing', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const held = await heldCall(tenant, 'e5');
    const taskId = (await rpc(token, 'tools/call', { name: 'send_email', arguments: email('e5') })).result.taskId;

    let refused: { error: unknown } | undefined;
    const sent = await commandsDuring(async () => {
      refused = await rpc(token, 'tasks/get', { taskId }, { tasks: false });
    });
    const cancel = await rpc(token, 'tasks/cancel', { taskId }, { tasks: false });
    const update = await rpc(token, 'tasks/update', { taskId, inputResponses: {} }, { tasks: false });
    await held.finish();

    const missing = {
      code: -32021,
      message: expect.stringContaining(TASKS_EXTENSION),
      data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    };
    expect(refused?.error).toEqual(missing);
    expect(cancel.error).toEqual(missing);
    expect(update.error).toEqual(missing);
    expect(sent).toEqual([]);
  });

  it('answers an unknown, a malformed, and another tenant’s or user’s task id alike: -32602 Task not found', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const held = await heldCall(tenant, 'e6');
    const taskId = (await rpc(token, 'tools/call', { name: 'send_email', arguments: email('e6') })).result.taskId;
    const [, named, instance] = taskId.split('.');

    const answers = [
      await rpc(await api.token(newTenant()), 'tasks/get', { taskId }), // another tenant
      await rpc(await api.token(tenant, 'bob'), 'tasks/get', { taskId }), // another user of the tenant
      await rpc(token, 'tasks/get', { taskId: `rs1.${named}.${instance}x` }), // another call under the key
      await rpc(token, 'tasks/get', { taskId: 'rs1.bm90IGpzb24.abc' }), // forged: not [tool, key]
      await rpc(token, 'tasks/get', { taskId: 'not-a-task' }),
      await rpc(await api.token(newTenant()), 'tasks/cancel', { taskId }),
      await rpc(await api.token(newTenant()), 'tasks/update', { taskId, inputResponses: {} }),
    ];
    await held.finish();

    for (const answer of answers) {
      expect(answer.error).toEqual({ code: -32602, message: 'Failed to retrieve task: Task not found' });
    }
  });

  it('refuses a tasks/get whose Mcp-Name is not its task id with -32020, and reads nothing', async () => {
    const token = await api.token(newTenant());

    let answer: { error: { code: number } } | undefined;
    const sent = await commandsDuring(async () => {
      answer = await rpc(token, 'tasks/get', { taskId: 'rs1.a.b' }, { name: 'rs1.other.b' });
    });

    expect(answer?.error.code).toBe(-32020);
    expect(sent).toEqual([]);
  });

  it('refuses a tasks/get without a task id, naming the field', async () => {
    const token = await api.token(newTenant());

    const answer = await rpc(token, 'tasks/get', {});

    expect(answer.error).toMatchObject({ code: -32602, message: expect.stringContaining('taskId') });
  });
});
