// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state — and its answers say truthfully what happened.
/**
 * A call handed off unrun that the completer gives up on before it ever ran (review 4, F4: "a stalled one
 * 'none of its attempts ran: nothing happened'"): get_operation says so, and its MCP task says the same, not
 * the opposite (review 5, F6: first a failing test).
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { TOOLS } from '../../app/tools';
import { Completer } from '../../lib/idempotency/completer';
import { recordKeyOf } from '../../lib/idempotency/derivation';
import { idempotencyTableName } from '../../lib/store/tables';
import { startTestApi, type TestApi } from '../helpers/api';
import { pastTheStreamWindow } from '../helpers/clock';
import { longRunningEmail } from '../helpers/long-running-email';
import { modernRequest } from '../helpers/raw-mcp';
import { deadline, newTenant } from '../helpers/world';

/** The example's send_email under another name, declared long-running (as answer-waits.test.ts does). */
const laterEmail = longRunningEmail('send_email_queued');

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({ tools: [...TOOLS, laterEmail] });
});
afterAll(() => api.close());
afterEach(() => jest.restoreAllMocks());

describe('a handed-off call given up before it ever ran, as its MCP task says it', () => {
  it('tasks/get says none of its attempts ran (as get_operation does), not that its effect may have happened', async () => {
    const tenant = newTenant('r5q');
    const token = await api.token(tenant);
    const key = `r5q-${Date.now()}`;
    const modern = (method: string, params: Record<string, unknown>) =>
      modernRequest(api.url, token, method, params, { client: 'stalled-queued' });
    const created = await modern('tools/call', {
      name: 'send_email_queued',
      arguments: { idempotency_key: key, to: 'a@example.com', subject: 's', body: `b ${key}` },
    });
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
    // The deployed completer no longer serves the tool (a deploy renamed it): it gives up at once, unrun.
    const recordKey = recordKeyOf('send_email_queued', [tenant, 'ada', key]);
    const tableName = idempotencyTableName(process.env);
    const { Item } = await api.services.client.send(
      new GetItemCommand({ TableName: tableName, Key: { id: { S: recordKey } }, ConsistentRead: true }),
    );
    const claim = String(unmarshall(Item ?? {}).claim_id);
    const completer = new Completer({
      client: api.services.client,
      runtime: api.runtime,
      tools: [],
      queue: { send: async () => undefined },
      tableName,
    });
    pastTheStreamWindow(); // when the completer looks at a handed-off call
    expect(await completer.onRecheck({ key: recordKey, claim }, deadline(60_000))).toBe('gave_up');

    const poll = await modern('tools/call', {
      name: 'get_operation',
      arguments: { tool: 'send_email_queued', idempotency_key: key },
    });
    const task = await modern('tasks/get', { taskId: created.result.taskId });

    expect(poll.result.structuredContent).toMatchObject({
      status: 'stalled',
      hint: expect.stringContaining('none of its attempts ran: nothing happened'),
    });
    expect(task.result?.statusMessage).not.toMatch(/may or may not have happened/);
    expect(task.result?.statusMessage).toContain('none of its attempts ran: nothing happened');
  });
});
