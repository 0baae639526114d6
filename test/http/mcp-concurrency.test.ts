import { startTestApi, type TestApi } from '../helpers/api';
import { newTenant } from '../helpers/world';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

/** A raw `tools/call` POST to /mcp with a bearer token (no initialize: the server is stateless). */
async function callTool(token: string, name: string, args: Record<string, unknown>) {
  const response = await fetch(`${api.url}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC replies are asserted structurally
  return (await response.json()) as any;
}

/**
 * The MCP server is built once and reused; a process answering several requests at once serves each on
 * a server of its own. What is checked is the world: each caller's write lands under that caller.
 */
describe('MCP requests that arrive together', () => {
  it('are each served as their own caller, request after request', async () => {
    const tenants = Array.from({ length: 6 }, () => newTenant());
    const tokens = await Promise.all(tenants.map((tenant) => api.token(tenant)));

    for (const round of [1, 2]) {
      const answers = await Promise.all(
        tokens.map((token, index) =>
          callTool(token, 'create_invoice', {
            idempotency_key: `k${round}`,
            customer: tenants[index],
            amount: 100 * round + index,
          }),
        ),
      );

      for (const [index, answer] of answers.entries()) {
        const { receipt } = answer.result.structuredContent;
        const invoice = await api.get(`/invoices/${receipt.invoice_id}`, tokens[index]!);
        expect(invoice.body.invoice).toMatchObject({ customer: tenants[index], amount: 100 * round + index });
      }
    }
  });
});
