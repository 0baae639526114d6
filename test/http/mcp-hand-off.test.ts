// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
// Rule 5 (docs/state-machine.md): exactly one answer per effect says idempotent: false — a task's answer is a replay.
/**
 * A write that may run long (`longRunning`) called by a client that takes tasks: the first request comes
 * back as the task at once — its claim written and parked unrun — and `retrysafe dev`'s completer runs it
 * (as the stack's does from the table's stream); `tasks/get` follows it to completed, one effect. Served
 * by the dev server in this process, on the suite's DynamoDB Local, its completer passing every 300 ms —
 * on an idempotency table of its own: the completer's first pass reads the table's stream from its trim
 * horizon, and on the run's shared table that was every record every earlier suite wrote (on a CI run, late
 * in it, the task was still `working` after the test's 60 polls).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RetrysafeConfig } from '../../lib/dev/config';
import { type DevServer, startDevServer } from '../../lib/dev/dev-server';
import { DevSigningKey } from '../../lib/local/dev-auth';
import type { AnyToolModule } from '../../lib/tools/tool-module';
import example from '../../retrysafe.config';
import { ownIdempotencyTable } from '../helpers/own-table';
import { modernRequest, postMcp } from '../helpers/raw-mcp';
import { newTenant } from '../helpers/world';

const config = example as RetrysafeConfig<unknown>;
let runs = 0;
/** The example's send_email, declared long-running, its runs counted. */
const longSendEmail = ((module: AnyToolModule): AnyToolModule => ({
  ...module,
  longRunning: true,
  bind(services: unknown) {
    const bound = module.bind(services);
    return {
      ...bound,
      longRunning: true,
      async execute(...args: Parameters<typeof bound.execute>) {
        runs += 1;
        return bound.execute(...args);
      },
    };
  },
}))(config.tools.find((tool) => tool.name === 'send_email') as AnyToolModule);

ownIdempotencyTable('hand-off');
let server: DevServer;
let key: DevSigningKey;
beforeAll(async () => {
  const env = { ...process.env, DEV_KEY_DIR: mkdtempSync(join(tmpdir(), 'retrysafe-key-')) };
  const tools = config.tools.map((tool) => (tool.name === 'send_email' ? longSendEmail : tool));
  server = await startDevServer({ ...config, tools } as RetrysafeConfig<unknown>, {
    port: 0,
    env,
    completerIntervalMs: 300,
  });
  key = await DevSigningKey.loadOrCreate(env);
});
afterAll(() => server.close());
beforeEach(() => {
  runs = 0;
});

const email = (idempotencyKey: string) => ({
  idempotency_key: idempotencyKey,
  to: 'a@example.com',
  subject: 'long',
  body: `body ${idempotencyKey}`,
});

describe('a long-running write called by a client that takes tasks', () => {
  it('comes back as a task at once, nothing run; the dev server’s completer runs it once, and tasks/get reads it completed with a replay', async () => {
    const token = await key.mint(newTenant('hand-off'), 'ada');
    const call = (method: string, params: Record<string, unknown>, tasks = true) =>
      modernRequest(server.url, token, method, params, { tasks, client: 'hand-off' });

    const created = await call('tools/call', { name: 'send_email', arguments: email('e1') });
    const runsAtCreation = runs;
    const polled = [];
    for (let polls = 0; polls < 60; polls += 1) {
      const task = (await call('tasks/get', { taskId: created.result.taskId })).result;
      polled.push(task);
      if (task.status !== 'working') break;
      await new Promise((resolve) => setTimeout(resolve, Math.min(task.pollIntervalMs, 250)));
    }
    const done = polled.at(-1);
    const resent = await call('tools/call', { name: 'send_email', arguments: email('e1') });

    expect(created.result).toMatchObject({ resultType: 'task', status: 'working', pollIntervalMs: 10_000 });
    expect(runsAtCreation).toBe(0);
    expect(done).toMatchObject({
      status: 'completed',
      result: { isError: false, structuredContent: { ok: true, idempotent: true, key: 'e1' } },
    });
    expect(resent.result.structuredContent).toEqual(done.result.structuredContent);
    expect(runs).toBe(1);
  });

  it('a client that takes no task gets the answer from the request, which runs it', async () => {
    const token = await key.mint(newTenant('hand-off'), 'ada');

    const answered = await modernRequest(
      server.url,
      token,
      'tools/call',
      {
        name: 'send_email',
        arguments: email('e2'),
      },
      { tasks: false },
    );

    expect(answered.result.structuredContent).toMatchObject({ ok: true, idempotent: false, key: 'e2' });
    expect(runs).toBe(1);
  });

  it('the same under 2025-11-25’s experimental tasks: a task-augmented call is answered its task at once, tasks/result reads the replay', async () => {
    const token = await key.mint(newTenant('hand-off'), 'ada');
    let id = 0;
    const legacy = async (method: string, params: Record<string, unknown>) =>
      (await postMcp(server.url, token, { jsonrpc: '2.0', id: ++id, method, params })).body;

    const created = await legacy('tools/call', { name: 'send_email', arguments: email('e3'), task: {} });
    const runsAtCreation = runs;
    const taskId = created.result.task.taskId;
    let status = created.result.task.status;
    for (let polls = 0; polls < 60 && status === 'working'; polls += 1) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      status = (await legacy('tasks/get', { taskId })).result.status;
    }
    const result = await legacy('tasks/result', { taskId });

    expect(created.result.task).toMatchObject({ status: 'working' });
    expect(runsAtCreation).toBe(0);
    expect(status).toBe('completed');
    expect(result.result.structuredContent).toMatchObject({ ok: true, idempotent: true, key: 'e3' });
    expect(runs).toBe(1);
  });
});
