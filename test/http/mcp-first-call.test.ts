// A tools/call reads none of the answers' schemas (built on first use, c2ccc3a; test/unit/answer-schemas.test.ts):
// the MCP server's tools/call handler reads `tool.listing.annotations` to tell a write from a read
// (lib/mcp/server.ts), and a listing builds all of its fields on first read (lib/mcp/tools.ts `listingOf`) —
// the input and output JSON Schemas, the answer union, `pendingAnswer` and `nextStepSchema`. Found by the
// review of issue 16 (5e351fb..41dbd47): they were built on the first tools/call of each tool in a container.
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2WithJWTAuthorizer, Context } from 'aws-lambda';
import { createWorld, type World } from '../helpers/world';
import { loadWithZodBuildersCounted } from '../helpers/zod-builders';

const COUNTED = ['object', 'strictObject', 'looseObject', 'union', 'lazy', 'toJSONSchema'] as const;

type LambdaHandler = (event: APIGatewayProxyEventV2WithJWTAuthorizer, context: Context) => Promise<{ body: string }>;

/**
 * The MCP function as lambdas/mcp.ts composes it (services from the environment, the registry's tools, the
 * runtime, the domain reads, `get_operation`), loaded in a registry of its own with zod/mini's object, union,
 * lazy and JSON Schema builders counted. Only the token check is a stub (any bearer token is `tenant`/`ada`).
 */
function loadMcpFunction(tenant: string) {
  const { calls, loaded } = loadWithZodBuildersCounted(COUNTED, () => {
    const { createServices } = require('../../app/services') as typeof import('../../app/services');
    const { mcpHandler } = require('../../lib/mcp/http') as typeof import('../../lib/mcp/http');
    const { mcpTools } = require('../../lib/mcp/tools') as typeof import('../../lib/mcp/tools');
    const { READS } = require('../../app/reads') as typeof import('../../app/reads');
    const { TOOLS } = require('../../app/tools') as typeof import('../../app/tools');
    const { createToolRuntime } = require('../../lib/lambda/runtime') as typeof import('../../lib/lambda/runtime');
    const services = createServices(process.env);
    const handler = mcpHandler({
      tools: mcpTools(TOOLS, services, createToolRuntime(services), READS),
      verifyToken: async () => ({ tenant_id: tenant, sub: 'ada' }),
      issuer: 'https://issuer.example',
      logger: services.logger,
    }) as unknown as LambdaHandler;
    return { handler, destroy: () => services.client.destroy() };
  });
  return { calls, ...loaded };
}

/** One `tools/call` as API Gateway hands it to the MCP function. */
function toolsCall(name: string, args: Record<string, unknown>): APIGatewayProxyEventV2WithJWTAuthorizer {
  const domainName = 'abc123.execute-api.us-east-1.amazonaws.com';
  return {
    version: '2.0',
    routeKey: 'POST /mcp',
    rawPath: '/mcp',
    rawQueryString: '',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
      authorization: 'Bearer any',
      host: domainName,
      'x-forwarded-proto': 'https',
    },
    requestContext: {
      accountId: '123456789012',
      apiId: 'abc123',
      domainName,
      domainPrefix: 'abc123',
      http: { method: 'POST', path: '/mcp', protocol: 'HTTP/1.1', sourceIp: '192.0.2.1', userAgent: 'mcp-first-call' },
      requestId: randomUUID(),
      routeKey: 'POST /mcp',
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
      authorizer: { principalId: '', integrationLatency: 0, jwt: { claims: {}, scopes: [] } },
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
    isBase64Encoded: false,
  };
}

function context(): Context {
  const end = Date.now() + 10_000;
  return { getRemainingTimeInMillis: () => end - Date.now() } as Context;
}

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());

describe("a tools/call over MCP builds none of the answers' schemas", () => {
  it("a write's first tools/call over MCP builds no schema and no JSON Schema", async () => {
    const tenant = `mcp-first-call-${randomUUID()}`;
    const invoice = await world.seedInvoice(tenant);
    const mcp = loadMcpFunction(tenant);
    try {
      mcp.calls.length = 0; // what the modules built at load is c2ccc3a's own test

      const reply = await mcp.handler(
        toolsCall('refund', { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: invoice.amount }),
        context(),
      );

      expect(JSON.parse(reply.body)).toMatchObject({ result: { structuredContent: { ok: true, idempotent: false } } });
      expect(mcp.calls).toEqual([]);
    } finally {
      mcp.destroy();
    }
  });

  it('the cost is the first call of each tool in a container: a second tools/call builds nothing', async () => {
    const tenant = `mcp-first-call-${randomUUID()}`;
    const invoice = await world.seedInvoice(tenant);
    const mcp = loadMcpFunction(tenant);
    const refund = { invoice_id: invoice.invoice_id, amount: invoice.amount };
    try {
      await mcp.handler(toolsCall('refund', { idempotency_key: 'k1', ...refund }), context());
      mcp.calls.length = 0;

      const reply = await mcp.handler(toolsCall('refund', { idempotency_key: 'k1', ...refund }), context());

      expect(JSON.parse(reply.body)).toMatchObject({ result: { structuredContent: { ok: true, idempotent: true } } });
      expect(mcp.calls).toEqual([]);
    } finally {
      mcp.destroy();
    }
  });

  it("a read's first tools/call over MCP (get_operation) builds no schema and no JSON Schema", async () => {
    const mcp = loadMcpFunction(`mcp-first-call-${randomUUID()}`);
    try {
      mcp.calls.length = 0;

      const reply = await mcp.handler(
        toolsCall('get_operation', { tool: 'refund', idempotency_key: 'nope' }),
        context(),
      );

      expect(JSON.parse(reply.body)).toMatchObject({ result: { structuredContent: { ok: false } } });
      expect(mcp.calls).toEqual([]);
    } finally {
      mcp.destroy();
    }
  });
});
