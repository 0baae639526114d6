// A tool's function called as an AgentCore Gateway calls a Lambda target — the tool's arguments as the
// event, the tool's name (`<target>___<tool>`) in the client context — after the gateway's request
// interceptor wrote the caller from the bearer token. The handlers are the deployed entry files
// (lambdas/*.ts, lib/lambda/entries/agentcore_interceptor.ts' composition), on DynamoDB Local.
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context } from 'aws-lambda';
import { CALLER_FIELD, NO_CALLER } from '../../lib/agentcore/caller';
import { type InterceptorInput, type InterceptorOutput, interceptRequest } from '../../lib/agentcore/interceptor';
import type { GatewayAnswer, GatewayToolHandler } from '../../lib/agentcore/write';
import { createJwksVerifier } from '../../lib/auth/jwks-verifier';
import { DevSigningKey } from '../../lib/local/dev-auth';
import { createWorld, deadline, newTenant, type World } from '../helpers/world';

const ISSUER = 'https://issuer.test';
process.env.JWT_ISSUER = ISSUER;

let world: World;
let key: DevSigningKey;
let jwks: Server;
let jwksUrl: string;
beforeAll(async () => {
  world = createWorld();
  key = await DevSigningKey.loadOrCreate({
    DEV_KEY_DIR: mkdtempSync(join(tmpdir(), 'agentcore-key-')),
    JWT_ISSUER: ISSUER,
  });
  // The issuer's JWKS, served as an OIDC provider serves it: the interceptor fetches it like the MCP function.
  jwks = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ keys: [key.publicJwk()] }));
  });
  await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`;
});
afterAll(async () => {
  await new Promise((resolve) => jwks.close(resolve));
  await world.destroy();
});

/** The handler a tool's entry file exports, as the gateway invokes it. */
async function gatewayTool(name: string): Promise<GatewayToolHandler> {
  return ((await import(`../../lambdas/${name}`)) as { handler: GatewayToolHandler }).handler;
}

/** A Lambda context as the gateway's invocation carries it: the tool's name in `clientContext.custom`. */
function gatewayContext(tool: string, target = tool.replaceAll('_', '-')): Context {
  return {
    ...deadline(),
    clientContext: {
      custom: {
        bedrockAgentCoreToolName: `${target}___${tool}`,
        bedrockAgentCoreTargetId: 'TARGET1',
        bedrockAgentCoreMessageVersion: '1.0',
      },
    },
  } as unknown as Context;
}

function caller(tenant: string, user = 'ada') {
  return { [CALLER_FIELD]: { tenant, user } };
}

/** The interceptor as deployed: tokens verified against the issuer's JWKS. */
function intercept(input: InterceptorInput): Promise<InterceptorOutput> {
  return interceptRequest(input, {
    verifyToken: createJwksVerifier({ issuer: ISSUER, audience: 'retrysafe', jwksUrl }),
    env: { TENANT_CLAIM: 'tenant_id' },
  });
}

/** A `tools/call` as the gateway hands it to the interceptor (`passRequestHeaders: true`). */
function toolsCall(name: string, args: unknown, authorization?: string): InterceptorInput {
  return {
    interceptorInputVersion: '1.0',
    mcp: {
      gatewayRequest: {
        path: '/mcp',
        httpMethod: 'POST',
        headers: authorization ? { Authorization: authorization, 'Content-Type': 'application/json' } : {},
        body: { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name, arguments: args } },
      },
    },
  };
}

/** The arguments the interceptor sends on to the target. */
function forwarded(output: InterceptorOutput): Record<string, unknown> {
  if (!('transformedGatewayRequest' in output.mcp)) throw new Error(`refused: ${JSON.stringify(output)}`);
  return (output.mcp.transformedGatewayRequest.body as { params: { arguments: Record<string, unknown> } }).params
    .arguments;
}

describe('a tool called through an AgentCore Gateway (Lambda target)', () => {
  it('runs the refund once: the retry is a replay of the first receipt, and the ledger moved once', async () => {
    const tenant = newTenant();
    const invoice = await world.seedInvoice(tenant);
    const refund = await gatewayTool('refund');
    const args = { idempotency_key: 'g1', invoice_id: invoice.invoice_id, amount: invoice.amount, ...caller(tenant) };

    const first = await refund(args, gatewayContext('refund'));
    const retry = await refund(args, gatewayContext('refund'));

    expect(first).toMatchObject({ ok: true, idempotent: false, key: 'g1', next: { action: 'none' } });
    expect(retry).toMatchObject({ ok: true, idempotent: true, key: 'g1', receipt: first.receipt });
    expect(await world.ledgerRows(tenant)).toHaveLength(1);
  });

  it('answers the JSON the REST API answers in its body, not an HTTP response', async () => {
    const tenant = newTenant();
    const answer = await (await gatewayTool('create_ticket'))(
      { idempotency_key: 'g2', title: 'Printer', body: 'It jams.', ...caller(tenant) },
      gatewayContext('create_ticket'),
    );

    expect(answer).not.toHaveProperty('statusCode');
    expect(Object.keys(answer).sort()).toEqual(['idempotent', 'key', 'next', 'ok', 'receipt']);
  });

  it('scopes each call by its caller: the same key from another user or tenant is a call of its own', async () => {
    const tenant = newTenant();
    const other = newTenant();
    const create = await gatewayTool('create_invoice');
    const args = { idempotency_key: 'same', customer: 'cus_ada', amount: 4_200 };

    const ada = await create({ ...args, ...caller(tenant, 'ada') }, gatewayContext('create_invoice'));
    const bob = await create({ ...args, ...caller(tenant, 'bob') }, gatewayContext('create_invoice'));
    const elsewhere = await create({ ...args, ...caller(other, 'ada') }, gatewayContext('create_invoice'));

    expect([ada.idempotent, bob.idempotent, elsewhere.idempotent]).toEqual([false, false, false]);
    const ids = [ada, bob, elsewhere].map((answer) => (answer.receipt as { invoice_id: string }).invoice_id);
    expect(new Set(ids).size).toBe(3);
    expect((await world.idempotencyRecordKeys(tenant)).length).toBe(2);
    expect((await world.idempotencyRecordKeys(other)).length).toBe(1);
  });

  it.each([
    ['no caller at all', {}],
    ['a caller without a user', { [CALLER_FIELD]: { tenant: 'acme' } }],
    ['a caller without a tenant', { [CALLER_FIELD]: { user: 'ada' } }],
    ['an empty tenant', { [CALLER_FIELD]: { tenant: '', user: 'ada' } }],
  ])('refuses a call with %s, naming what is missing, and runs nothing', async (_case, identity) => {
    const tenant = newTenant();
    const invoice = await world.seedInvoice(tenant);

    const answer = await (await gatewayTool('refund'))(
      { idempotency_key: 'g3', invoice_id: invoice.invoice_id, amount: 100, ...identity },
      gatewayContext('refund'),
    );

    expect(answer).toMatchObject({ ok: false, error: { code: 'unauthorized', message: NO_CALLER } });
    expect(NO_CALLER).toContain(CALLER_FIELD);
    expect(await world.ledgerRows(tenant)).toEqual([]);
    expect(await world.idempotencyRecordKeys(tenant)).toEqual([]);
  });

  it('refuses a caller that a token could not name (too long), as the REST API refuses such a token', async () => {
    const answer = await (await gatewayTool('create_ticket'))(
      { idempotency_key: 'g4', title: 's', body: 'b', ...caller('t'.repeat(257)) },
      gatewayContext('create_ticket'),
    );

    expect(answer).toMatchObject({ ok: false, error: { code: 'unauthorized' } });
  });

  it('reads the caller’s own invoice through the get_invoice target, and refuses a read without a caller', async () => {
    const tenant = newTenant();
    const invoice = await world.seedInvoice(tenant);
    const read = await gatewayTool('get_invoice');

    const own = await read({ invoice_id: invoice.invoice_id, ...caller(tenant) }, gatewayContext('get_invoice'));
    const other = await read({ invoice_id: invoice.invoice_id, ...caller(newTenant()) }, gatewayContext('get_invoice'));
    const none = await read({ invoice_id: invoice.invoice_id }, gatewayContext('get_invoice'));

    expect(own).toMatchObject({ ok: true, invoice: { invoice_id: invoice.invoice_id } });
    expect(other).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(none).toMatchObject({ ok: false, error: { code: 'unauthorized', message: NO_CALLER } });
  });

  it('still answers API Gateway with an HTTP response (no client context)', async () => {
    const tenant = newTenant();
    const handler = (await import('../../lambdas/create_ticket')).handler;
    const response = await handler(
      {
        version: '2.0',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ idempotency_key: 'r1', title: 's', body: 'b' }),
        isBase64Encoded: false,
        requestContext: {
          http: { method: 'POST', path: '/tools/create_ticket' },
          authorizer: { jwt: { claims: { tenant_id: tenant, sub: 'ada' }, scopes: [] } },
        },
      } as never,
      deadline() as unknown as Context,
    );

    expect(response.statusCode).toBe(200);
    expect(JSON.parse(response.body)).toMatchObject({ ok: true, idempotent: false });
  });
});

describe("the gateway's request interceptor", () => {
  it('writes the verified caller into a tools/call, over the one the agent sent, the other arguments untouched', async () => {
    const token = await key.mint('acme', 'ada');
    const args = { idempotency_key: 'k', title: 's', [CALLER_FIELD]: { tenant: 'victim', user: 'eve' } };

    const output = await intercept(toolsCall('create-ticket___create_ticket', args, `Bearer ${token}`));

    expect(forwarded(output)).toEqual({
      idempotency_key: 'k',
      title: 's',
      [CALLER_FIELD]: { tenant: 'acme', user: 'ada' },
    });
    expect(output.interceptorOutputVersion).toBe('1.0');
  });

  it('lets every other request through unchanged (initialize, tools/list)', async () => {
    const body = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };

    const output = await intercept({ interceptorInputVersion: '1.0', mcp: { gatewayRequest: { body } } });

    expect(output.mcp).toEqual({ transformedGatewayRequest: { body } });
  });

  it.each([
    ['no Authorization header', async () => undefined, 'authorization: no bearer token'],
    ['a token of another issuer', async () => `Bearer ${await otherIssuerToken()}`, 'another issuer'],
    ['a token naming no tenant', async () => `Bearer ${await key.sign({ sub: 'ada' })}`, 'does not name a tenant'],
  ])('answers a tools/call with %s itself — a tool error, the target never called', async (_case, header, says) => {
    const output = await intercept(toolsCall('refund___refund', { idempotency_key: 'k' }, await header()));

    expect('transformedGatewayRequest' in output.mcp).toBe(false);
    const response = (output.mcp as { transformedGatewayResponse: { statusCode: number; body: unknown } })
      .transformedGatewayResponse;
    const result = (response.body as { id: unknown; result: { isError: boolean; content: Array<{ text: string }> } })
      .result;
    expect([response.statusCode, (response.body as { id: unknown }).id, result.isError]).toEqual([200, 7, true]);
    const answer = JSON.parse(result.content[0]!.text) as GatewayAnswer & { error: { code: string; message: string } };
    expect(answer.error.code).toBe('unauthorized');
    expect(answer.error.message).toContain(says);
  });

  it('hands the tool what it needs: a call through interceptor and target runs once for the token’s caller', async () => {
    const tenant = newTenant();
    const token = await key.mint(tenant, 'ada');
    const args = { idempotency_key: 'e2e', title: 'Printer', body: 'It jams.' };

    const call = async () => {
      const output = await intercept(toolsCall('create-ticket___create_ticket', args, `Bearer ${token}`));
      return (await gatewayTool('create_ticket'))(forwarded(output), gatewayContext('create_ticket'));
    };
    const first = await call();
    const retry = await call();

    expect(first).toMatchObject({ ok: true, idempotent: false, key: 'e2e' });
    expect(retry).toMatchObject({ ok: true, idempotent: true, receipt: first.receipt });
    expect((await world.idempotencyRecordKeys(tenant)).every((record) => record.tool === 'create_ticket')).toBe(true);
    expect(await world.idempotencyRecordKeys(tenant)).not.toEqual([]);
  });
});

/** A token signed by a key of another issuer's (its own key folder, its own issuer). */
async function otherIssuerToken(): Promise<string> {
  const other = await DevSigningKey.loadOrCreate({
    DEV_KEY_DIR: mkdtempSync(join(tmpdir(), 'agentcore-other-')),
    JWT_ISSUER: 'https://other.test',
  });
  return other.mint('acme', 'ada');
}
