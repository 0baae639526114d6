/**
 * The tasks extension's `pollIntervalMs` for a call the provider parked (found by issue 35's review).
 * A provider that says its key is still in use (`InFlightError`, its `retryAfterMs`) parks the call's
 * record until then: nobody runs it before, and the `pending` answer says exactly that wait
 * (`retry_after_ms`). A client that declared the extension gets that same call as a task instead of the
 * `pending` answer — and the task must say the same truthful wait (docs/state-machine.md, "Liveness":
 * one rule for every surface's hint).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { ApiEvent } from '../../lib/http/event';
import { InFlightError } from '../../lib/idempotency/errors';
import { handleMcp, type McpHttpDependencies, McpServerPool } from '../../lib/mcp/http';
import { TASKS_EXTENSION } from '../../lib/mcp/tasks';
import { writeTool } from '../../lib/mcp/tools';
import { noteTool } from '../helpers/tools';
import { createWorld, identity, type World } from '../helpers/world';

const MODERN = '2026-07-28';
/** What the provider says: the key is in use for 5 s more. */
const PROVIDER_WAIT_MS = 5_000;

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());

function modernServer(world: World) {
  const { tool } = noteTool('send_note', async () => {
    throw new InFlightError('the provider is still processing this key', PROVIDER_WAIT_MS);
  });
  const deps: McpHttpDependencies = {
    tools: [writeTool(tool, world.runtime)],
    logger: new Logger({ logLevel: 'SILENT' }),
    issuer: 'http://localhost',
    verifyToken: async (token) => {
      const [tenant_id, sub] = token.split('/');
      return { tenant_id: tenant_id ?? '', sub: sub ?? '' };
    },
  };
  const pool = new McpServerPool(deps);
  let id = 0;
  /** One 2026-07-28 request (`tools/call` of send_note, or `tasks/get`), its headers as the transport requires. */
  async function request(
    caller: { tenant: string; user: string },
    method: string,
    name: string,
    params: Record<string, unknown>,
    declaresTasks: boolean,
  ) {
    const event = {
      rawPath: '/mcp',
      headers: {
        authorization: `Bearer ${caller.tenant}/${caller.user}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': MODERN,
        'mcp-method': method,
        'mcp-name': name,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: ++id,
        method,
        params: {
          ...params,
          _meta: {
            'io.modelcontextprotocol/protocolVersion': MODERN,
            'io.modelcontextprotocol/clientCapabilities': declaresTasks
              ? { extensions: { [TASKS_EXTENSION]: {} } }
              : {},
          },
        },
      }),
      requestContext: { domainName: 'localhost', http: { method: 'POST' } },
    } as unknown as ApiEvent;
    const response = await handleMcp(deps, pool, event, { getRemainingTimeInMillis: () => 9_000 });
    // biome-ignore lint/suspicious/noExplicitAny: asserted structurally
    return JSON.parse(response.body) as any;
  }
  return {
    callNote: (caller: { tenant: string; user: string }, key: string, declaresTasks: boolean) =>
      request(
        caller,
        'tools/call',
        'send_note',
        { name: 'send_note', arguments: { idempotency_key: key, text: 'hi' } },
        declaresTasks,
      ),
    getTask: (caller: { tenant: string; user: string }, taskId: string) =>
      request(caller, 'tasks/get', taskId, { taskId }, true),
  };
}

describe('a call its provider parked, as a task (tasks extension)', () => {
  it('says the same wait as the pending answer it replaces: pollIntervalMs is the provider’s retry_after_ms', async () => {
    const { callNote, getTask } = modernServer(world);
    const caller = identity();

    const pending = await callNote(caller, 'parked-pending', false);
    const task = await callNote(caller, 'parked-task', true);
    const polled = await getTask(caller, task.result.taskId);

    // Both requests parked their call until the provider's wait is over.
    expect(pending.result.structuredContent).toMatchObject({ status: 'pending', retry_after_ms: PROVIDER_WAIT_MS });
    expect(task.result).toMatchObject({ resultType: 'task', status: 'working' });
    // Nothing changes before then: polling at 1 s asks five times for nothing.
    expect(task.result.pollIntervalMs).toBeGreaterThanOrEqual(PROVIDER_WAIT_MS - 100);
    // Polled later: still parked (no holder, its lock not ended), so its lock's end, not 1 s.
    expect(polled.result).toMatchObject({ status: 'working' });
    expect(polled.result.pollIntervalMs).toBeGreaterThan(1_000);
    expect(polled.result.pollIntervalMs).toBeLessThanOrEqual(PROVIDER_WAIT_MS);
  });
});
