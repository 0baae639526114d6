/**
 * Review of the three fix branches merged into main (h-fix-agentcore, h-fix-powertools, h-fix-mcp).
 * Each `it` proves one finding: it fails on main as the fixes left it.
 */
import { DeleteItemCommand, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { recordKeyOf, validationOf } from '../../lib/idempotency/derivation';
import { InFlightError } from '../../lib/idempotency/errors';
import { fingerprint } from '../../lib/idempotency/fingerprint';
import { MIN_TTL_SECONDS } from '../../lib/idempotency/tool';
import { TASKS_EXTENSION, taskIdOf } from '../../lib/mcp/tasks';
import { idempotencyTableName } from '../../lib/store/tables';
import { startTestApi, type TestApi } from '../helpers/api';
import { heldSendEmail } from '../helpers/held-send-email';
import { noteTool } from '../helpers/tools';
import { deadline, identity, newTenant } from '../helpers/world';

const MODERN = '2026-07-28';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

function envelope(tasks: boolean) {
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': tasks ? { extensions: { [TASKS_EXTENSION]: {} } } : {},
    'io.modelcontextprotocol/clientInfo': { name: 'review', version: '1.0.0' },
  };
}

let rpcId = 0;
/** One 2026-07-28 request (the tasks extension declared). */
async function modern(token: string, method: string, params: Record<string, unknown>) {
  const mcpName = method === 'tools/call' ? params.name : params.taskId;
  const response = await fetch(`${api.url}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
      'mcp-protocol-version': MODERN,
      'mcp-method': method,
      ...(typeof mcpName === 'string' ? { 'mcp-name': mcpName } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++rpcId, method, params: { ...params, _meta: envelope(true) } }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC replies are asserted structurally
  return (await response.json()) as any;
}

/** One raw 2025-11-25 (stateless) request. */
async function legacy(token: string, method: string, params: Record<string, unknown> = {}) {
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

const email = (key: string) => ({ idempotency_key: key, to: 'a@example.com', subject: 's', body: 'b' });

async function heldCall(tenant: string, key: string) {
  const { tool, started, release } = heldSendEmail();
  const running = api.runtime.invoke(tool, { tenant, user: 'ada' }, email(key), deadline(8_000));
  await started.opened;
  return {
    async finish() {
      release.open();
      return running;
    },
  };
}

describe('F1: the committed mark `.c` of a task id is the client’s to write (lib/mcp/tasks.ts taskNameOf, lib/mcp/server.ts readTask)', () => {
  it('extension: a task id the server never issued (its id + ".c") is answered as an unknown one, not as the call’s committing answer (idempotent: false)', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const held = await heldCall(tenant, 'forged-c');
    const taskId = (await modern(token, 'tools/call', { name: 'send_email', arguments: email('forged-c') })).result
      .taskId as string;
    const own = await held.finish();

    const forged = await modern(token, 'tasks/get', { taskId: `${taskId}.c` });
    const unknown = await modern(token, 'tasks/get', { taskId: `${taskId}.x` });

    // The held request committed the effect and said so; nobody else may.
    expect(own).toMatchObject({ ok: true, idempotent: false });
    expect(taskId).not.toMatch(/\.c$/);
    expect(unknown.error).toMatchObject({ code: -32602 });
    // Rule 5: a second answer saying idempotent: false for the one email — or else the forged id must be unknown.
    expect(forged.result?.result?.structuredContent?.idempotent).not.toBe(false);
    expect(forged.error).toEqual(unknown.error);
  });

  it('2025-11-25: a replay’s task id + ".c" makes tasks/result answer idempotent: false for an effect another request committed', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const held = await heldCall(tenant, 'forged-c-legacy');
    const created = await legacy(token, 'tools/call', {
      name: 'send_email',
      arguments: email('forged-c-legacy'),
      task: {},
    });
    const taskId = created.result.task.taskId as string;
    const own = await held.finish();

    const honest = await legacy(token, 'tasks/result', { taskId });
    const forged = await legacy(token, 'tasks/result', { taskId: `${taskId}.c` });

    expect(own).toMatchObject({ ok: true, idempotent: false });
    expect(taskId).not.toMatch(/\.c$/);
    expect(honest.result.structuredContent).toMatchObject({ ok: true, idempotent: true });
    // Rule 5: exactly one answer per effect says false — `own` did. The forged id must not be a second.
    expect(forged.result?.structuredContent?.idempotent).not.toBe(false);
  });
});

/**
 * Records with no tenant put on the shared table: every tenant's erase takes them as its own (rule 6), so
 * each is deleted after its test (other suites' erases on the shared table must not wait on them).
 */
const tenantless: string[] = [];
afterEach(async () => {
  for (const id of tenantless.splice(0)) {
    await api.services.client.send(
      new DeleteItemCommand({ TableName: idempotencyTableName(), Key: { id: { S: id } } }),
    );
  }
});

/** What Powertools' handler leaves when its worker dies: no claim, call instance or attempt; its lock ended. */
async function putStalledPowertoolsRecord(tenant: string, key: string, args: Record<string, string>, ttlS: number) {
  tenantless.push(recordKeyOf('send_email', [tenant, 'ada', key]));
  await api.services.client.send(
    new PutItemCommand({
      TableName: idempotencyTableName(),
      Item: {
        id: { S: recordKeyOf('send_email', [tenant, 'ada', key]) },
        status: { S: 'INPROGRESS' },
        expiration: { N: String(Math.round(Date.now() / 1000) + ttlS) },
        in_progress_expiration: { N: String(Date.now() - 5_000) },
        validation: { S: validationOf(fingerprint(args)) },
      },
    }),
  );
}

describe('F2: a task of a call Powertools’ handler left in flight hints a poll 60 s away, though nothing moves it before its TTL (lib/idempotency/task.ts taskOf, STALLED_POLL_MS)', () => {
  it('tasks/get’s pollIntervalMs is the wait the CreateTaskResult and get_operation’s retry_after_ms give (stalledChangesAtMs: the TTL)', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const key = `pt-${Date.now()}`;
    const args = { to: 'a@example.com', subject: 's', body: 'b' };
    const ttlS = 3_600;
    await putStalledPowertoolsRecord(tenant, key, args, ttlS);
    const created = await modern(token, 'tools/call', {
      name: 'send_email',
      arguments: { idempotency_key: key, ...args },
    });
    const taskId = created.result.taskId as string;

    const poll = await modern(token, 'tools/call', {
      name: 'get_operation',
      arguments: { tool: 'send_email', idempotency_key: key },
    });
    const task = await modern(token, 'tasks/get', { taskId });

    const pollWait = poll.result.structuredContent.retry_after_ms as number;
    // The task as created, and the poll, say: nothing changes before the TTL.
    expect(taskId).toBe(taskIdOf('send_email', key, 'x@powertools'));
    expect(created.result.pollIntervalMs).toBeGreaterThan((ttlS - 60) * 1000);
    expect(pollWait).toBeGreaterThan((ttlS - 60) * 1000);
    expect(task.result).toMatchObject({ status: 'working' });
    // Rule 8: no answer hints a wait shorter than the time to the next change. The task says 60 s.
    expect(task.result.pollIntervalMs).toBeGreaterThan((ttlS - 60) * 1000);
  });
});

describe('F3: a resend of a call Powertools’ handler left in flight is told “it will not run twice” and to call again after the TTL — when that call runs it anew (lib/api/next-step.ts nextAfterWrite; lib/idempotency/protocol/claim.ts answerOfRecord)', () => {
  it('POST /tools/send_email: the 202 pending answer’s next promises no single effect past the TTL, as the poll’s does', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const key = `pt3-${Date.now()}`;
    const args = { to: 'a@example.com', subject: 's', body: 'b' };
    const ttlS = 3_600;
    await putStalledPowertoolsRecord(tenant, key, args, ttlS);

    const resend = await api.post('/tools/send_email', token, { idempotency_key: key, ...args });
    const poll = await modern(token, 'tools/call', {
      name: 'get_operation',
      arguments: { tool: 'send_email', idempotency_key: key },
    });

    expect(resend.status).toBe(202);
    expect(resend.body).toMatchObject({ ok: false, status: 'pending' });
    // It says: come back at the TTL (past it, a resend claims anew and runs the tool again)…
    expect(resend.next?.after_ms).toBeGreaterThan((ttlS - 60) * 1000);
    // …and the poll of the same call says so: "calling again runs it anew and can act twice".
    expect(JSON.stringify(poll.result.structuredContent)).toMatch(/can act twice/);
    // The write's own answer must not promise the opposite.
    expect(resend.next?.message).not.toMatch(/will not run twice|cannot act twice/);
  });
});

describe('F4: -32022’s data.supported is not one list (lib/mcp/http.ts unservedVersion, SERVED_VERSIONS)', () => {
  async function raw(token: string, version: string) {
    const response = await fetch(`${api.url}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${token}`,
        'mcp-protocol-version': version,
        'mcp-method': 'tools/list',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: ++rpcId,
        method: 'tools/list',
        params: { _meta: { ...envelope(false), 'io.modelcontextprotocol/protocolVersion': version } },
      }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC replies are asserted structurally
    return { status: response.status, body: (await response.json()) as any };
  }

  it('a modern request naming 2025-11-25 is told supported: ["2026-07-28"], another unserved one ["2026-07-28", "2025-11-25"]', async () => {
    const token = await api.token(newTenant());

    const unknown = await raw(token, '1900-01-01');
    const legacyInEnvelope = await raw(token, '2025-11-25');

    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatchObject({ code: -32022, data: { supported: ['2026-07-28', '2025-11-25'] } });
    expect(legacyInEnvelope.status).toBe(400);
    expect(legacyInEnvelope.body.error.code).toBe(-32022);
    // Versioning: the server lists "the versions it does support" — the same server, the same list.
    expect(legacyInEnvelope.body.error.data.supported).toEqual(unknown.body.error.data.supported);
  });
});

describe('F5: a call waiting on a dedupe window’s parked holder hints 1 s, though the holder is parked for 5 s (lib/idempotency/attempt.ts runClaimed "running": retryAfterMs(chosen.lockEndsMs))', () => {
  it('the waiter’s pending retry_after_ms is the holder’s park, as the holder’s own answer and its poll say', async () => {
    const PROVIDER_WAIT_MS = 5_000;
    const { tool } = noteTool(
      `dedupe_${Date.now()}`,
      async () => {
        throw new InFlightError('the provider is still processing this key', PROVIDER_WAIT_MS);
      },
      { dedupeWindowSeconds: 600 },
    );
    const caller = identity();

    const holder = await api.runtime.invoke(tool, caller, { idempotency_key: 'k-holder', text: 'same' }, deadline());
    const waiter = await api.runtime.invoke(tool, caller, { idempotency_key: 'k-waiter', text: 'same' }, deadline());

    // The holder is parked: nobody runs it (nor the intent) for 5 s.
    expect(holder).toMatchObject({ ok: false, status: 'pending' });
    expect((holder as { retry_after_ms: number }).retry_after_ms).toBeGreaterThan(PROVIDER_WAIT_MS - 1_000);
    // The waiter can learn nothing before the holder's park ends — rule 8: its hint is not shorter.
    expect(waiter).toMatchObject({ ok: false, status: 'pending' });
    expect((waiter as { retry_after_ms: number }).retry_after_ms).toBeGreaterThan(PROVIDER_WAIT_MS - 1_500);
  });
});

describe('F6: a task id is not checked to be one the server issued: any other spelling of its base64url segment reads the task (lib/mcp/tasks.ts taskNameOf)', () => {
  it('tasks/get of an issued id with a character base64url decoding drops is answered as the unknown id, -32602', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const held = await heldCall(tenant, 'respelled');
    const taskId = (await modern(token, 'tools/call', { name: 'send_email', arguments: email('respelled') })).result
      .taskId as string;
    await held.finish();
    const [version, named, instance] = taskId.split('.');

    const respelled = await modern(token, 'tasks/get', { taskId: `${version}.${named}=!.${instance}` });
    const issued = await modern(token, 'tasks/get', { taskId });

    expect(issued.result).toMatchObject({ status: 'completed' });
    // Not an id the server gave out: the same -32602 as any unknown id.
    expect(respelled.error).toMatchObject({ code: -32602 });
  });
});

describe('F7: a header that disagrees with the envelope is answered -32022 for the header’s revision, not HeaderMismatch (lib/mcp/http.ts unservedVersion, before the SDK’s validation)', () => {
  it('MCP-Protocol-Version: 2099-01-01 with an envelope naming 2026-07-28 is 400 -32020 (Streamable HTTP, "Server Validation")', async () => {
    const token = await api.token(newTenant());

    const response = await fetch(`${api.url}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${token}`,
        'mcp-protocol-version': '2099-01-01',
        'mcp-method': 'tools/list',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++rpcId, method: 'tools/list', params: { _meta: envelope(false) } }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC replies are asserted structurally
    const body = (await response.json()) as any;

    expect(response.status).toBe(400);
    // The body asks for 2026-07-28, which is served: the client did not request 2099-01-01; its headers are wrong.
    expect(body.error.code).toBe(-32020);
  });
});

describe('F8: park takes the provider’s wait as the lock, past the record’s TTL: the parked call’s hint outlives its record (lib/idempotency/attempt.ts executionFailed, protocol/settle.ts park, answers.ts askAgainAfterMs)', () => {
  it('a provider wait of 2 h on a tool whose TTL is MIN_TTL_SECONDS: the lock ends 10 s before the TTL (rule 2), and no hint points past the TTL', async () => {
    const name = `long_park_${Date.now()}`;
    const { tool } = noteTool(
      name,
      async () => {
        throw new InFlightError('the provider is still processing this key', 2 * 3_600_000);
      },
      { ttlSeconds: MIN_TTL_SECONDS },
    );
    const caller = identity();

    const answer = await api.runtime.invoke(tool, caller, { idempotency_key: 'k-long', text: 'x' }, deadline());
    const poll = await api.runtime.lookup(name, caller, 'k-long');
    const { Item } = await api.services.client.send(
      new GetItemCommand({
        TableName: idempotencyTableName(),
        Key: { id: { S: recordKeyOf(name, [caller.tenant, caller.user, 'k-long']) } },
        ConsistentRead: true,
      }),
    );
    const record = unmarshall(Item ?? {});
    const untilTtlMs = (record.expiration as number) * 1000 - Date.now();

    expect(answer).toMatchObject({ ok: false, status: 'pending' });
    // Rule 2: every lock ends 10 s before its record's TTL.
    expect(record.in_progress_expiration as number).toBeLessThanOrEqual((record.expiration as number) * 1000 - 10_000);
    // Rule 4: a pending call is pollable — the answer's wait must not outlast the record it points at.
    expect((answer as { retry_after_ms: number }).retry_after_ms).toBeLessThanOrEqual(untilTtlMs);
    expect((poll as { retryAfterMs?: number }).retryAfterMs ?? 0).toBeLessThanOrEqual(untilTtlMs);
  });
});
