/**
 * MCP 2026-07-28 (stateless: no `initialize`, the protocol version and capabilities in each request's
 * `_meta`) beside 2025-11-25 on one endpoint, both on the official SDK v2 server (`lib/mcp/http.ts`
 * routes by the SDK's own classifier, `lib/mcp/server.ts` serves either era).
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startTestApi, type TestApi } from '../helpers/api';
import { MODERN, modernEnvelope, postMcp } from '../helpers/raw-mcp';
import { newTenant } from '../helpers/world';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

/** The SDK v2 client, negotiating (`server/discover` first, `initialize` only if that fails). */
async function connectV2(token: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${api.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'retrysafe-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(transport);
  return client;
}

/** A request's `_meta` envelope, as 2026-07-28 has every request carry it. */
function envelope(protocolVersion = MODERN) {
  return modernEnvelope({ protocolVersion });
}

/** A raw JSON-RPC POST to /mcp with exactly these headers (besides content type, accept and token). */
function rawMcp(token: string, message: unknown, headers: Record<string, string>) {
  return postMcp(api.url, token, message, headers);
}

describe('MCP 2026-07-28 with the SDK v2 client', () => {
  it('negotiates 2026-07-28 through server/discover, with no initialize', async () => {
    const client = await connectV2(await api.token(newTenant()));

    const version = client.getNegotiatedProtocolVersion();
    const discovered = client.getDiscoverResult();
    await client.close();

    expect(version).toBe(MODERN);
    expect(discovered?.supportedVersions).toContain(MODERN);
    expect(discovered?.capabilities.tools).toBeDefined();
  });

  it('lists the tools, calls a write once under its key (the retry replays), and reads its operation', async () => {
    const token = await api.token(newTenant());
    const client = await connectV2(token);
    const key = `inv-${Math.random()}`;
    const args = { idempotency_key: key, customer: 'cus_ada', amount: 4_200 };

    const { tools } = await client.listTools();
    const first = await client.callTool({ name: 'create_invoice', arguments: args });
    const again = await client.callTool({ name: 'create_invoice', arguments: args });
    const operation = await client.callTool({
      name: 'get_operation',
      arguments: { tool: 'create_invoice', idempotency_key: key },
    });
    await client.close();

    expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['create_invoice', 'get_operation']));
    // biome-ignore lint/suspicious/noExplicitAny: the answer object is asserted structurally
    const [a, b] = [first.structuredContent as any, again.structuredContent as any];
    expect(a).toMatchObject({ ok: true, idempotent: false, key });
    expect(b).toEqual({ ...a, idempotent: true, next: expect.objectContaining({ action: 'none' }) });
    expect(operation.structuredContent).toMatchObject({ ok: true, receipt: a.receipt });
    // Read over the HTTP API: the invoice the first call made, in the token's scope only.
    expect((await api.get(`/invoices/${a.receipt.invoice_id}`, token)).status).toBe(200);
    expect((await api.get(`/invoices/${a.receipt.invoice_id}`, await api.token(newTenant()))).status).toBe(404);
  });
});

describe('MCP 2026-07-28 wire rules, raw', () => {
  it('answers tools/list with resultType, ttlMs and cacheScope', async () => {
    const token = await api.token(newTenant());

    const { status, body } = await rawMcp(
      token,
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope() } },
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' },
    );

    expect(status).toBe(200);
    expect(body.result).toMatchObject({ resultType: 'complete', ttlMs: expect.any(Number), cacheScope: 'private' });
    expect(body.result.tools.length).toBeGreaterThan(0);
  });

  it("reads the request's idempotencyKey: one that differs from the arguments' is refused, and runs nothing", async () => {
    const token = await api.token(newTenant());
    const key = `inv-${Math.random()}`;

    const { status, body } = await rawMcp(
      token,
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'create_invoice',
          arguments: { idempotency_key: key, customer: 'cus_ada', amount: 4_200 },
          idempotencyKey: `${key}-other`,
          _meta: envelope(),
        },
      },
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'create_invoice' },
    );
    const operation = await api.get(`/tools/create_invoice/operations/${key}`, token);

    expect(status).toBe(200);
    expect(body.result).toMatchObject({ resultType: 'complete', isError: true });
    expect(body.result.structuredContent.error.code).toBe('invalid_args');
    expect(operation.status).toBe(404);
  });

  it('answers a call of an unknown tool with -32602', async () => {
    const token = await api.token(newTenant());

    const { body } = await rawMcp(
      token,
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'nope', arguments: {}, _meta: envelope() } },
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'nope' },
    );

    expect(body).toMatchObject({ id: 3, error: { code: -32602, message: 'Unknown tool: nope' } });
  });

  // Versioning: "it MUST respond with an UnsupportedProtocolVersionError listing the versions it does
  // support" — the spec's own example lists ["2026-07-28", "2025-11-25"]; this endpoint serves both, and
  // in `initialize` every earlier revision the SDK's stateless transport negotiates (review 3, V1: those
  // were served and not listed). Listed ⇔ served: each listed 2025-era revision is answered as itself.
  it('refuses an unknown protocol version with 400 and -32022, listing every version it serves, each of them served', async () => {
    const token = await api.token(newTenant());

    const { status, body } = await rawMcp(
      token,
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope('2099-01-01') } },
      { 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' },
    );

    expect(status).toBe(400);
    expect(body.error.code).toBe(-32022);
    expect(body.error.data.supported.slice(0, 2)).toEqual([MODERN, '2025-11-25']);
    expect(body.error.data.supported).toEqual(expect.arrayContaining(['2025-06-18', '2025-03-26', '2024-11-05']));
    expect(body.error.data.requested).toBe('2099-01-01');
    for (const version of body.error.data.supported.slice(1) as string[]) {
      const initialized = await rawMcp(
        token,
        {
          jsonrpc: '2.0',
          id: 2,
          method: 'initialize',
          params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'old', version: '1' } },
        },
        {},
      );
      expect([version, initialized.body.result?.protocolVersion]).toEqual([version, version]);
    }
  });

  // Streamable HTTP, "Protocol Version Header": "If the server does not implement the requested protocol
  // version (whether the version is unknown to the server ...), it MUST respond with 400 Bad Request and an
  // UnsupportedProtocolVersionError".
  it('answers an unknown MCP-Protocol-Version with -32022, not -32602 about a missing envelope', async () => {
    const token = await api.token(newTenant());

    const { status, body } = await rawMcp(
      token,
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
      { 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' },
    );

    expect(status).toBe(400);
    expect(body.error.code).toBe(-32022);
  });

  it('refuses a header that disagrees with the body with -32020', async () => {
    const token = await api.token(newTenant());

    const { body } = await rawMcp(
      token,
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope() } },
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call' },
    );

    expect(body.error.code).toBe(-32020);
  });

  it('refuses a tools/call whose Mcp-Name names another tool with -32020, and runs nothing', async () => {
    const token = await api.token(newTenant());
    const key = `inv-${Math.random()}`;

    const { body } = await rawMcp(
      token,
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'create_invoice',
          arguments: { idempotency_key: key, customer: 'cus_ada', amount: 4_200 },
          _meta: envelope(),
        },
      },
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'refund' },
    );
    const operation = await api.get(`/tools/create_invoice/operations/${key}`, token);

    expect(body.error.code).toBe(-32020);
    expect(operation.status).toBe(404);
  });

  // Streamable HTTP: "If the server does not implement the requested RPC method, it MUST respond with 404
  // Not Found and a JSON-RPC error with code -32601".
  it('refuses subscriptions/listen at once with 404 and -32601 (not implemented: a stream held open would hold the invocation to its timeout)', async () => {
    const token = await api.token(newTenant());

    const { status, body } = await rawMcp(
      token,
      {
        jsonrpc: '2.0',
        id: 7,
        method: 'subscriptions/listen',
        params: { notifications: { toolsListChanged: true }, _meta: envelope() },
      },
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'subscriptions/listen' },
    );

    expect(status).toBe(404);
    expect(body).toEqual({ jsonrpc: '2.0', id: 7, error: { code: -32601, message: expect.any(String) } });
  }, 5_000);

  it('still answers initialize with 2025-11-25 on the same endpoint', async () => {
    const token = await api.token(newTenant());

    const { status, body } = await rawMcp(
      token,
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      },
      {},
    );

    expect(status).toBe(200);
    expect(body.result.protocolVersion).toBe('2025-11-25');
    expect(body.result.capabilities.tasks).toBeDefined();
  });
});

let rpcId = 0;

describe('-32022 lists every revision served, whichever one the request named (review F4; lib/mcp/http.ts unservedVersion)', () => {
  function raw(token: string, version: string) {
    const message = {
      jsonrpc: '2.0',
      id: ++rpcId,
      method: 'tools/list',
      params: { _meta: { ...envelope(), 'io.modelcontextprotocol/protocolVersion': version } },
    };
    return rawMcp(token, message, { 'mcp-protocol-version': version, 'mcp-method': 'tools/list' });
  }

  it('a modern request naming 2025-11-25 in its envelope is -32022 with the same supported list as any unserved revision', async () => {
    const token = await api.token(newTenant());

    const unknown = await raw(token, '1900-01-01');
    const legacyInEnvelope = await raw(token, '2025-11-25');

    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatchObject({ code: -32022 });
    expect(unknown.body.error.data.supported.slice(0, 2)).toEqual(['2026-07-28', '2025-11-25']);
    expect(legacyInEnvelope.status).toBe(400);
    expect(legacyInEnvelope.body.error.code).toBe(-32022);
    // Versioning: the server lists "the versions it does support" — the same server, the same list.
    expect(legacyInEnvelope.body.error.data.supported).toEqual(unknown.body.error.data.supported);
  });
});

describe('a header that disagrees with the envelope is HeaderMismatch, not a version error (review F7; lib/mcp/http.ts unservedVersion)', () => {
  it('MCP-Protocol-Version: 2099-01-01 with an envelope naming 2026-07-28 is 400 -32020 (Streamable HTTP, "Server Validation")', async () => {
    const token = await api.token(newTenant());

    const { status, body } = await rawMcp(
      token,
      { jsonrpc: '2.0', id: ++rpcId, method: 'tools/list', params: { _meta: envelope() } },
      { 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' },
    );

    expect(status).toBe(400);
    // The body asks for 2026-07-28, which is served: the client did not request 2099-01-01; its headers are wrong.
    expect(body.error.code).toBe(-32020);
  });
});
