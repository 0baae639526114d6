// Review 3 (h-review3): what answers say, over HTTP (REST and MCP), for a call Powertools' handler holds with
// no lock of its own (2b6adc8's paths) and for a handed-off call (261765d). Each test fails today.
import { GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { TOOLS } from '../../app/tools';
import { recordKeyOf, validationOf } from '../../lib/idempotency/derivation';
import { fingerprint } from '../../lib/idempotency/fingerprint';
import { commitProofOf } from '../../lib/mcp/tasks';
import { idempotencyTableName } from '../../lib/store/tables';
import type { AnyToolModule } from '../../lib/tools/tool-module';
import { startTestApi, type TestApi } from '../helpers/api';
import { advanceClock } from '../helpers/clock';
import { ownIdempotencyTable } from '../helpers/own-table';
import { modernRequest, postMcp } from '../helpers/raw-mcp';
import { newTenant } from '../helpers/world';

// Records with no tenant (Powertools' handler's): a table of this suite's own (rule 6).
ownIdempotencyTable('review3');

/** The example's send_email, declared long-running (as test/http/mcp-hand-off.test.ts declares it). */
const longSendEmail = ((module: AnyToolModule): AnyToolModule => ({
  ...module,
  longRunning: true,
  bind(services: unknown) {
    return { ...module.bind(services), longRunning: true };
  },
}))(TOOLS.find((tool) => tool.name === 'send_email') as AnyToolModule);

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({
    tools: TOOLS.map((tool) => (tool.name === 'send_email' ? longSendEmail : tool)),
  });
});
afterAll(() => api.close());

function modern(token: string, method: string, params: Record<string, unknown>) {
  return modernRequest(api.url, token, method, params, { client: 'review3' });
}

/**
 * What Powertools' handler writes when it runs without a Lambda context (docs/state-machine.md, "A record
 * Powertools' handler wrote": "without a Lambda context Powertools writes none [no in_progress_expiration]
 * and holds the key to its TTL, and so does this lock").
 */
async function putLocklessPowertoolsRecord(tenant: string, key: string, args: Record<string, string>, ttlS: number) {
  await api.services.client.send(
    new PutItemCommand({
      TableName: idempotencyTableName(),
      Item: {
        id: { S: recordKeyOf('send_email', [tenant, 'ada', key]) },
        status: { S: 'INPROGRESS' },
        expiration: { N: String(Math.round(Date.now() / 1000) + ttlS) },
        validation: { S: validationOf(fingerprint(args)) },
      },
    }),
  );
}

describe('review3 P1: a call Powertools’ handler holds with no lock is promised a single effect it cannot keep (invariant 3; 2b6adc8 covers only a lock that ended)', () => {
  it('POST /tools/send_email resend: pending, and its next says “it will not run twice” — yet nothing changes before the TTL, and past it a resend runs it anew under retrysafe’s downstream key', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const key = `ptl-${Date.now()}`;
    const args = { to: 'a@example.com', subject: 's', body: 'b' };
    await putLocklessPowertoolsRecord(tenant, key, args, 120);

    const resend = await api.post('/tools/send_email', token, { idempotency_key: key, ...args });
    const poll = await modern(token, 'tools/call', {
      name: 'get_operation',
      arguments: { tool: 'send_email', idempotency_key: key },
    });
    // The record's TTL passes (its only change): the same resend now claims the key anew and runs the tool.
    advanceClock(125_000);
    const afterTtl = await api.post('/tools/send_email', token, { idempotency_key: key, ...args });
    jest.restoreAllMocks();

    expect(resend.status).toBe(202);
    expect(resend.body).toMatchObject({ ok: false, status: 'pending' });
    // It ran — a second effect if Powertools' worker sent it (under its own key) — and says so.
    expect(afterTtl.body).toMatchObject({ ok: true, idempotent: false });
    // The same call with its lock ended is told runs_anew and "can act twice" (answer-waits.test.ts F3).
    // With no lock at all nothing differs for the caller but the moment: at the TTL a resend runs it anew.
    expect({
      runs_anew: (resend.body as { runs_anew?: boolean }).runs_anew,
      next: resend.next?.message,
      poll: poll.result.structuredContent.next?.message,
    }).toEqual({
      runs_anew: true,
      next: expect.not.stringMatching(/will not run twice/),
      poll: expect.not.stringMatching(/will not run twice/),
    });
  });
});

const email = (key: string) => ({ idempotency_key: key, to: 'a@example.com', subject: 'long', body: `b ${key}` });

describe('review3 W1: a handed-off call is described as one that crashed or is running (invariant 3: what every answer says is true)', () => {
  it('2026-07-28 task and get_operation on a call parked unrun for the completer: no “its worker died, or its attempt failed”', async () => {
    const token = await api.token(newTenant('w1'));
    const key = `w1-${Date.now()}`;

    const created = await modern(token, 'tools/call', { name: 'send_email', arguments: email(key) });
    const poll = await modern(token, 'tools/call', {
      name: 'get_operation',
      arguments: { tool: 'send_email', idempotency_key: key },
    });

    expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
    // Nothing ran and nothing failed: the call was handed to the completer on purpose.
    expect({
      task: created.result.statusMessage,
      poll: JSON.stringify(poll.result.structuredContent),
    }).toEqual({
      task: expect.not.stringMatching(/worker died|attempt failed|stopped before it finished/),
      poll: expect.not.stringMatching(/worker died|attempt failed|stopped before it finished/),
    });
  });
});

let rpcId = 0;
async function legacy(token: string, method: string, params: Record<string, unknown> = {}) {
  return (await postMcp(api.url, token, { jsonrpc: '2.0', id: ++rpcId, method, params })).body;
}
