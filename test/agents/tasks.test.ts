/**
 * MCP tasks with the official SDK's task client (`client.experimental.tasks`), against `npm start`'s
 * program twice over — two server processes on one DynamoDB Local, as two Lambda instances share one
 * table: a task created on one is polled and read on the other, nothing of it kept in either's memory. A
 * refund held at the payment provider (a fake Stripe answering 409 while the first request runs) is a
 * task that works, then completes.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { DevSigningKey } from '../../lib/local/dev-auth';
import { freePort } from '../../lib/local/free-port';
import { ServerProcess } from '../faults/server-process';
import { FakeStripe } from '../helpers/fake-stripe';
import { modernRequest } from '../helpers/raw-mcp';
import { newTenant } from '../helpers/world';

let stripe: FakeStripe;
let one: ServerProcess;
let two: ServerProcess;
let key: DevSigningKey;

beforeAll(async () => {
  stripe = await FakeStripe.start();
  const work = mkdtempSync(join(tmpdir(), 'retrysafe-tasks-'));
  // One store, one signing key and one issuer for both: a token either accepts, as two instances of one
  // deployment would.
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DEV_KEY_DIR: join(work, 'dev-key'),
    JWT_ISSUER: 'http://127.0.0.1/retrysafe-tasks',
    PAYMENT_PROVIDER: 'stripe',
    STRIPE_SECRET_KEY: stripe.apiKey,
    STRIPE_API_BASE: stripe.url,
    COMPLETER_INTERVAL_SECONDS: '3600', // no completer pass in between: the call's own attempts settle it
  };
  key = await DevSigningKey.loadOrCreate(env);
  const [portOne, portTwo] = [await freePort(), await freePort()];
  one = new ServerProcess({ port: portOne, env: { ...env, PORT: String(portOne) }, logFile: join(work, 'one.log') });
  two = new ServerProcess({ port: portTwo, env: { ...env, PORT: String(portTwo) }, logFile: join(work, 'two.log') });
  await Promise.all([one.start(), two.start()]);
}, 120_000);

afterAll(async () => {
  await Promise.all([one?.stop(), two?.stop()]);
  await stripe?.close();
});

async function connect(server: ServerProcess, token: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'retrysafe-tasks', version: '1.0.0' });
  await client.connect(transport);
  await client.listTools(); // callToolStream asks for a task only for a tool listed with taskSupport
  return client;
}

/** Polls `tasks/get` on `client` until the task is no longer working. */
async function settled(client: Client, taskId: string) {
  for (let polls = 0; ; polls += 1) {
    const task = await client.experimental.tasks.getTask(taskId);
    if (task.status !== 'working') return { task, polls };
    await new Promise((resolve) => setTimeout(resolve, Math.min(task.pollInterval ?? 200, 200)));
  }
}

describe('MCP tasks across two server processes on one table', () => {
  it('reads on the second process the task the first created: its status and its result, the same receipt', async () => {
    const token = await key.mint(newTenant('tasks'), 'ada');
    const [onOne, onTwo] = [await connect(one, token), await connect(two, token)];
    try {
      const stream = onOne.experimental.tasks.callToolStream(
        { name: 'create_invoice', arguments: { idempotency_key: 'inv-1', customer: 'cus_ada', amount: 4_200 } },
        CallToolResultSchema,
      );
      const first = await stream[Symbol.asyncIterator]().next();
      const created = first.value as { type: string; task: { taskId: string; status: string } };

      const { task } = await settled(onTwo, created.task.taskId);
      const result = await onTwo.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);

      expect(created.type).toBe('taskCreated');
      expect(task).toMatchObject({ taskId: created.task.taskId, status: 'completed' });
      expect(result.structuredContent).toMatchObject({ ok: true, idempotent: false, key: 'inv-1' });
      expect(result._meta).toEqual({ 'io.modelcontextprotocol/related-task': { taskId: created.task.taskId } });
    } finally {
      await Promise.all([onOne.close(), onTwo.close()]);
    }
  });

  it('makes a refund held at the provider a working task, which completes once the provider answers', async () => {
    const token = await key.mint(newTenant('tasks'), 'ada');
    const [onOne, onTwo] = [await connect(one, token), await connect(two, token)];
    try {
      const invoice = await onOne.callTool({
        name: 'create_invoice',
        arguments: { idempotency_key: 'inv-2', customer: 'cus_ada', amount: 4_200 },
      });
      const invoiceId = (invoice.structuredContent as { receipt: { invoice_id: string } }).receipt.invoice_id;
      stripe.addPaymentIntent(invoiceId, { amount: 4_200, currency: 'usd' });
      const hold = stripe.holdNext();
      const refund = { idempotency_key: 'rf-1', invoice_id: invoiceId, amount: 4_200 };
      // The first refund reaches the provider from process two, and waits there.
      const first = onTwo.callTool({ name: 'refund', arguments: refund });
      await hold.arrived;

      // The same refund asked as a task on process one: the key is held, so the task works.
      const stream = onOne.experimental.tasks.callToolStream(
        { name: 'refund', arguments: refund },
        CallToolResultSchema,
      );
      const created = (await stream[Symbol.asyncIterator]().next()).value as {
        type: string;
        task: { taskId: string; status: string; pollInterval?: number };
      };
      const whileHeld = await onTwo.experimental.tasks.getTask(created.task.taskId);
      hold.release();
      const answered = await first;
      const { task } = await settled(onTwo, created.task.taskId);
      const result = await onOne.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);

      expect(created).toMatchObject({ type: 'taskCreated', task: { status: 'working' } });
      expect(created.task.pollInterval).toBeGreaterThan(0);
      expect(whileHeld.status).toBe('working');
      expect(answered.structuredContent).toMatchObject({ ok: true, idempotent: false, key: 'rf-1' });
      expect(task.status).toBe('completed');
      // The task is the call: its result is the call's one receipt, the one refund the provider made — a
      // replay (rule 5: the request on process two committed it, and said idempotent: false).
      expect(result.structuredContent).toMatchObject({
        ok: true,
        idempotent: true,
        key: 'rf-1',
        receipt: (answered.structuredContent as { receipt: unknown }).receipt,
      });
      expect(stripe.refunds.filter((made) => made.payment_intent === invoiceId)).toHaveLength(1);
    } finally {
      await Promise.all([onOne.close(), onTwo.close()]);
    }
  });
});

const TASKS = 'io.modelcontextprotocol/tasks';

/**
 * A client of the tasks extension written from its spec text alone (SEP-2663; no released SDK implements
 * it): each 2026-07-28 request carries the envelope with the extension declared, and the headers the
 * Streamable HTTP binding requires (`Mcp-Name`: the tool, or the task id for `tasks/*`).
 */
function extensionClient(server: ServerProcess, token: string) {
  async function request(method: string, params: Record<string, unknown>) {
    const body = await modernRequest(server.url, token, method, params, { client: 'spec-tasks-client' });
    if (body.error) throw Object.assign(new Error(body.error.message), body.error);
    return body.result;
  }
  return {
    discover: () => request('server/discover', {}),
    callTool: (name: string, args: Record<string, unknown>) => request('tools/call', { name, arguments: args }),
    getTask: (taskId: string) => request('tasks/get', { taskId }),
    /** "Clients SHOULD respect the pollIntervalMs … continue polling until the task reaches a terminal status." */
    async untilTerminal(taskId: string) {
      const seen = [];
      for (;;) {
        const task = await this.getTask(taskId);
        seen.push(task);
        if (task.status !== 'working' && task.status !== 'input_required') return seen;
        await new Promise((resolve) => setTimeout(resolve, task.pollIntervalMs));
      }
    },
  };
}

describe('MCP 2026-07-28 tasks extension across two server processes on one table, from the spec text', () => {
  it('a refund held at the provider is a working task created on one process, polled on the other until completed with its one receipt', async () => {
    const token = await key.mint(newTenant('tasks-ext'), 'ada');
    const [onOne, onTwo] = [extensionClient(one, token), extensionClient(two, token)];
    const discovered = await onOne.discover();
    const invoice = await onOne.callTool('create_invoice', {
      idempotency_key: 'inv-x',
      customer: 'cus_ada',
      amount: 4_200,
    });
    const invoiceId = invoice.structuredContent.receipt.invoice_id as string;
    stripe.addPaymentIntent(invoiceId, { amount: 4_200, currency: 'usd' });
    const hold = stripe.holdNext();
    const refund = { idempotency_key: 'rf-x', invoice_id: invoiceId, amount: 4_200 };
    // The refund reaches the provider from process two, and waits there.
    const first = onTwo.callTool('refund', refund);
    await hold.arrived;

    // The same refund from process one: still in flight when it must answer, so the server makes it a task.
    const created = await onOne.callTool('refund', refund);
    const working = await onTwo.getTask(created.taskId);
    hold.release();
    const answered = await first;
    const polled = await onTwo.untilTerminal(created.taskId);
    const done = polled.at(-1);

    expect(discovered.capabilities.extensions).toEqual({ [TASKS]: {} });
    expect(invoice.resultType).toBe('complete');
    expect(created).toMatchObject({ resultType: 'task', status: 'working', pollIntervalMs: expect.any(Number) });
    expect(Date.parse(created.createdAt)).not.toBeNaN();
    expect(created.ttlMs).toBeGreaterThan(0);
    expect(working).toMatchObject({
      resultType: 'complete',
      taskId: created.taskId,
      status: 'working',
      pollIntervalMs: expect.any(Number),
    });
    expect(answered.structuredContent).toMatchObject({ ok: true, idempotent: false, key: 'rf-x' });
    // The task is the call: its result is the call's one receipt, the one refund the provider made — a
    // replay (rule 5: the request on process two committed it, and said idempotent: false).
    expect(done).toMatchObject({
      resultType: 'complete',
      taskId: created.taskId,
      status: 'completed',
      result: { isError: false, structuredContent: { ok: true, idempotent: true, key: 'rf-x' } },
    });
    expect(done.result.structuredContent.receipt).toEqual(answered.structuredContent.receipt);
    expect(stripe.refunds.filter((made) => made.payment_intent === invoiceId)).toHaveLength(1);
  });
});
