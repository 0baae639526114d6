import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { APIGatewayProxyEventV2WithJWTAuthorizer, Context } from 'aws-lambda';
import * as z from 'zod';
import { bareRefund } from './bare-powertools';

const refund = bareRefund();

/**
 * The bare baseline's `POST /mcp`: an official-SDK MCP server as the SDK's stateless example builds it (a
 * server and a transport per request), one `refund` tool on the bare Powertools refund. The identity comes
 * from the authorizer's claims: it verifies no token itself.
 */
export async function handler(event: APIGatewayProxyEventV2WithJWTAuthorizer, context: Context) {
  const claims = event.requestContext.authorizer.jwt.claims as Record<string, string>;
  const server = new McpServer({ name: 'bare', version: '0.0.0' });
  server.registerTool(
    'refund',
    {
      description: 'Refund an invoice in full.',
      inputSchema: { idempotency_key: z.string(), invoice_id: z.string(), amount: z.number().int() },
    },
    async function callRefund(args) {
      const answer = await refund(
        { tenant: claims.tenant_id!, user: claims.sub!, key: args.idempotency_key, ...args },
        context,
      );
      return { content: [{ type: 'text', text: JSON.stringify(answer) }], isError: !answer.ok };
    },
  );
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  try {
    await server.connect(transport);
    const request = new Request(`https://${event.requestContext.domainName}${event.rawPath}`, {
      method: 'POST',
      headers: event.headers as Record<string, string>,
      body: event.body ?? '',
    });
    const response = await transport.handleRequest(request);
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      headers[name] = value;
    });
    return { statusCode: response.status, headers, body: await response.text() };
  } finally {
    await server.close();
  }
}
