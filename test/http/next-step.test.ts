import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import Ajv2020 from 'ajv/dist/2020';
import * as z from 'zod/mini';
import { sendEmailArgs } from '../../app/tools/send-email';
import { NEXT_ACTIONS, nextAfterError } from '../../lib/api/next-step';
import { HTTP_STATUS, type HttpErrorCode } from '../../lib/api/status';
import { VerifierUnavailableError } from '../../lib/auth/token-claims';
import { answerToolCall, RetrysafeClient } from '../../lib/client';
import { ConflictError, defineTool } from '../../lib/idempotency/definition';
import { defineToolModule } from '../../lib/tools/tool-module';
import { startTestApi, type TestApi } from '../helpers/api';
import { movableClock } from '../helpers/clock';
import { heldSendEmail } from '../helpers/held-send-email';
import { gate } from '../helpers/tools';
import { deadline, newTenant } from '../helpers/world';

// Every answer says what to do next as data (`next`): clients that show a model only the answer object
// (MCP `structuredContent`, the agent client's answer) still tell it. Suites elsewhere assert the answers
// themselves; this one asserts their next steps, over HTTP and through the agent client.

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

describe('the next step, by code', () => {
  it.each(Object.keys(HTTP_STATUS) as HttpErrorCode[])(
    '%s names an action and one sentence; only a retryable code says call_again, with a wait',
    (code) => {
      const next = nextAfterError(code);

      expect(NEXT_ACTIONS).toContain(next.action);
      expect(next.message).toMatch(/^[A-Z].*\.$/);
      const retryable = HTTP_STATUS[code] >= 500;
      expect({ code, action: next.action, waits: typeof next.after_ms === 'number' }).toEqual({
        code,
        action: retryable ? 'call_again' : expect.not.stringMatching(/^call_again$/),
        waits: retryable,
      });
    },
  );
});

describe('the next step over HTTP', () => {
  it('says a first call and its replay are done, and that the replay must not be repeated', async () => {
    const token = await api.token(newTenant());
    const body = { idempotency_key: 'k1', customer: 'cus_ada', amount: 4_200 };

    const first = await api.post('/tools/create_invoice', token, body);
    const replay = await api.post('/tools/create_invoice', token, body);

    expect(first.next).toEqual({
      action: 'none',
      message: expect.stringMatching(/^Done, once: .*Do not call it again/),
    });
    expect(replay.next).toEqual({
      action: 'none',
      message: expect.stringMatching(/^Already done: .*nothing was done now.*Do not repeat it\.$/),
    });
  });

  it('sends a pending call back after retry_after_ms, naming the poll; the poll it names answers', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant, 'ada');
    const { tool: held, started, release: hold } = heldSendEmail();
    const body = { idempotency_key: 'k/1', to: 'a@example.com', subject: 's', body: 'b' };
    const running = api.runtime.invoke(held, { tenant, user: 'ada' }, body, deadline(5_000));
    await started.opened;

    const pending = await api.post('/tools/send_email', token, body);
    const polled = await api.get(pending.next!.poll!.path!, token);
    hold.open();
    await running;
    const done = await api.get(pending.next!.poll!.path!, token);

    expect(pending.status).toBe(202);
    expect(pending.next).toEqual({
      action: 'call_again',
      after_ms: pending.body.retry_after_ms,
      poll: {
        tool: 'get_operation',
        arguments: { tool: 'send_email', idempotency_key: 'k/1' },
        path: '/tools/send_email/operations/k%2F1',
      },
      message: expect.stringContaining('it will not run twice'),
    });
    expect(polled.body).toMatchObject({ status: 'pending', key: 'k/1' });
    expect(polled.next).toMatchObject({ action: 'call_again', after_ms: expect.any(Number) });
    expect(done.body).toMatchObject({ status: 'completed', key: 'k/1' });
    expect(done.next).toMatchObject({ action: 'none' });
  });

  it('tells a conflict to repeat the original arguments, and a refusal to fix them', async () => {
    const token = await api.token(newTenant());
    await api.post('/tools/create_invoice', token, { idempotency_key: 'k1', customer: 'c', amount: 100 });

    const conflict = await api.post('/tools/create_invoice', token, {
      idempotency_key: 'k1',
      customer: 'c',
      amount: 9,
    });
    const invalid = await api.post('/tools/create_invoice', token, { idempotency_key: 'k2', customer: 'c' });
    const missing = await api.post('/tools/refund', token, { idempotency_key: 'k3', invoice_id: 'inv_no', amount: 1 });
    const read = await api.get('/invoices/inv_no', token);
    const anonymous = await api.post('/tools/create_invoice', '', { idempotency_key: 'k4', customer: 'c', amount: 1 });

    expect([conflict.status, conflict.next?.action]).toEqual([422, 'use_original_arguments']);
    expect([invalid.status, invalid.next?.action]).toEqual([400, 'fix_arguments']);
    expect([missing.status, missing.next?.action]).toEqual([404, 'fix_arguments']);
    expect([read.status, read.next?.action]).toEqual([404, 'fix_arguments']);
    expect([anonymous.status, anonymous.next?.action]).toEqual([401, 'stop']);
  });
});

describe('the next step through the agent client', () => {
  it('passes the model the same next step as the server, and a call it gave up on to resume under its key', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant, 'ada');
    const client = new RetrysafeClient({ baseUrl: api.url, token, deadlineMs: 300 });
    const body = { to: 'a@example.com', subject: 's', body: 'b' };
    const { tool: held, started, release: hold } = heldSendEmail();
    const running = api.runtime.invoke(
      held,
      { tenant, user: 'ada' },
      { idempotency_key: 'held', ...body },
      deadline(5_000),
    );
    await started.opened;

    const gaveUp = await answerToolCall(client, {
      tool: 'send_email',
      input: { ...body, idempotency_key: 'held' },
      toolCallId: 'call_1',
    });
    hold.open();
    await running;
    const resumed = await answerToolCall(client, {
      tool: 'send_email',
      input: { ...body, idempotency_key: 'held' },
      toolCallId: 'call_2',
    });
    const direct = await api.post('/tools/send_email', token, { idempotency_key: 'held', ...body });

    expect(gaveUp).toMatchObject({
      ok: false,
      key: 'held',
      error: { code: 'gave_up' },
      next: { action: 'call_again', after_ms: expect.any(Number), message: expect.stringContaining('"held"') },
    });
    expect(resumed).toMatchObject({ ok: true, idempotent: true });
    expect((resumed as { next: unknown }).next).toEqual(direct.next);
  });
});

// Found by the review of issue 14, parts 1 and 3 (commits 41a1a82, 2ea7c26, 56416c6): each test below failed on
// the code as first committed (lib/api/next-step.ts, lib/mcp/server.ts, lib/idempotency/arguments.ts).

/** The official MCP client, validating structuredContent against the listed outputSchema (as mcp.test.ts does). */
async function connect(api: TestApi, token: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${api.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const client = new Client(
    { name: 'retrysafe-review', version: '1.0.0' },
    { jsonSchemaValidator: new AjvJsonSchemaValidator(new Ajv2020({ strict: false })) },
  );
  await client.connect(transport);
  await client.listTools();
  return client;
}

/** A tool call's result, or what it threw, as data a test can assert on. */
function settled<T>(promise: Promise<T>): Promise<T | { thrown: string }> {
  return promise.then(
    (value) => value,
    (error: unknown) => ({ thrown: String(error) }),
  );
}

describe('next steps of the registry tools over MCP and REST', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(() => api.close());
  afterEach(() => jest.restoreAllMocks());

  it('MCP get_invoice during a store outage answers a tool result with next, as GET /invoices does', async () => {
    const token = await api.token(newTenant());
    const throttled = () =>
      Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
        name: 'ProvisionedThroughputExceededException',
        $metadata: { httpStatusCode: 400 },
      });
    jest.spyOn(api.services.invoices, 'get').mockImplementation(() => Promise.reject(throttled()));
    const client = await connect(api, token);

    const rest = await api.get('/invoices/inv_any', token);
    const mcp = await settled(client.callTool({ name: 'get_invoice', arguments: { invoice_id: 'inv_any' } }));
    await client.close();

    // The REST read says "unavailable, call again after 1000 ms" ...
    expect([rest.status, rest.next?.action]).toEqual([503, 'call_again']);
    // ... the same read over MCP is a JSON-RPC error: no structuredContent, no next, the store's own message.
    expect(mcp).toMatchObject({
      isError: true,
      structuredContent: { ok: false, error: { code: 'unavailable' }, next: { action: 'call_again' } },
    });
  });

  it("a write's poll names a path only where a URL can carry the key: '..' is polled through get_operation", async () => {
    const tenant = newTenant();
    const token = await api.token(tenant, 'ada');
    const { tool: held, started, release } = heldSendEmail();
    const body = { idempotency_key: '..', to: 'a@example.com', subject: 's', body: 'b' };
    const running = api.runtime.invoke(held, { tenant, user: 'ada' }, body, deadline(5_000));
    await started.opened;

    const pending = await api.post('/tools/send_email', token, body);
    const client = await connect(api, token);
    const polled = await client.callTool({ name: 'get_operation', arguments: pending.next!.poll!.arguments });
    await client.close();
    release.open();
    await running;

    expect(pending.status).toBe(202);
    // Any URL client (fetch, curl, the SDKs) folds a dot segment, encoded or not: no path is offered.
    expect(pending.next?.poll).toEqual({
      tool: 'get_operation',
      arguments: { tool: 'send_email', idempotency_key: '..' },
    });
    expect(polled.structuredContent).toMatchObject({ ok: true, status: 'pending', key: '..' });
  });

  it("get_operation's not_found for an expired record does not say nothing was done", async () => {
    const token = await api.token(newTenant(), 'ada', '72h');
    const body = { idempotency_key: 'k-expired', customer: 'cus_ada', amount: 4_200 };
    const created = await api.post('/tools/create_invoice', token, body);
    const clock = movableClock();
    clock.advance((24 * 60 * 60 + 60) * 1000); // past the record's TTL (24 h): DynamoDB may delete it any time now

    const polled = await api.get('/tools/create_invoice/operations/k-expired', token);
    const invoice = await api.get(`/invoices/${created.body.receipt.invoice_id}`, token);

    expect(invoice.status).toBe(200); // the write ran
    expect(polled.status).toBe(404);
    expect(polled.next?.message).not.toMatch(/^Nothing was done/);
  });

  /**
   * A send_email key whose stored outcome is `conflict`: its first attempt dies in flight, and the
   * takeover (attempt 2) ends in a business ConflictError — refund's ProviderKeyReuseError does exactly
   * this — so the runtime stores the failure as the call's outcome ("an earlier attempt may have made
   * the effect").
   */
  async function storedConflict(key: string) {
    const tenant = newTenant();
    const token = await api.token(tenant, 'ada');
    const caller = { tenant, user: 'ada' };
    const body = { idempotency_key: key, to: 'a@example.com', subject: 's', body: 'b' };
    const hang = gate();
    let runs = 0;
    const crashing = defineTool({
      name: 'send_email',
      description: 'review: first attempt never returns, the takeover conflicts',
      args: sendEmailArgs,
      annotations: { destructiveHint: false, openWorldHint: true },
      async execute() {
        runs += 1;
        if (runs === 1) {
          await hang.opened;
          throw new Error('worker died');
        }
        throw new ConflictError('to: the provider holds another message for this send');
      },
    });
    const first = api.runtime.invoke(crashing, caller, body, deadline(400)).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 700)); // the first attempt's lock ends
    const takeover = await api.runtime.invoke(crashing, caller, body, deadline(5_000));
    expect(takeover).toMatchObject({ ok: false, error: { code: 'conflict' } }); // stored by attempt 2
    return {
      token,
      body,
      done: async () => {
        hang.open();
        await first;
      },
    };
  }

  it("get_operation's MCP answer for a stored conflict fits its outputSchema (the official client accepts it)", async () => {
    const { token, body, done } = await storedConflict('k-stored-conflict-mcp');
    const client = await connect(api, token);

    const polled = await settled(
      client.callTool({
        name: 'get_operation',
        arguments: { tool: 'send_email', idempotency_key: body.idempotency_key },
      }),
    );
    await client.close();
    await done();

    expect(polled).toMatchObject({
      structuredContent: { ok: false, idempotent: true, error: { code: 'conflict' }, next: { action: 'stop' } },
    });
  });

  it('the replay of a stored conflict does not tell the model to resend what it just sent', async () => {
    const { token, body, done } = await storedConflict('k-stored-conflict-rest');

    // The model, told "call again with the original arguments and this key", does so:
    const replay = await api.post('/tools/send_email', token, body);
    const followed = await api.post('/tools/send_email', token, body);
    await done();

    expect(followed.body).toEqual(replay.body); // the same stored answer, every time
    expect(followed.body).toMatchObject({ ok: false, idempotent: true, error: { code: 'conflict' } });
    expect(followed.next).toEqual({
      action: 'stop',
      message: expect.stringMatching(/^This call ended with this error/),
    });
    expect(followed.headers.get('idempotent-replayed')).toBe('true');
  });
});

describe('an MCP endpoint whose identity provider is down', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi({
      verifyToken: async () => {
        // As the JWKS verifier answers inside its 5 s negative cache.
        throw new VerifierUnavailableError('the issuer signing keys cannot be fetched', 5);
      },
      // API Gateway's authorizer still holds the keys (its own cache): the request reaches the function.
      authorizer: (token) => api.key.verify(token),
    });
  });
  afterAll(() => api.close());

  it('the 503’s next.after_ms is the Retry-After it sends', async () => {
    const reply = await api.request('POST', '/mcp', {
      token: await api.token('acme'),
      headers: { accept: 'application/json, text/event-stream' },
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });

    expect(reply.status).toBe(503);
    expect(reply.headers.get('retry-after')).toBe('5');
    expect(reply.next?.after_ms).toBe(Number(reply.headers.get('retry-after')) * 1000);
  });
});

describe('a write whose outcome is a stored internal failure', () => {
  // A receipt that is not plain JSON (a Date) fails after the effect ran: the runtime stores `internal`
  // as the call's outcome (releasing the claim would let a retry act twice). Every retry replays it.
  const effects = jest.fn();
  const badReceipt = defineToolModule({
    name: 'review_bad_receipt',
    description: 'review: acts, then returns a receipt that is not plain JSON',
    args: z.strictObject({ text: z.string() }),
    annotations: { destructiveHint: false, openWorldHint: false },
    access: {},
    async execute(args) {
      effects(args.text);
      return { receipt: { text: args.text, at: new Date() as unknown as string }, replayed: false };
    },
  });
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi({ tools: [badReceipt] });
  });
  afterAll(() => api.close());

  it('does not tell the model to call again forever: the replay of a stored failure is not call_again', async () => {
    const token = await api.token(newTenant());
    const body = { idempotency_key: 'k-internal', text: 'hello' };

    const first = await api.post('/tools/review_bad_receipt', token, body);
    // The model follows first.next: after 2000 ms, the same key and arguments.
    const followed = await api.post('/tools/review_bad_receipt', token, body);

    expect(first.body).toMatchObject({ ok: false, idempotent: false, error: { code: 'internal' } });
    expect(first.next?.action).toBe('stop');
    expect(effects).toHaveBeenCalledTimes(1); // the second answer is a replay of the stored outcome
    expect(followed.body).toEqual({ ...first.body, idempotent: true });
    expect(followed.next?.action).toBe('stop');
  });
});
