/**
 * Review of issue 35's MCP leg (h-mcp2), raw JSON-RPC as the spec text writes it: each test is a finding
 * of the review, failing on main until it is fixed; each cites the sentence it holds. The spec texts: the tasks extension
 * (modelcontextprotocol/ext-tasks, specification/draft/tasks.md), and 2026-07-28's versioning and
 * Streamable HTTP pages (modelcontextprotocol/modelcontextprotocol, docs/specification/2026-07-28).
 */
import { TASKS_EXTENSION } from '../../lib/mcp/tasks';
import { startTestApi, type TestApi } from '../helpers/api';
import { newTenant } from '../helpers/world';

const MODERN = '2026-07-28';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

function envelope(protocolVersion = MODERN, tasks = true) {
  return {
    'io.modelcontextprotocol/protocolVersion': protocolVersion,
    'io.modelcontextprotocol/clientCapabilities': tasks ? { extensions: { [TASKS_EXTENSION]: {} } } : {},
    'io.modelcontextprotocol/clientInfo': { name: 'review', version: '1.0.0' },
  };
}

async function rawMcp(token: string, message: unknown, headers: Record<string, string>) {
  const response = await fetch(`${api.url}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
      ...headers,
    },
    body: JSON.stringify(message),
  });
  const text = await response.text();
  // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC replies are asserted structurally
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: response.status, body, contentType: response.headers.get('content-type') };
}

/** One 2026-07-28 request with every header the transport requires (`Mcp-Name`: the tool, or the task id). */
async function modern(token: string, id: number, method: string, params: Record<string, unknown>) {
  const name = method === 'tools/call' ? params.name : params.taskId;
  return rawMcp(
    token,
    { jsonrpc: '2.0', id, method, params: { ...params, _meta: envelope() } },
    {
      'mcp-protocol-version': MODERN,
      'mcp-method': method,
      ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
    },
  );
}

describe('protocol versions (2026-07-28 "Versioning", Streamable HTTP "Protocol Version Header")', () => {
  // "it MUST respond with an UnsupportedProtocolVersionError listing the versions it does support" — the
  // spec's own example lists ["2026-07-28", "2025-11-25"]; this server serves 2025-11-25 on the same URL.
  it('lists every version it serves in -32022 data.supported, 2025-11-25 included', async () => {
    const token = await api.token(newTenant());

    const { status, body } = await rawMcp(
      token,
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope('2099-01-01') } },
      { 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' },
    );

    expect(status).toBe(400);
    expect(body.error.code).toBe(-32022);
    expect(body.error.data.supported).toEqual(expect.arrayContaining([MODERN, '2025-11-25']));
  });

  // "If the server does not implement the requested protocol version (whether the version is unknown to the
  // server ...), it MUST respond with 400 Bad Request and an UnsupportedProtocolVersionError".
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

  // "If the server does not implement the requested RPC method, it MUST respond with 404 Not Found and a
  // JSON-RPC error with code -32601".
  it('answers subscriptions/listen, which it does not implement, with 404 and -32601', async () => {
    const token = await api.token(newTenant());

    const { status, body } = await modern(token, 7, 'subscriptions/listen', {
      notifications: { toolsListChanged: true },
    });

    expect(body.error.code).toBe(-32601);
    expect(status).toBe(404);
  }, 5_000);
});
