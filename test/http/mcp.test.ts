import { request as httpRequest } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import Ajv2020 from 'ajv/dist/2020';
import { startTestApi, type TestApi } from '../helpers/api';
import { heldSendEmail } from '../helpers/tools';
import { deadline, newTenant } from '../helpers/world';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

/** The official MCP client over Streamable HTTP, with a bearer token and a JSON Schema 2020-12 validator. */
async function connect(token: string, protocolVersion?: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${api.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const client = new Client(
    { name: 'retrysafe-test', version: '1.0.0' },
    { jsonSchemaValidator: new AjvJsonSchemaValidator(new Ajv2020({ strict: false })) },
  );
  if (protocolVersion) transport.setProtocolVersion(protocolVersion);
  await client.connect(transport);
  await client.listTools(); // the client validates structuredContent against the listed outputSchema
  return client;
}

/** A raw JSON-RPC POST to /mcp, for what the SDK client hides (status codes, headers). */
async function rawMcp(message: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${api.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(message),
  });
  // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC replies are asserted structurally
  const body: any = await response.json().catch(() => undefined);
  return { status: response.status, headers: response.headers, body };
}

async function invoiceFor(token: string, amount = 4_200): Promise<string> {
  const created = await api.post('/tools/create_invoice', token, {
    idempotency_key: `inv-${Math.random()}`,
    customer: 'cus_ada',
    amount,
  });
  return created.body.receipt.invoice_id;
}

describe('MCP tools/list', () => {
  it('lists every write with its schemas, key kinds and annotations, and the reads as read-only tools', async () => {
    const client = await connect(await api.token(newTenant()));

    const { tools } = await client.listTools();
    await client.close();

    const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
    expect(Object.keys(byName).sort()).toEqual(
      [
        'close_ticket',
        'create_invoice',
        'create_ticket',
        'get_invoice',
        'get_operation',
        'get_ticket',
        'refund',
        'send_email',
      ].sort(),
    );
    expect(byName.refund).toMatchObject({
      inputSchema: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        required: ['idempotency_key', 'invoice_id', 'amount'],
      },
      outputSchema: { type: 'object', anyOf: expect.any(Array) },
      annotations: { readOnlyHint: false, idempotentHint: true, destructiveHint: true, openWorldHint: true },
      _meta: {
        'retrysafe/idempotency': { client_key: true, natural_key: ['invoice_id'], dedupe_window_seconds: null },
      },
    });
    expect(byName.refund!.description).toMatch(/same key on every retry/);
    expect(byName.send_email!._meta).toMatchObject({ 'retrysafe/idempotency': { dedupe_window_seconds: 600 } });
    for (const read of ['get_invoice', 'get_ticket', 'get_operation']) {
      expect(byName[read]!.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    }
    expect(byName.get_invoice!.inputSchema.required).toEqual(['invoice_id']);
    expect(byName.get_operation!.inputSchema.required).toEqual(['tool', 'idempotency_key']);
  });

  it.each(['2025-06-18', '2025-11-25'])('speaks protocol revision %s', async (version) => {
    const reply = await rawMcp(
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      },
      { authorization: `Bearer ${await api.token(newTenant())}` },
    );

    expect(reply.status).toBe(200);
    expect(reply.body.result).toMatchObject({ protocolVersion: version, serverInfo: { name: 'retrysafe' } });
  });
});

describe('MCP tools/call', () => {
  it('refunds once: the same key again answers the identical receipt with idempotent: true', async () => {
    const token = await api.token(newTenant());
    const invoiceId = await invoiceFor(token);
    const client = await connect(token);
    const args = { idempotency_key: 'r1', invoice_id: invoiceId, amount: 4_200 };

    const first = await client.callTool({ name: 'refund', arguments: args });
    const replay = await client.callTool({ name: 'refund', arguments: args });
    await client.close();

    expect(first.isError).toBe(false);
    expect(first.structuredContent).toMatchObject({ ok: true, idempotent: false, key: 'r1' });
    expect(replay.isError).toBe(false);
    expect(replay.structuredContent).toEqual({ ...(first.structuredContent as object), idempotent: true });
    expect((replay.content as Array<{ text: string }>)[0]!.text).toMatch(/^Already done/);
    const invoice = await api.get(`/invoices/${invoiceId}`, token);
    expect(invoice.body.invoice.refund).toEqual((first.structuredContent as { receipt: unknown }).receipt);
  });

  it('answers a key reused with other arguments as a conflict (isError), never an HTTP error', async () => {
    const token = await api.token(newTenant());
    const client = await connect(token);
    await client.callTool({ name: 'create_invoice', arguments: { idempotency_key: 'k1', customer: 'c', amount: 100 } });

    const conflict = await client.callTool({
      name: 'create_invoice',
      arguments: { idempotency_key: 'k1', customer: 'c', amount: 999 },
    });
    const invalid = await client.callTool({ name: 'create_invoice', arguments: { idempotency_key: 'k2', amount: 1 } });
    const missing = await client.callTool({
      name: 'refund',
      arguments: { idempotency_key: 'k3', invoice_id: 'inv_nope', amount: 1 },
    });
    await client.close();

    expect(conflict.isError).toBe(true);
    expect(conflict.structuredContent).toEqual({
      ok: false,
      error: { code: 'conflict', message: expect.stringMatching(/^idempotency_key/) },
    });
    expect((conflict.content as Array<{ text: string }>)[0]!.text).toMatch(/^conflict: .*Nothing was done/);
    expect(invalid.structuredContent).toMatchObject({ ok: false, error: { code: 'invalid_args' } });
    expect(missing.structuredContent).toMatchObject({ ok: false, error: { code: 'not_found' } });
  });

  it('answers pending (not an error) while the first call with the key still runs, and says what to do', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant, 'ada');
    const { tool: held, started, release: hold } = heldSendEmail();
    const args = { idempotency_key: 'k1', to: 'a@example.com', subject: 's', body: 'b' };
    const running = api.runtime.invoke(held, { tenant, user: 'ada' }, args, deadline(5_000));
    const client = await connect(token);
    await started.opened;

    const pending = await client.callTool({ name: 'send_email', arguments: args });
    hold.open();
    await running;
    const after = await client.callTool({ name: 'send_email', arguments: args });
    await client.close();

    expect(pending.isError).toBe(false);
    expect(pending.structuredContent).toEqual({
      ok: false,
      status: 'pending',
      key: 'k1',
      retry_after_ms: expect.any(Number),
    });
    expect((pending.content as Array<{ text: string }>)[0]!.text).toMatch(/same idempotency_key.*get_operation/);
    expect(after.structuredContent).toMatchObject({ ok: true, idempotent: true, receipt: { message_id: 'msg_held' } });
  });

  it('keeps tenants apart: another tenant can neither read the invoice nor the operation', async () => {
    const owner = await api.token(newTenant());
    const invoiceId = await invoiceFor(owner);
    const ownerClient = await connect(owner);
    await ownerClient.callTool({
      name: 'refund',
      arguments: { idempotency_key: 'r1', invoice_id: invoiceId, amount: 4_200 },
    });
    await ownerClient.close();
    const intruder = await connect(await api.token(newTenant()));

    const invoice = await intruder.callTool({ name: 'get_invoice', arguments: { invoice_id: invoiceId } });
    const operation = await intruder.callTool({
      name: 'get_operation',
      arguments: { tool: 'refund', idempotency_key: 'r1' },
    });
    const refund = await intruder.callTool({
      name: 'refund',
      arguments: { idempotency_key: 'r1', invoice_id: invoiceId, amount: 4_200 },
    });
    await intruder.close();

    for (const result of [invoice, operation, refund]) {
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toMatchObject({ ok: false, error: { code: 'not_found' } });
    }
  });

  it('takes the request-level idempotencyKey of the request-idempotency extension when the arguments carry none', async () => {
    const token = await api.token(newTenant());
    const invoiceId = await invoiceFor(token);
    const client = await connect(token);
    const call = (params: Record<string, unknown>) =>
      client.request({ method: 'tools/call', params: { name: 'refund', ...params } }, CallToolResultSchema);

    const first = await call({ arguments: { invoice_id: invoiceId, amount: 4_200 }, idempotencyKey: 'req-1' });
    const again = await call({ arguments: { invoice_id: invoiceId, amount: 4_200 }, idempotencyKey: 'req-1' });
    const both = await call({
      arguments: { idempotency_key: 'other', invoice_id: invoiceId, amount: 4_200 },
      idempotencyKey: 'req-1',
    });
    const neither = await call({ arguments: { invoice_id: invoiceId, amount: 4_200 } });
    await client.close();

    expect(first.structuredContent).toMatchObject({ ok: true, idempotent: false, key: 'req-1' });
    expect(again.structuredContent).toEqual({ ...(first.structuredContent as object), idempotent: true });
    expect(both.structuredContent).toMatchObject({ ok: false, error: { code: 'invalid_args' } });
    expect(neither.structuredContent).toMatchObject({
      ok: false,
      error: { code: 'invalid_args', message: expect.stringMatching(/^idempotency_key/) },
    });
  });

  it('holds the key for the model that forgets it: an identical send_email with a fresh key sends once', async () => {
    const tenant = newTenant();
    const client = await connect(await api.token(tenant));
    const email = { to: 'ada@example.com', subject: 'Your refund', body: 'It is on its way.' };

    const first = await client.callTool({ name: 'send_email', arguments: { idempotency_key: 'turn-1', ...email } });
    const forgot = await client.callTool({ name: 'send_email', arguments: { idempotency_key: 'turn-2', ...email } });
    await client.close();

    const receipt = (first.structuredContent as { receipt: { message_id: string } }).receipt;
    expect(forgot.structuredContent).toEqual({
      ...(first.structuredContent as object),
      idempotent: true,
      key: 'turn-2',
    });
    expect(await api.services.outbox.get(tenant, receipt.message_id)).toMatchObject({ status: 'delivered' });
  });

  it('answers an unknown tool with a JSON-RPC error', async () => {
    const client = await connect(await api.token(newTenant()));

    await expect(client.callTool({ name: 'launch_rockets', arguments: {} })).rejects.toBeInstanceOf(McpError);
    await client.close();
  });
});

describe('MCP authorization and transport', () => {
  it('answers 401 with the RFC 9728 resource_metadata challenge, and serves that metadata', async () => {
    const missing = await rawMcp({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const invalid = await rawMcp({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, { authorization: 'Bearer nope' });
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(missing.headers.get('www-authenticate') ?? '')?.[1];
    const metadata = await (await fetch(metadataUrl!)).json();

    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${api.url}/.well-known/oauth-protected-resource/mcp"`,
    );
    expect(invalid.status).toBe(401);
    expect(invalid.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
    expect(metadata).toEqual({
      resource: `${api.url}/mcp`,
      authorization_servers: [api.key.settings.issuer],
      bearer_methods_supported: ['header'],
      resource_name: 'retrysafe',
    });
  });

  it('answers GET and DELETE on /mcp with 405: stateless, no stream, no session', async () => {
    const token = await api.token(newTenant());

    const get = await fetch(`${api.url}/mcp`, { headers: { authorization: `Bearer ${token}` } });
    const del = await fetch(`${api.url}/mcp`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });

    expect([get.status, del.status]).toEqual([405, 405]);
  });

  it.each([
    ['a foreign Host', { host: 'evil.example' }],
    ['a foreign Origin', { origin: 'http://evil.example' }],
  ])('refuses %s on the loopback server (DNS rebinding)', async (_label, headers) => {
    const port = new URL(api.url).port;
    const status = await new Promise<number>((resolve, reject) => {
      const request = httpRequest(
        {
          host: '127.0.0.1',
          port,
          path: '/mcp',
          method: 'POST',
          headers: { host: `127.0.0.1:${port}`, 'content-type': 'application/json', ...headers },
        },
        (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        },
      );
      request.on('error', reject);
      request.end('{}');
    });

    expect(status).toBe(403);
  });
});
