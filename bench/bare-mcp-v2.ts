import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import type { APIGatewayProxyEventV2WithJWTAuthorizer, Context } from 'aws-lambda';
import * as z from 'zod/v4';
import { bareRefund } from './bare-powertools';

const refund = bareRefund();

/** What each request brings the tool: the authorizer's claims and the invocation's context. */
interface Invocation {
  readonly claims: Record<string, string>;
  readonly context: Context;
}

/**
 * The official SDK v2's minimal MCP server, as its serving entry builds it (`createMcpHandler`: a server per
 * request, both protocol eras): one `refund` tool on the bare Powertools refund — bench/bare-mcp.ts on the
 * SDK v2. The identity comes from the authorizer's claims: it verifies no token itself.
 */
const mcp = createMcpHandler(function bareServer() {
  const server = new McpServer({ name: 'bare', version: '0.0.0' });
  server.registerTool(
    'refund',
    {
      description: 'Refund an invoice in full.',
      inputSchema: z.object({ idempotency_key: z.string(), invoice_id: z.string(), amount: z.number().int() }),
    },
    async function callRefund(args, ctx) {
      const { claims, context } = ctx.http!.authInfo!.extra as unknown as Invocation;
      const answer = await refund(
        { tenant: claims.tenant_id!, user: claims.sub!, key: args.idempotency_key, ...args },
        context,
      );
      return { content: [{ type: 'text', text: JSON.stringify(answer) }], isError: !answer.ok };
    },
  );
  return server;
});

export async function handler(event: APIGatewayProxyEventV2WithJWTAuthorizer, context: Context) {
  const claims = event.requestContext.authorizer.jwt.claims as Record<string, string>;
  const request = new Request(`https://${event.requestContext.domainName}${event.rawPath}`, {
    method: 'POST',
    headers: event.headers as Record<string, string>,
    body: event.body ?? '',
  });
  const invocation: Invocation = { claims, context };
  const response = await mcp.fetch(request, {
    authInfo: { token: '', clientId: claims.sub!, scopes: [], extra: { ...invocation } },
  });
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return { statusCode: response.status, headers, body: await response.text() };
}
