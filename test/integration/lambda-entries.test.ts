import type { APIGatewayProxyEventV2WithJWTAuthorizer, Context } from 'aws-lambda';
import { TOOLS } from '../../app/tools';
import type { LambdaHandler } from '../../lib/http/boundary';
import { createWorld, deadline, newTenant, type World } from '../helpers/world';

// The deployed entry points read their configuration from the environment the stack sets.
process.env.TOOL_NAMES = TOOLS.map((tool) => tool.name).join(',');
process.env.JWT_ISSUER = 'https://issuer.test';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());

/** The package's own entries (lib/lambda/entries), which the construct deploys for every app. */
const PACKAGE_OWN = new Set(['health', 'not_found', 'get_operation', 'erase_records']);

/** The handler an entry file exports (the example's in lambdas/, else the package's own), exactly as Lambda loads it. */
async function entry(name: string): Promise<LambdaHandler> {
  const loaded = PACKAGE_OWN.has(name)
    ? await import(`../../lib/lambda/entries/${name}`)
    : await import(`../../lambdas/${name}`);
  return (loaded as { handler: LambdaHandler }).handler;
}

function event(
  method: string,
  path: string,
  options: { tenant?: string; pathParameters?: Record<string, string>; body?: unknown } = {},
): APIGatewayProxyEventV2WithJWTAuthorizer {
  return {
    version: '2.0',
    rawPath: path,
    rawQueryString: '',
    headers: { 'content-type': 'application/json' },
    ...(options.pathParameters ? { pathParameters: options.pathParameters } : {}),
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    isBase64Encoded: false,
    requestContext: {
      domainName: 'api.example.com',
      http: { method, path },
      authorizer: { jwt: { claims: options.tenant ? { tenant_id: options.tenant, sub: 'ada' } : {}, scopes: [] } },
    },
  } as unknown as APIGatewayProxyEventV2WithJWTAuthorizer;
}

const context = () => deadline() as unknown as Context;

describe('the deployed entry points (lambdas/*.ts), called as Lambda calls them', () => {
  it('health answers 200 and not_found a JSON 404', async () => {
    expect((await (await entry('health'))(event('GET', '/health'), context())).statusCode).toBe(200);
    const missing = await (await entry('not_found'))(event('GET', '/nowhere'), context());
    expect([missing.statusCode, JSON.parse(missing.body).error.code]).toEqual([404, 'not_found']);
  });

  it('list_tools lists every registered tool', async () => {
    const reply = await (await entry('list_tools'))(event('GET', '/tools', { tenant: newTenant() }), context());

    expect(JSON.parse(reply.body).tools.map((tool: { name: string }) => tool.name)).toEqual(
      TOOLS.map((tool) => tool.name),
    );
  });

  it('get_invoice and get_ticket read the tenant’s own items', async () => {
    const tenant = newTenant();
    const invoice = await world.seedInvoice(tenant);

    const found = await (await entry('get_invoice'))(
      event('GET', `/invoices/${invoice.invoice_id}`, { tenant, pathParameters: { invoice_id: invoice.invoice_id } }),
      context(),
    );
    const ticket = await (await entry('get_ticket'))(
      event('GET', '/tickets/tck_none', { tenant, pathParameters: { ticket_key: 'tck_none' } }),
      context(),
    );

    expect(JSON.parse(found.body).invoice.invoice_id).toBe(invoice.invoice_id);
    expect(ticket.statusCode).toBe(404);
  });

  it('get_operation reads a write made through its own entry point, for the tools the stack names', async () => {
    const tenant = newTenant();
    const invoice = await world.seedInvoice(tenant);
    const body = { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: invoice.amount };
    const written = await (await entry('refund'))(event('POST', '/tools/refund', { tenant, body }), context());

    const poll = (tool: string) =>
      entry('get_operation').then((handler) =>
        handler(
          event('GET', `/tools/${tool}/operations/k1`, { tenant, pathParameters: { tool, key: 'k1' } }),
          context(),
        ),
      );
    const completed = await poll('refund');
    const unknown = await poll('launch_rockets');

    expect(JSON.parse(completed.body)).toEqual({
      ok: true,
      status: 'completed',
      key: 'k1',
      receipt: JSON.parse(written.body).receipt,
      next: { action: 'none', message: expect.any(String) },
    });
    expect(JSON.parse(unknown.body).error.message).toBe('tool: no tool launch_rockets');
  });

  it('mcp serves its resource metadata and answers 401 without a token, before any key is fetched', async () => {
    const mcp = await entry('mcp');

    const metadata = await mcp(event('GET', '/.well-known/oauth-protected-resource/mcp'), context());
    const unauthorized = await mcp(event('POST', '/mcp', { body: {} }), context());

    expect(JSON.parse(metadata.body)).toMatchObject({
      resource: 'https://api.example.com/mcp',
      authorization_servers: ['https://issuer.test'],
    });
    expect(unauthorized.statusCode).toBe(401);
    expect(unauthorized.headers['www-authenticate']).toBe(
      'Bearer resource_metadata="https://api.example.com/.well-known/oauth-protected-resource/mcp"',
    );
  });
});
