import { mkdtempSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import Ajv2020 from 'ajv/dist/2020';
import { createJwksVerifier } from '../../lib/auth/jwks-verifier';
import type { TokenVerifier } from '../../lib/auth/token-claims';
import { DevSigningKey } from '../../lib/local/dev-auth';
import { startTestApi, type TestApi } from '../helpers/api';
import { heldSendEmail } from '../helpers/held-send-email';
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

/** `PORT` in a header value stands for the server's own port. */
/** The next step of every replay: done before, nothing done now, not to be repeated. */
const REPLAYED = { action: 'none', message: expect.stringMatching(/^Already done: .*Do not repeat it\.$/) };

function withPort(headers: Record<string, string>, url: string): Record<string, string> {
  const { port } = new URL(url);
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, value.replace('PORT', port)]));
}

/**
 * `GET /health` (public: 200 once past the DNS-rebinding guard, 403 if refused there) with exactly these
 * Host and Origin headers, which fetch would not send as given.
 */
async function loopbackRequest(url: string, headers: Record<string, string>): Promise<{ status: number }> {
  const status = await new Promise<number>((resolve, reject) => {
    const request = httpRequest(
      {
        host: '127.0.0.1',
        port: new URL(url).port,
        path: '/health',
        method: 'GET',
        headers,
      },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    request.on('error', reject);
    request.end();
  });
  return { status };
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
    // MCP's default dialect is 2020-12: no schema names one.
    for (const tool of tools)
      expect([tool.inputSchema.$schema, tool.outputSchema?.$schema]).toEqual([undefined, undefined]);
  });

  it("names the reads' answer fields in their output schemas, and every answer's next step", async () => {
    const client = await connect(await api.token(newTenant()));
    const { tools } = await client.listTools();
    await client.close();
    const outputOf = (name: string) => JSON.stringify(tools.find((tool) => tool.name === name)!.outputSchema);

    for (const field of ['invoice_id', 'customer', 'amount', 'currency', 'refunded', 'refund']) {
      expect(outputOf('get_invoice')).toContain(`"${field}"`);
    }
    for (const field of ['ticket_key', 'title', 'status', 'resolution'])
      expect(outputOf('get_ticket')).toContain(`"${field}"`);
    for (const field of ['completed', 'pending', 'abandoned', 'receipt']) {
      expect(outputOf('get_operation')).toContain(`"${field}"`);
    }
    for (const tool of tools) {
      expect(outputOf(tool.name)).toContain('"next"');
      expect(outputOf(tool.name)).toContain('"use_original_arguments"');
    }
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
    expect(first.structuredContent).toMatchObject({
      next: { action: 'none', message: expect.stringMatching(/^Done/) },
    });
    expect(replay.structuredContent).toEqual({
      ...(first.structuredContent as object),
      idempotent: true,
      next: REPLAYED,
    });
    expect((replay.content as Array<{ text: string }>)[0]!.text).toMatch(/^Already done.*Do not repeat it/);
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
      next: { action: 'use_original_arguments', message: expect.stringMatching(/original arguments/) },
    });
    expect((conflict.content as Array<{ text: string }>)[0]!.text).toMatch(/^conflict: .*Nothing was done/);
    expect(invalid.structuredContent).toMatchObject({
      ok: false,
      error: { code: 'invalid_args' },
      next: { action: 'fix_arguments' },
    });
    expect(missing.structuredContent).toMatchObject({
      ok: false,
      error: { code: 'not_found' },
      next: { action: 'fix_arguments' },
    });
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
    const waitMs = (pending.structuredContent as { retry_after_ms: number }).retry_after_ms;
    expect(pending.structuredContent).toEqual({
      ok: false,
      status: 'pending',
      key: 'k1',
      retry_after_ms: expect.any(Number),
      next: {
        action: 'call_again',
        after_ms: waitMs,
        poll: {
          tool: 'get_operation',
          arguments: { tool: 'send_email', idempotency_key: 'k1' },
          path: '/tools/send_email/operations/k1',
        },
        message: expect.stringContaining(`After ${waitMs} ms, call send_email again with the same idempotency_key`),
      },
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
    expect(again.structuredContent).toEqual({
      ...(first.structuredContent as object),
      idempotent: true,
      next: REPLAYED,
    });
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
      next: REPLAYED,
    });
    expect(await api.services.outbox.get(tenant, receipt.message_id)).toMatchObject({ status: 'delivered' });
  });

  it('answers an unknown tool with a JSON-RPC error whose message carries its prefix once', async () => {
    const token = await api.token(newTenant());
    const client = await connect(token);

    const thrown = await client.callTool({ name: 'launch_rockets', arguments: {} }).catch((error) => error);
    await client.close();
    const raw = await rawMcp(
      { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'launch_rockets', arguments: {} } },
      { authorization: `Bearer ${token}` },
    );

    expect(thrown).toBeInstanceOf(McpError);
    expect(thrown.message).toBe('MCP error -32602: Unknown tool: launch_rockets');
    expect(raw.body).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32602, message: 'Unknown tool: launch_rockets' },
    });
  });
});

describe('MCP authorization and transport', () => {
  it('refuses a request without a valid token at the authorizer, and serves the RFC 9728 metadata clients fall back to', async () => {
    const missing = await rawMcp({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const invalid = await rawMcp({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, { authorization: 'Bearer nope' });
    // MCP 2025-11-25: without resource_metadata in the challenge, a client asks the path-aware well-known URI.
    const metadata = await (await fetch(`${api.url}/.well-known/oauth-protected-resource/mcp`)).json();

    expect([missing.status, invalid.status]).toEqual([401, 401]);
    expect(missing.body).toMatchObject({
      ok: false,
      error: { code: 'unauthorized', message: 'authorization: a bearer token is required' },
    });
    expect(metadata).toEqual({
      resource: `${api.url}/mcp`,
      authorization_servers: [api.url],
      bearer_methods_supported: ['header'],
      resource_name: 'retrysafe',
    });
  });

  it('names its issuer as a URL, the server own, and accepts the tokens minted for it, not for another server', async () => {
    const metadata = (await (await fetch(`${api.url}/.well-known/oauth-protected-resource/mcp`)).json()) as {
      authorization_servers: string[];
    };
    const listTools = { jsonrpc: '2.0', id: 1, method: 'tools/list' };

    const minted = await rawMcp(listTools, { authorization: `Bearer ${await api.token(newTenant())}` });
    const otherServer = await rawMcp(listTools, {
      authorization: `Bearer ${await api.tokenWith({ JWT_ISSUER: 'http://127.0.0.1:1' })}`,
    });

    for (const issuer of metadata.authorization_servers) {
      expect(new URL(issuer).origin).toBe(issuer); // a URL, as clients parse it (mcp-remote, the SDK)
    }
    expect(metadata.authorization_servers).toEqual([api.url]);
    expect(minted.status).toBe(200);
    expect(minted.body.result.tools.length).toBeGreaterThan(0);
    expect(otherServer.status).toBe(401);
    expect(otherServer.body.error.message).toBe(
      'authorization: the token was issued by another issuer than this server trusts (iss)',
    );
  });

  it('says in the 401 that a token expired', async () => {
    const expired = await rawMcp(
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { authorization: `Bearer ${await api.token(newTenant(), 'ada', '-1m')}` },
    );

    expect(expired.status).toBe(401);
    expect(expired.body.error.message).toBe('authorization: the token has expired; get a new one');
  });

  it('answers GET and DELETE on /mcp with 405: stateless, no stream, no session', async () => {
    const token = await api.token(newTenant());

    const get = await fetch(`${api.url}/mcp`, { headers: { authorization: `Bearer ${token}` } });
    const del = await fetch(`${api.url}/mcp`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });

    expect([get.status, del.status]).toEqual([405, 405]);
    expect([get.headers.get('allow'), del.headers.get('allow')]).toEqual(['POST', 'POST']);
  });

  it('refuses a JSON-RPC batch with a JSON-RPC error, and runs none of its calls', async () => {
    const token = await api.token(newTenant());
    const call = (id: number, key: string) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'create_invoice', arguments: { idempotency_key: key, customer: 'c', amount: 100 } },
    });

    const batch = await rawMcp([call(1, 'batch-1'), call(2, 'batch-2')], { authorization: `Bearer ${token}` });
    const operations = await Promise.all(
      ['batch-1', 'batch-2'].map((key) => api.get(`/tools/create_invoice/operations/${key}`, token)),
    );

    expect(batch.status).toBe(400);
    expect(batch.body).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: expect.stringMatching(/batches are not supported/) },
    });
    expect(operations.map((reply) => reply.status)).toEqual([404, 404]);
  });

  it('answers a large POST without a token before its body has arrived, and closes the connection after the answer', async () => {
    const { port } = new URL(api.url);
    const declared = 7 * 1024 * 1024;
    let sent = 0;

    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const request = httpRequest({
        host: '127.0.0.1',
        port,
        path: '/mcp',
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': declared },
      });
      request.on('response', resolve);
      request.on('error', reject);
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      request.write(chunk); // and nothing more until the answer
      sent += chunk.length;
    });
    response.resume();

    expect(response.statusCode).toBe(401);
    expect(response.headers.connection).toBe('close');
    expect(sent).toBeLessThan(declared);
    response.destroy();
  });

  it.each([
    ['127.0.0.1 on the server port', 200, { host: '127.0.0.1:PORT' }],
    ['localhost on another port (a port-forward)', 200, { host: 'localhost:8080' }],
    ['[::1] on another port', 200, { host: '[::1]:3000' }],
    ['localhost without a port', 200, { host: 'localhost' }],
    ['an upper-case loopback name', 200, { host: 'LOCALHOST:3000' }],
    ['a loopback Origin on another port', 200, { host: 'localhost:8080', origin: 'http://localhost:5173' }],
    ['a foreign Host', 403, { host: 'evil.example' }],
    ['a foreign Host on the server port', 403, { host: 'evil.example:PORT' }],
    ['a Host that only starts with a loopback name', 403, { host: '127.0.0.1.evil.example:PORT' }],
    ['a Host that only ends with one', 403, { host: 'evil.localhost.example' }],
    ['a Host with user info', 403, { host: 'evil.example@127.0.0.1' }],
    ['a foreign Origin', 403, { host: '127.0.0.1:PORT', origin: 'http://evil.example' }],
    ['a foreign Origin on the server port', 403, { host: '127.0.0.1:PORT', origin: 'http://evil.example:PORT' }],
    ['an opaque Origin', 403, { host: '127.0.0.1:PORT', origin: 'null' }],
    ['a tunnel name not admitted', 403, { host: 'tunnel.example' }],
  ])('DNS rebinding: %s → %i', async (_label, expected, headers) => {
    const reply = await loopbackRequest(api.url, withPort(headers, api.url));

    expect(reply.status).toBe(expected);
  });

  it('admits the host names ALLOWED_HOSTS lists, as Host and as Origin, and still no other', async () => {
    const tunneled = await startTestApi({ allowedHosts: ['tunnel.example', 'Proxy.Internal'] });
    try {
      const replies = await Promise.all(
        [
          { host: 'tunnel.example' },
          { host: 'tunnel.example:443', origin: 'https://tunnel.example' },
          { host: 'proxy.internal:8080' },
          { host: '127.0.0.1:3000' },
          { host: 'evil.example' },
          { host: 'tunnel.example', origin: 'https://evil.example' },
          { host: 'sub.tunnel.example' },
        ].map((headers) => loopbackRequest(tunneled.url, headers as Record<string, string>)),
      );

      expect(replies.map((reply) => reply.status)).toEqual([200, 200, 200, 200, 403, 403, 403]);
    } finally {
      await tunneled.close();
    }
  });
});

describe('MCP with a JWKS verifier (as deployed), behind an authorizer that holds the keys', () => {
  /** The identity provider's JWKS endpoint, on loopback: serving the key, failing, or never answering. */
  let idp: Server;
  let idpUrl: string;
  let mode: 'up' | 'down' | 'hang' = 'up';
  let fetches = 0;
  let now = 1_000_000;
  let jwksApi: TestApi;
  const listTools = { jsonrpc: '2.0', id: 1, method: 'tools/list' };

  beforeAll(async () => {
    idp = createServer(function jwks(_request, response) {
      fetches += 1;
      if (mode === 'hang') return; // no answer: the verifier's fetch times out
      if (mode === 'down') return void response.writeHead(500).end('down');
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ keys: [jwksApi.key.publicJwk()] }));
    });
    await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
    idpUrl = `http://127.0.0.1:${(idp.address() as AddressInfo).port}/.well-known/jwks.json`;
    // The gateway's authorizer holds the keys (its own cache); the MCP function fetches them itself.
    jwksApi = await startTestApi({
      verifyToken: (token) => verifier(token),
      authorizer: (token) => jwksApi.key.verify(token),
    });
  });
  /** The verifier of the server under test: a new one per test, so no key set is cached from another. */
  let verifier: TokenVerifier;
  beforeEach(() => {
    verifier = createJwksVerifier({
      issuer: jwksApi.key.settings.issuer,
      audience: jwksApi.key.settings.audience,
      jwksUrl: idpUrl,
      fetchTimeoutMs: 300,
      unavailableForMs: 5_000,
      now: () => now,
    });
  });
  afterAll(async () => {
    await jwksApi.close();
    idp.closeAllConnections();
    await new Promise((resolve) => idp.close(resolve));
  });

  async function mcpWith(token: string) {
    const response = await fetch(`${jwksApi.url}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${token}`,
      },
      body: JSON.stringify(listTools),
    });
    // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC replies are asserted structurally
    const body: any = await response.json();
    return { status: response.status, headers: response.headers, body };
  }

  it.each([
    ['fails', 'down'],
    ['times out', 'hang'],
  ] as const)(
    'answers 503 with Retry-After, not 401, when the JWKS fetch %s — and asks it again only after a short while',
    async (_label, failure) => {
      const token = await jwksApi.token(newTenant());
      mode = failure;
      now += 60_000; // past any earlier negative cache
      const before = fetches;

      const first = await mcpWith(token);
      const cached = await mcpWith(token);
      const fetchesWhileCached = fetches - before;
      mode = 'up';
      now += 5_000; // the negative cache has run out
      const recovered = await mcpWith(token);

      expect(first.status).toBe(503);
      expect(first.headers.get('retry-after')).toBe('5');
      expect(first.headers.get('www-authenticate')).toBeNull();
      expect(first.body).toMatchObject({ ok: false, error: { code: 'unavailable' } });
      expect(cached.status).toBe(503);
      expect(fetchesWhileCached).toBe(1);
      expect(recovered.status).toBe(200);
      expect(recovered.body.result.tools.length).toBeGreaterThan(0);
    },
  );

  it('answers 401 for a bad token at the authorizer: the function never sees it', async () => {
    mode = 'up';
    const foreign = await (
      await DevSigningKey.loadOrCreate({
        ...process.env,
        PORT: new URL(jwksApi.url).port,
        DEV_KEY_DIR: mkdtempSync(join(tmpdir(), 'retrysafe-other-')),
      })
    ).mint('acme', 'ada');

    const before = fetches;

    const reply = await mcpWith(foreign);

    expect(reply.status).toBe(401);
    expect(reply.body).toMatchObject({ ok: false, error: { code: 'unauthorized' } });
    expect(fetches - before).toBe(0);
  });
});
