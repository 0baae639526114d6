/** The real MCP handler (handleMcp) in process, with a deadline per request: JSON-RPC without an HTTP server. */
import { Logger } from '@aws-lambda-powertools/logger';
import { READS } from '../../app/reads';
import { TOOLS } from '../../app/tools';
import type { ApiEvent } from '../../lib/http/event';
import type { Identity, InvocationDeadline } from '../../lib/idempotency/types';
import { handleMcp, type McpHttpDependencies, McpServerPool } from '../../lib/mcp/http';
import { type McpTool, mcpTools } from '../../lib/mcp/tools';
import type { World } from './world';

export function mcpOf(world: World, tools?: McpTool[]) {
  const deps: McpHttpDependencies = {
    tools: tools ?? mcpTools(TOOLS, world, world.runtime, READS),
    logger: new Logger({ logLevel: 'SILENT' }),
    issuer: 'http://localhost',
    // The token is the caller, as "tenant/user": the test names whom each request comes from.
    verifyToken: async (token) => {
      const [tenant_id, sub] = token.split('/');
      return { tenant_id: tenant_id ?? '', sub: sub ?? '' };
    },
  };
  const pool = new McpServerPool(deps);
  let id = 0;
  return async function rpc(
    caller: Identity,
    method: string,
    params: Record<string, unknown>,
    deadline: InvocationDeadline = { getRemainingTimeInMillis: () => 9_000 },
    // biome-ignore lint/suspicious/noExplicitAny: asserted structurally
  ): Promise<any> {
    const event = {
      rawPath: '/mcp',
      headers: {
        authorization: `Bearer ${caller.tenant}/${caller.user}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
      requestContext: { domainName: 'localhost', http: { method: 'POST' } },
    } as unknown as ApiEvent;
    const response = await handleMcp(deps, pool, event, deadline);
    return JSON.parse(response.body);
  };
}
