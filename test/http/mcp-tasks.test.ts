// Rule 5 (docs/state-machine.md): exactly one answer per effect says idempotent: false — a task's answer is a replay.
/**
 * MCP tasks (2025-11-25) over the call record, through the official SDK client and raw JSON-RPC: a write
 * called as a task is the same call, its task a read of its record — one GetItem per `tasks/get`, no write.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { ConflictError, UnavailableError } from '../../lib/idempotency/errors';
import { TASK_RESULT_HOLD_MS } from '../../lib/mcp/server';
import { writeTool } from '../../lib/mcp/tools';
import { withInvocationDeadline } from '../../lib/store/deadline';
import { startTestApi, type TestApi } from '../helpers/api';
import { heldSendEmail } from '../helpers/held-send-email';
import { mcpOf } from '../helpers/mcp-in-process';
import { commandsDuring as commandsSentDuring, postMcp } from '../helpers/raw-mcp';
import { noteTool } from '../helpers/tools';
import { createWorld, deadline, identity, newTenant, type World } from '../helpers/world';

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
  return (await postMcp(api.url, token, { jsonrpc: '2.0', id: ++rpcId, method, params })).body;
}

/** What a client stream yields, by kind, until its end. */
async function drain<T extends { readonly type: string }>(stream: AsyncIterable<T>): Promise<T[]> {
  const seen: T[] = [];
  for await (const message of stream) seen.push(message);
  return seen;
}

const invoice = (key: string) => ({ idempotency_key: key, customer: 'cus_ada', amount: 4200 });

/** The DynamoDB commands the server's client sends while `work` runs. */
function commandsDuring(work: () => Promise<unknown>): Promise<string[]> {
  return commandsSentDuring(api.services.client, work);
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
  it('begins working (as a task must), reads completed once done; tasks/result is the call; the same key is the same call’s task, a replay when asked again', async () => {
    const token = await api.token(newTenant());

    const created = await rpc(token, 'tools/call', { name: 'create_invoice', arguments: invoice('t1'), task: {} });
    const taskId = created.result.task.taskId as string;
    const got = await rpc(token, 'tasks/get', { taskId });
    const result = await rpc(token, 'tasks/result', { taskId });
    const again = await rpc(token, 'tools/call', { name: 'create_invoice', arguments: invoice('t1'), task: {} });
    const againResult = await rpc(token, 'tasks/result', { taskId: again.result.task.taskId });

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
    // The call's own answer: idempotent false, it committed the invoice (as the call would have answered);
    // its task id says so (rule 5: only the committing request's task answers false).
    expect(taskId).toMatch(/\.c[\w-]{22}$/); // the mark, and its proof: the committing claim's hash
    expect(result.result.structuredContent).toMatchObject({ ok: true, idempotent: false, key: 't1' });
    expect(result.result.isError).toBe(false);
    expect(result.result._meta).toEqual({ 'io.modelcontextprotocol/related-task': { taskId } });
    // Asked again: the same call's task, as it is now (this request did not begin it); its id names the
    // same call, without the committed mark, and its answer is the replay this request would have had.
    expect(again.result.task).toMatchObject({ taskId: taskId.replace(/\.c[\w-]{22}$/, ''), status: 'completed' });
    expect(againResult.result.structuredContent).toMatchObject({ ok: true, idempotent: true, key: 't1' });
    expect(againResult.result.structuredContent.receipt).toEqual(result.result.structuredContent.receipt);
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
    // Rule 5: another request began and committed the call; this task's answer is a replay.
    expect(result.result.structuredContent).toMatchObject({ ok: true, idempotent: true, key: 'e1' });
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

/** The same tasks through the MCP handler in process (handleMcp): one world, a deadline per request. */
describe('MCP tasks through the handler in process', () => {
  let world: World;
  let rpc: ReturnType<typeof mcpOf>;
  beforeAll(() => {
    world = createWorld();
    rpc = mcpOf(world);
  });
  afterAll(() => world.destroy());

  describe('the task lifecycle (MCP 2025-11-25, basic/utilities/tasks.mdx)', () => {
    it('"Tasks MUST begin in the working status when created" (Task Status Lifecycle, 1)', async () => {
      const created = await rpc(identity(), 'tools/call', {
        name: 'create_invoice',
        arguments: { idempotency_key: 'k', customer: 'cus_ada', amount: 4200 },
        task: {},
      });
      expect(created.result.task.status).toBe('working');
    });
  });

  /**
   * Found by a review: a task-augmented tools/call answers a CreateTaskResult for whatever record is under
   * its key, not for the call that answered. A call that never ran (no time left: `unavailable`, nothing
   * claimed) but whose key holds *another* call (other arguments) is told "your task completed", and
   * tasks/result hands it the other call's receipt with idempotent: false.
   */
  describe('whose call a task is', () => {
    const invoice = (key: string, amount: number) => ({ idempotency_key: key, customer: 'cus_ada', amount });
    const NO_TIME = { getRemainingTimeInMillis: () => 0 };

    describe('a task-augmented call is the task of the call that answered, or none', () => {
      it('a call that ran nothing (no time left) is not given the task of another call under its key', async () => {
        // prepare: the key holds a completed call with amount 4200
        const caller = identity();
        const first = await rpc(caller, 'tools/call', { name: 'create_invoice', arguments: invoice('k1', 4200) });
        expect(first.result.structuredContent).toMatchObject({ ok: true, idempotent: false });

        // act: the same key, OTHER arguments, asked as a task, with no time left (nothing is claimed or run)
        const plain = await rpc(
          caller,
          'tools/call',
          { name: 'create_invoice', arguments: invoice('k1', 9999) },
          NO_TIME,
        );
        const asTask = await rpc(
          caller,
          'tools/call',
          { name: 'create_invoice', arguments: invoice('k1', 9999), task: {} },
          NO_TIME,
        );
        const result = asTask.result?.task
          ? await rpc(caller, 'tasks/result', { taskId: asTask.result.task.taskId })
          : undefined;

        // assess: without a task the call says unavailable (and its retry would say conflict) ...
        expect(plain.result.structuredContent).toMatchObject({ ok: false, error: { code: 'unavailable' } });
        // ... so as a task it must not be a completed task whose result is the 4200 invoice, idempotent: false
        expect({ task: asTask.result?.task?.status, result: result?.result?.structuredContent }).toEqual({
          task: undefined,
          result: undefined,
        });
      });
    });

    describe('the task read after the answer races other calls under the key', () => {
      it('a first attempt’s business error (released) is not answered with the task of the next call that claimed the key', async () => {
        // prepare: an invoice of the caller's; a refund of an invoice that does not exist will be refused
        // (not_found, attempt 1: the claim is released) — and right after that release, before the task is
        // read, another request under the same key refunds the real invoice.
        const caller = identity();
        const real = await world.seedInvoice(caller.tenant);
        let released = false;
        let other: Promise<unknown> | undefined;
        const name = 'fresh-after-release';
        world.client.middlewareStack.add(
          (next, context) => async (args) => {
            const out = await next(args);
            if (context.commandName === 'DeleteItemCommand' && !released) {
              released = true;
              other = rpc(caller, 'tools/call', {
                name: 'refund',
                arguments: { idempotency_key: 'r1', invoice_id: real.invoice_id, amount: real.amount },
              });
              await other;
            }
            return out;
          },
          { step: 'initialize', name },
        );

        // act
        let asTask: { result?: { task?: { taskId: string; status: string } }; error?: unknown };
        try {
          asTask = await rpc(caller, 'tools/call', {
            name: 'refund',
            arguments: { idempotency_key: 'r1', invoice_id: 'inv_missing', amount: 100 },
            task: {},
          });
        } finally {
          world.client.middlewareStack.remove(name);
        }
        const result = asTask.result?.task
          ? await rpc(caller, 'tasks/result', { taskId: asTask.result.task.taskId })
          : undefined;

        // assess: this call's answer was not_found (nothing done): no task, a JSON-RPC error
        expect(released).toBe(true);
        expect({ task: asTask.result?.task?.status, receipt: result?.result?.structuredContent?.receipt }).toEqual({
          task: undefined,
          receipt: undefined,
        });
      });
    });
  });

  /** Found by a review: task ids and lookups that held. */
  describe('task ids and lookups', () => {
    const invoice = (key: string) => ({ idempotency_key: key, customer: 'cus_ada', amount: 4200 });

    it('a key with every awkward printable character round-trips through its task id', async () => {
      const caller = identity();
      const key = `a.b@c"d\\e/f+=%~ .${'x'.repeat(220)}`;
      const created = await rpc(caller, 'tools/call', { name: 'create_invoice', arguments: invoice(key), task: {} });
      const got = await rpc(caller, 'tasks/get', { taskId: created.result.task.taskId });
      const result = await rpc(caller, 'tasks/result', { taskId: created.result.task.taskId });
      expect(got.result.status).toBe('completed');
      expect(result.result.structuredContent.key).toBe(key);
    });

    it('another tenant, another user, a forged huge id and an unknown id all answer the same not-found', async () => {
      const caller = identity();
      const created = await rpc(caller, 'tools/call', { name: 'create_invoice', arguments: invoice('k'), task: {} });
      const taskId = created.result.task.taskId as string;
      const huge = `rs1.${Buffer.from(JSON.stringify(['create_invoice', 'k'.repeat(40_000)])).toString('base64url')}.x`;
      const answers = await Promise.all([
        rpc(identity(), 'tasks/get', { taskId }),
        rpc({ tenant: caller.tenant, user: 'bob' }, 'tasks/result', { taskId }),
        rpc(caller, 'tasks/get', { taskId: huge }),
        rpc(caller, 'tasks/get', { taskId: `${taskId.slice(0, -3)}abc` }),
        rpc(caller, 'tasks/get', { taskId: 'rs1.W10.x' }),
      ]);
      expect(answers.map((a) => a.error)).toEqual(
        Array(5).fill({ code: -32602, message: 'Failed to retrieve task: Task not found' }),
      );
    });
  });

  /**
   * Found by a review: a write that runs until its invocation's deadline — the long-running call that
   * tasks are for — is in flight (claimed; abandoned when its lock ends), yet its task-augmented tools/call
   * answers a JSON-RPC error instead of a `working` task: the task is read with one more GetItem *after*
   * the call's answer, when the invocation's store calls are already refused.
   */
  describe('a call that used its whole invocation', () => {
    it('a call that used its whole invocation is created as a working task', async () => {
      // prepare: a tool whose provider answers only after the invocation's store calls have stopped
      const { tool } = noteTool('slow_note', async (args) => {
        await new Promise((resolve) => setTimeout(resolve, 900));
        return { receipt: { note_id: 'n', text: args.text }, replayed: false };
      });
      const rpc = mcpOf(world, [writeTool(tool, world.runtime)]);
      const caller = identity();
      const end = Date.now() + 1_800;
      const invocation = { getRemainingTimeInMillis: () => end - Date.now() };

      // act: as the deployed handler runs it (withErrorBoundary → withInvocationDeadline)
      const created = await withInvocationDeadline(invocation, () =>
        rpc(
          caller,
          'tools/call',
          { name: 'slow_note', arguments: { idempotency_key: 's1', text: 'hi' }, task: {} },
          invocation,
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
  });

  /**
   * Found by a review: "the same key is the same task" — except when the call's stored outcome is a
   * business `conflict` or `invalid_args` (raised by the tool on a later attempt, stored as the call's
   * outcome). tools/call with `task` then answers -32602 "no task", while tasks/get of the very task an
   * earlier tools/call under the key created reads `failed`.
   */
  describe('a stored business error is the failed task', () => {
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
      // (The resend ran attempt 2 and stored the outcome: its task id marks the answer that committed it.)
      expect([again.result?.task, thirdTime.result?.task]).toEqual([
        expect.objectContaining({
          taskId: expect.stringMatching(
            new RegExp(`^${created.result.task.taskId.replaceAll('.', '\\.')}\\.c[\\w-]{22}$`),
          ),
          status: 'failed',
        }),
        expect.objectContaining({ taskId: created.result.task.taskId, status: 'failed' }),
      ]);
    });
  });
});
