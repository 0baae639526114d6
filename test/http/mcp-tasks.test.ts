/**
 * MCP tasks (2025-11-25) over the call record, through the official SDK client and raw JSON-RPC: a write
 * called as a task is the same call, its task a read of its record — one GetItem per `tasks/get`, no write.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { TASK_RESULT_HOLD_MS } from '../../lib/mcp/server';
import { startTestApi, type TestApi } from '../helpers/api';
import { heldSendEmail } from '../helpers/tools';
import { deadline, newTenant } from '../helpers/world';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

async function connect(token: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${api.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'retrysafe-tasks-test', version: '1.0.0' });
  await client.connect(transport);
  await client.listTools(); // what callToolStream reads to know a tool's taskSupport
  return client;
}

let rpcId = 0;
/** One raw JSON-RPC request to /mcp (stateless: no initialize needed), its `result` or `error`. */
async function rpc(token: string, method: string, params: Record<string, unknown> = {}) {
  const response = await fetch(`${api.url}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++rpcId, method, params }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC replies are asserted structurally
  return (await response.json()) as any;
}

/** What a client stream yields, by kind, until its end. */
async function drain<T extends { readonly type: string }>(stream: AsyncIterable<T>): Promise<T[]> {
  const seen: T[] = [];
  for await (const message of stream) seen.push(message);
  return seen;
}

const invoice = (key: string) => ({ idempotency_key: key, customer: 'cus_ada', amount: 4200 });

/** The DynamoDB commands the server's client sends while `work` runs. */
async function commandsDuring(work: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  const name = `count-${++rpcId}`;
  api.services.client.middlewareStack.add(
    (next, context) => async (args) => {
      sent.push(context.commandName ?? '?');
      return next(args);
    },
    { step: 'initialize', name },
  );
  try {
    await work();
  } finally {
    api.services.client.middlewareStack.remove(name);
  }
  return sent;
}

describe('MCP tasks, negotiated as the 2025-11-25 revision says', () => {
  it('declares task-augmented tools/call only (no tasks/list, no tasks/cancel), and taskSupport optional on writes', async () => {
    const token = await api.token(newTenant());
    const init = await rpc(token, 'initialize', {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'raw', version: '1' },
    });
    const listed = await rpc(token, 'tools/list');
    const list = await rpc(token, 'tasks/list');
    const cancel = await rpc(token, 'tasks/cancel', { taskId: 'x' });

    expect(init.result.capabilities.tasks).toEqual({ requests: { tools: { call: {} } } });
    const execution = Object.fromEntries(
      listed.result.tools.map((tool: { name: string; execution?: unknown }) => [tool.name, tool.execution]),
    );
    expect(execution).toMatchObject({
      create_invoice: { taskSupport: 'optional' },
      refund: { taskSupport: 'optional' },
      get_invoice: undefined,
      get_operation: undefined,
    });
    expect([list.error.code, cancel.error.code]).toEqual([-32601, -32601]);
  });

  it('answers a call that does not ask for a task exactly as before', async () => {
    const token = await api.token(newTenant());
    const plain = await rpc(token, 'tools/call', { name: 'create_invoice', arguments: invoice('plain') });

    expect(plain.result.structuredContent).toMatchObject({ ok: true, idempotent: false, key: 'plain' });
    expect(plain.result.task).toBeUndefined();
  });
});

describe('a write called as a task', () => {
  it('begins working (as a task must), reads completed once done; tasks/result is the call; the same key is the same task', async () => {
    const token = await api.token(newTenant());

    const created = await rpc(token, 'tools/call', { name: 'create_invoice', arguments: invoice('t1'), task: {} });
    const taskId = created.result.task.taskId as string;
    const got = await rpc(token, 'tasks/get', { taskId });
    const result = await rpc(token, 'tasks/result', { taskId });
    const again = await rpc(token, 'tools/call', { name: 'create_invoice', arguments: invoice('t1'), task: {} });

    // The call began with this request, and finished within it: the task begins working all the same.
    expect(created.result).toEqual({
      task: {
        taskId: expect.stringMatching(/^rs1\./),
        status: 'working',
        statusMessage: expect.stringContaining('"t1"'),
        createdAt: expect.any(String),
        lastUpdatedAt: expect.any(String),
        ttl: expect.any(Number),
        pollInterval: expect.any(Number),
      },
      _meta: { 'io.modelcontextprotocol/model-immediate-response': expect.stringMatching(/^Done, once/) },
    });
    expect(created.result.task.ttl).toBeGreaterThan(86_000_000); // the key's 24 h, from its first claim
    expect(got.result).toEqual({
      taskId,
      status: 'completed',
      createdAt: created.result.task.createdAt,
      lastUpdatedAt: expect.any(String),
      ttl: expect.any(Number),
    });
    expect(got.result._meta).toBeUndefined();
    // The call's own answer: idempotent false, it committed the invoice (as the call would have answered).
    expect(result.result.structuredContent).toMatchObject({ ok: true, idempotent: false, key: 't1' });
    expect(result.result.isError).toBe(false);
    expect(result.result._meta).toEqual({ 'io.modelcontextprotocol/related-task': { taskId } });
    // Asked again: the same task, as it is now (this request did not begin it).
    expect(again.result.task).toMatchObject({ taskId, status: 'completed' });
    expect(again.result._meta['io.modelcontextprotocol/model-immediate-response']).toMatch(/^Already done/);
  });

  it('runs once through the official SDK client (callToolStream): created, then its result', async () => {
    const token = await api.token(newTenant());
    const client = await connect(token);

    const seen = await drain(
      client.experimental.tasks.callToolStream(
        { name: 'create_invoice', arguments: invoice('sdk1') },
        CallToolResultSchema,
      ),
    );
    await client.close();

    // The SDK reads the task once more (tasks/get), then its result (tasks/result).
    expect(seen.map((message) => message.type)).toEqual(['taskCreated', 'taskStatus', 'result']);
    const last = seen.at(-1);
    expect(last?.type === 'result' && last.result.structuredContent).toMatchObject({
      ok: true,
      idempotent: false,
      key: 'sdk1',
    });
  });

  it('is working while another attempt holds the call, and completed once it finishes: tasks/result waits for it', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const { tool: held, started, release } = heldSendEmail();
    const args = { idempotency_key: 'e1', to: 'a@example.com', subject: 's', body: 'b' };
    const running = api.runtime.invoke(held, { tenant, user: 'ada' }, args, deadline(5_000));
    await started.opened;

    const created = await rpc(token, 'tools/call', { name: 'send_email', arguments: args, task: { ttl: 60_000 } });
    const taskId = created.result.task.taskId as string;
    const whileRunning = await rpc(token, 'tasks/get', { taskId });
    const operation = await rpc(token, 'tools/call', {
      name: 'get_operation',
      arguments: { tool: 'send_email', idempotency_key: 'e1' },
    });
    const waited = rpc(token, 'tasks/result', { taskId });
    setTimeout(() => release.open(), 300);
    const result = await waited;
    await running;
    const done = await rpc(token, 'tasks/get', { taskId });

    expect(created.result.task).toMatchObject({ status: 'working', pollInterval: expect.any(Number) });
    // The ttl asked for is not the one it has: said, not silently changed.
    expect(created.result.task.statusMessage).toMatch(
      /ttl: \d+ ms, the lifetime of its idempotency_key \(asked: 60000 ms\)/,
    );
    expect(whileRunning.result).toMatchObject({
      taskId,
      status: 'working',
      statusMessage: expect.stringContaining('e1'),
    });
    expect(operation.result.structuredContent).toMatchObject({ ok: true, status: 'pending' });
    expect(result.result.structuredContent).toMatchObject({ ok: true, idempotent: false, key: 'e1' });
    expect(result.result._meta).toEqual({ 'io.modelcontextprotocol/related-task': { taskId } });
    expect(done.result).toMatchObject({ taskId, status: 'completed' });
  });

  it('holds tasks/result on a working task at most TASK_RESULT_HOLD_MS, then says to poll tasks/get: a poll cannot pin an invocation', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const { tool: held, started, release } = heldSendEmail();
    const args = { idempotency_key: 'e-hold', to: 'a@example.com', subject: 's', body: 'b' };
    const running = api.runtime.invoke(held, { tenant, user: 'ada' }, args, deadline(8_000));
    await started.opened;
    const created = await rpc(token, 'tools/call', { name: 'send_email', arguments: args, task: {} });
    const taskId = created.result.task.taskId as string;

    const askedAt = performance.now();
    const answer = await rpc(token, 'tasks/result', { taskId });
    const heldMs = performance.now() - askedAt;
    release.open();
    await running;

    expect(answer.error).toMatchObject({
      message: expect.stringMatching(/still working .*poll tasks\/get/),
      data: { taskId, status: 'working', pollInterval: expect.any(Number) },
    });
    // Its read's time besides: well under the 9 s an invocation held before (the deadline less a margin).
    expect(heldMs).toBeLessThan(TASK_RESULT_HOLD_MS + 500);
  });

  it('costs one GetItem per tasks/get, and no write', async () => {
    const token = await api.token(newTenant());
    const created = await rpc(token, 'tools/call', { name: 'create_invoice', arguments: invoice('c1'), task: {} });

    const sent = await commandsDuring(() => rpc(token, 'tasks/get', { taskId: created.result.task.taskId }));

    expect(sent).toEqual(['GetItemCommand']);
  });
});

describe('tasks it will not give', () => {
  it("answers another caller's task id exactly as an unknown one: the spec's not found, nothing leaked", async () => {
    const owner = await api.token(newTenant());
    const created = await rpc(owner, 'tools/call', { name: 'create_invoice', arguments: invoice('mine'), task: {} });
    const taskId = created.result.task.taskId as string;
    const intruder = await api.token(newTenant());
    const sameTenantOtherUser = await api.token(newTenant(), 'bob');

    const answers = [
      await rpc(intruder, 'tasks/get', { taskId }),
      await rpc(intruder, 'tasks/result', { taskId }),
      await rpc(sameTenantOtherUser, 'tasks/get', { taskId }),
      await rpc(owner, 'tasks/get', { taskId: 'no-such-task' }),
      await rpc(owner, 'tasks/get', { taskId: `${taskId.slice(0, -4)}0000` }), // another instance of the key
    ];

    for (const answer of answers) {
      expect(answer.error).toEqual({ code: -32602, message: 'Failed to retrieve task: Task not found' });
    }
  });

  it('refuses a task for a read (-32601), and answers a refused call with the error it is, not a task', async () => {
    const token = await api.token(newTenant());
    await rpc(token, 'tools/call', { name: 'create_invoice', arguments: invoice('k'), task: {} });

    const read = await rpc(token, 'tools/call', { name: 'get_invoice', arguments: { invoice_id: 'x' }, task: {} });
    const conflict = await rpc(token, 'tools/call', {
      name: 'create_invoice',
      arguments: { ...invoice('k'), amount: 1 },
      task: {},
    });
    const invalid = await rpc(token, 'tools/call', {
      name: 'create_invoice',
      arguments: { idempotency_key: 'v', customer: 'c' },
      task: {},
    });

    expect(read.error).toEqual({ code: -32601, message: 'Tool get_invoice does not support task-augmented execution' });
    expect(conflict.error).toMatchObject({
      code: -32602,
      message: expect.stringMatching(/^conflict: idempotency_key: already used with different arguments\./),
      data: { ok: false, error: { code: 'conflict' }, next: { action: 'use_original_arguments' } },
    });
    expect(invalid.error).toMatchObject({ code: -32602, message: expect.stringMatching(/^invalid_args: amount/) });
  });
});
