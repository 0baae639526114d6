// A tool's function called as an AgentCore Gateway calls a Lambda target — the tool's arguments as the
// event, the tool's name (`<target>___<tool>`) in the client context — after the gateway's request
// interceptor wrote the caller from the bearer token, signed. The handlers are the deployed entry files
// (lambdas/*.ts, lib/lambda/entries/agentcore_interceptor.ts' composition) on functions the construct made
// gateway targets (`RETRYSAFE_AGENTCORE_TARGET`), on DynamoDB Local; the signing key is read through the
// SDK's Secrets Manager client from a server that answers GetSecretValue as Secrets Manager does.
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context } from 'aws-lambda';
import { READS } from '../../app/reads';
import { TOOLS } from '../../app/tools';
import {
  CALLER_FIELD,
  NO_CALLER,
  NO_TOOL_NAME,
  SIGNED_CALLER_TTL_SECONDS,
  verifiedCaller,
} from '../../lib/agentcore/caller';
import { CALLER_KEY_SECRET_VAR, callerKeyFromEnv } from '../../lib/agentcore/caller-key';
import {
  type InterceptorInput,
  type InterceptorOutput,
  interceptRequest,
  signCaller,
} from '../../lib/agentcore/interceptor';
import { gatewayToolDefinitions } from '../../lib/agentcore/tool-schema';
import type { GatewayAnswer, GatewayToolHandler } from '../../lib/agentcore/write';
import { createJwksVerifier } from '../../lib/auth/jwks-verifier';
import { VerifierUnavailableError } from '../../lib/auth/token-claims';
import { DevSigningKey } from '../../lib/local/dev-auth';
import { heldSendEmail } from '../helpers/held-send-email';
import { createWorld, deadline, newTenant, type World } from '../helpers/world';

const ISSUER = 'https://issuer.test';
process.env.JWT_ISSUER = ISSUER;
// What the construct sets on a gateway's target (and folds into its bundle).
process.env.RETRYSAFE_AGENTCORE_TARGET = 'true';
const KEY_ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:retrysafe-caller-key-AbCdEf';
/** The caller-signing key the secret holds. */
const KEY = 'caller-key-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP';

let world: World;
let key: DevSigningKey;
let jwks: Server;
let jwksUrl: string;
let secrets: Server;
/** The SecretIds asked of the Secrets Manager server, in order. */
const secretReads: string[] = [];
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
  // Secrets Manager's JSON protocol: POST, X-Amz-Target names the operation, the body its input.
  secrets = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => {
      body += chunk;
    });
    request.on('end', () => {
      const { SecretId } = JSON.parse(body) as { SecretId: string };
      secretReads.push(SecretId);
      const known = request.headers['x-amz-target'] === 'secretsmanager.GetSecretValue' && SecretId === KEY_ARN;
      response.writeHead(known ? 200 : 400, { 'content-type': 'application/x-amz-json-1.1' });
      response.end(
        JSON.stringify(
          known
            ? { ARN: KEY_ARN, Name: 'retrysafe-caller-key', SecretString: KEY }
            : { __type: 'ResourceNotFoundException', message: "Secrets Manager can't find the specified secret." },
        ),
      );
    });
  });
  await new Promise<void>((resolve) => secrets.listen(0, '127.0.0.1', resolve));
  process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER = `http://127.0.0.1:${(secrets.address() as AddressInfo).port}`;
  process.env[CALLER_KEY_SECRET_VAR] = KEY_ARN;
});
afterAll(async () => {
  await new Promise((resolve) => jwks.close(resolve));
  await new Promise((resolve) => secrets.close(resolve));
  await world.destroy();
});

/** The handler a tool's entry file exports, as the gateway invokes it. */
async function gatewayTool(name: string): Promise<GatewayToolHandler> {
  return ((await import(`../../lambdas/${name}`)) as { handler: GatewayToolHandler }).handler;
}

/** The tool name the gateway lists and sends for `tool`: its target's name (no `_`), `___`, the tool's. */
function gatewayName(tool: string): string {
  return `${tool.replaceAll('_', '-')}___${tool}`;
}

/** A Lambda context as the gateway's invocation carries it: the tool's name in `clientContext.custom`. */
function gatewayContext(tool: string): Context {
  return {
    ...deadline(),
    clientContext: {
      custom: {
        bedrockAgentCoreToolName: gatewayName(tool),
        bedrockAgentCoreTargetId: 'TARGET1',
        bedrockAgentCoreMessageVersion: '1.0',
      },
    },
  } as unknown as Context;
}

/** The caller field the interceptor writes for a call of `tool`, signed with the deployment's key. */
function caller(tenant: string, user = 'ada', tool = 'create_invoice', signingKey = KEY, nowMs = Date.now()) {
  return { [CALLER_FIELD]: signCaller(signingKey, { tenant, user }, gatewayName(tool), nowMs) };
}

/** The interceptor as deployed: tokens verified against the issuer's JWKS, callers signed with the secret's key. */
function intercept(input: InterceptorInput): Promise<InterceptorOutput> {
  return interceptRequest(input, {
    verifyToken: createJwksVerifier({ issuer: ISSUER, audience: 'retrysafe', jwksUrl }),
    callerKey: callerKeyFromEnv(),
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
  /** The tenant a forged caller names (a fresh one per test: its ledger and records start empty). */
  let victim: string;
  beforeEach(() => {
    victim = newTenant();
  });

  it('runs the refund once: the retry is a replay of the first receipt, and the ledger moved once', async () => {
    const tenant = newTenant();
    const invoice = await world.seedInvoice(tenant);
    const refund = await gatewayTool('refund');
    const args = {
      idempotency_key: 'g1',
      invoice_id: invoice.invoice_id,
      amount: invoice.amount,
      ...caller(tenant, 'ada', 'refund'),
    };

    const first = await refund(args, gatewayContext('refund'));
    const retry = await refund(args, gatewayContext('refund'));

    expect(first).toMatchObject({ ok: true, idempotent: false, key: 'g1', next: { action: 'none' } });
    expect(retry).toMatchObject({ ok: true, idempotent: true, key: 'g1', receipt: first.receipt });
    expect(await world.ledgerRows(tenant)).toHaveLength(1);
  });

  it('answers the JSON the REST API answers in its body, not an HTTP response', async () => {
    const tenant = newTenant();
    const answer = await (await gatewayTool('create_ticket'))(
      { idempotency_key: 'g2', title: 'Printer', body: 'It jams.', ...caller(tenant, 'ada', 'create_ticket') },
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
    ['no caller at all', () => ({})],
    // What the agent can write into its own arguments: the caller's fields, no signature.
    ['a caller the agent wrote, unsigned', () => ({ [CALLER_FIELD]: { tenant: victim, user: 'ada' } })],
    [
      'a caller with a made-up signature',
      () => ({ [CALLER_FIELD]: { ...caller(victim, 'ada', 'refund')[CALLER_FIELD], mac: 'A'.repeat(43) } }),
    ],
    ['a caller signed with another key', () => caller(victim, 'ada', 'refund', 'another key')],
    ["a caller signed for another tool (create_invoice's)", () => caller(victim, 'ada', 'create_invoice')],
    [
      'a signed caller whose tenant was changed',
      () => ({ [CALLER_FIELD]: { ...caller(newTenant(), 'ada', 'refund')[CALLER_FIELD], tenant: victim } }),
    ],
    [
      'a signed caller that expired',
      () => caller(victim, 'ada', 'refund', KEY, Date.now() - (SIGNED_CALLER_TTL_SECONDS + 1) * 1000),
    ],
  ])('refuses a call with %s, naming the field, and runs nothing', async (_case, identity) => {
    const invoice = await world.seedInvoice(victim);

    const answer = await (await gatewayTool('refund'))(
      { idempotency_key: 'g3', invoice_id: invoice.invoice_id, amount: 100, ...identity() },
      gatewayContext('refund'),
    );

    expect(answer).toMatchObject({ ok: false, error: { code: 'unauthorized', message: NO_CALLER } });
    expect(NO_CALLER).toContain(CALLER_FIELD);
    expect(await world.ledgerRows(victim)).toEqual([]);
    expect(await world.idempotencyRecordKeys(victim)).toEqual([]);
  });

  it('refuses an invocation that names another tool than its function’s (a target on the wrong function), and runs nothing', async () => {
    const invoice = await world.seedInvoice(victim);
    const misrouted = {
      ...deadline(),
      clientContext: { custom: { bedrockAgentCoreToolName: gatewayName('create_invoice') } },
    };

    const answer = await (await gatewayTool('refund'))(
      {
        idempotency_key: 'g5',
        invoice_id: invoice.invoice_id,
        amount: 100,
        ...caller(victim, 'ada', 'create_invoice'),
      },
      misrouted as unknown as Context,
    );

    expect(answer).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect((answer as unknown as { error: { message: string } }).error.message).toBe(
      `tool: ${gatewayName('create_invoice')} is not refund, the tool this function runs; nothing ran`,
    );
    expect(await world.ledgerRows(victim)).toEqual([]);
    expect(await world.idempotencyRecordKeys(victim)).toEqual([]);
  });

  it('refuses a caller that a token could not name (too long), as the REST API refuses such a token', async () => {
    const answer = await (await gatewayTool('create_ticket'))(
      { idempotency_key: 'g4', title: 's', body: 'b', ...caller('t'.repeat(257), 'ada', 'create_ticket') },
      gatewayContext('create_ticket'),
    );

    expect(answer).toMatchObject({ ok: false, error: { code: 'unauthorized' } });
  });

  it('reads the caller’s own invoice through the get_invoice target, and refuses a read without a caller', async () => {
    const tenant = newTenant();
    const invoice = await world.seedInvoice(tenant);
    const read = await gatewayTool('get_invoice');

    const own = await read(
      { invoice_id: invoice.invoice_id, ...caller(tenant, 'ada', 'get_invoice') },
      gatewayContext('get_invoice'),
    );
    const other = await read(
      { invoice_id: invoice.invoice_id, ...caller(newTenant(), 'ada', 'get_invoice') },
      gatewayContext('get_invoice'),
    );
    const none = await read({ invoice_id: invoice.invoice_id }, gatewayContext('get_invoice'));
    const forged = await read(
      { invoice_id: invoice.invoice_id, [CALLER_FIELD]: { tenant, user: 'ada' } },
      gatewayContext('get_invoice'),
    );

    expect(own).toMatchObject({ ok: true, invoice: { invoice_id: invoice.invoice_id } });
    expect(other).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(none).toMatchObject({ ok: false, error: { code: 'unauthorized', message: NO_CALLER } });
    expect(forged).toMatchObject({ ok: false, error: { code: 'unauthorized', message: NO_CALLER } });
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
  it('writes the verified caller into a tools/call, signed for the tool it names, over the one the agent sent', async () => {
    const token = await key.mint('acme', 'ada');
    const args = { idempotency_key: 'k', title: 's', [CALLER_FIELD]: { tenant: 'victim', user: 'eve' } };

    const output = await intercept(toolsCall(gatewayName('create_ticket'), args, `Bearer ${token}`));

    const { [CALLER_FIELD]: written, ...rest } = forwarded(output);
    expect(rest).toEqual({ idempotency_key: 'k', title: 's' });
    expect(written).toMatchObject({ tenant: 'acme', user: 'ada', tool: gatewayName('create_ticket') });
    // What the target will check: the key's signature, for this tool only.
    expect(verifiedCaller(written, gatewayName('create_ticket'), KEY, Date.now())).toEqual({
      tenant: 'acme',
      user: 'ada',
    });
    expect(verifiedCaller(written, gatewayName('refund'), KEY, Date.now())).toBeUndefined();
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
    const output = await intercept(toolsCall(gatewayName('refund'), { idempotency_key: 'k' }, await header()));

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
      const output = await intercept(toolsCall(gatewayName('create_ticket'), args, `Bearer ${token}`));
      return (await gatewayTool('create_ticket'))(forwarded(output), gatewayContext('create_ticket'));
    };
    const first = await call();
    const retry = await call();

    expect(first).toMatchObject({ ok: true, idempotent: false, key: 'e2e' });
    expect(retry).toMatchObject({ ok: true, idempotent: true, receipt: first.receipt });
    expect((await world.idempotencyRecordKeys(tenant)).every((record) => record.tool === 'create_ticket')).toBe(true);
    expect(await world.idempotencyRecordKeys(tenant)).not.toEqual([]);
    // The key came from the secret the construct names, read through Secrets Manager.
    expect(new Set(secretReads)).toEqual(new Set([KEY_ARN]));
  });
});

describe('the trust boundary: the caller field is the agent’s to write, so no target takes it on trust', () => {
  it('a caller the agent wrote into its arguments is replaced on the way through the interceptor: the call runs as the token’s caller', async () => {
    const tenant = newTenant();
    const victim = newTenant();
    const invoice = await world.seedInvoice(victim);
    const token = await key.mint(tenant, 'eve');
    const args = {
      idempotency_key: 'tb1',
      invoice_id: invoice.invoice_id,
      amount: 100,
      [CALLER_FIELD]: { tenant: victim, user: 'ada' },
    };

    const output = await intercept(toolsCall(gatewayName('refund'), args, `Bearer ${token}`));
    const answer = await (await gatewayTool('refund'))(forwarded(output), gatewayContext('refund'));

    // Run as eve of her own tenant, where the victim's invoice does not exist; nothing moved for the victim.
    expect(answer).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(await world.ledgerRows(victim)).toEqual([]);
    expect(await world.idempotencyRecordKeys(victim)).toEqual([]);
  });

  it('a JSON-RPC batch is refused by the interceptor, and the caller the agent wrote in it runs nothing at the target either', async () => {
    const victim = newTenant();
    const invoice = await world.seedInvoice(victim);
    const token = await key.mint(newTenant(), 'eve');
    const forgedArgs = {
      idempotency_key: 'tb2',
      invoice_id: invoice.invoice_id,
      amount: invoice.amount,
      [CALLER_FIELD]: { tenant: victim, user: 'ada' },
    };
    const batch = [
      { jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: gatewayName('refund'), arguments: forgedArgs } },
    ];

    const output = await intercept({
      interceptorInputVersion: '1.0',
      mcp: { gatewayRequest: { headers: { Authorization: `Bearer ${token}` }, body: batch } },
    });
    // The interceptor signs one request at a time: a batch is answered with a JSON-RPC error, not let through.
    expect(output.mcp).toEqual({
      transformedGatewayResponse: {
        statusCode: 200,
        body: { jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringContaining('batch') } },
      },
    });
    // Had it reached the target (another gateway, a direct invoker), the target refuses the unsigned caller.
    const answer = await (await gatewayTool('refund'))(forgedArgs, gatewayContext('refund'));

    expect(answer).toMatchObject({ ok: false, error: { code: 'unauthorized', message: NO_CALLER } });
    expect(await world.ledgerRows(victim)).toEqual([]);
    expect(await world.idempotencyRecordKeys(victim)).toEqual([]);
  });

  it('a caller signed for one tool is refused by another tool’s target', async () => {
    const victim = newTenant();
    const token = await key.mint(victim, 'ada');
    const output = await intercept(
      toolsCall(gatewayName('create_ticket'), { idempotency_key: 'x' }, `Bearer ${token}`),
    );
    const signedForTicket = forwarded(output)[CALLER_FIELD];

    const answer = await (await gatewayTool('create_invoice'))(
      { idempotency_key: 'tb3', customer: 'cus_ada', amount: 100, [CALLER_FIELD]: signedForTicket },
      gatewayContext('create_invoice'),
    );

    expect(answer).toMatchObject({ ok: false, error: { code: 'unauthorized', message: NO_CALLER } });
    expect(await world.idempotencyRecordKeys(victim)).toEqual([]);
  });
});

describe('the rule: a gateway target reads no caller from what the agent’s arguments can carry, except the one the interceptor signed', () => {
  it.each([
    ['a client context without custom', {}],
    ['a custom without a tool name', { custom: { bedrockAgentCoreTargetId: 'TARGET1' } }],
    ['a tool name that is not a string', { custom: { bedrockAgentCoreToolName: 7 } }],
  ])(
    'refuses a gateway invocation with %s (any client context is the gateway’s), and runs nothing',
    async (_case, clientContext) => {
      const victim = newTenant();
      const invoice = await world.seedInvoice(victim);
      const args = {
        idempotency_key: 'rule-1',
        invoice_id: invoice.invoice_id,
        amount: invoice.amount,
        requestContext: { authorizer: { jwt: { claims: { tenant_id: victim, sub: 'ada' } } } },
        body: JSON.stringify({ idempotency_key: 'rule-1', invoice_id: invoice.invoice_id, amount: invoice.amount }),
      };

      const answer = await (await gatewayTool('refund'))(args, { ...deadline(), clientContext } as unknown as Context);

      expect(answer).toMatchObject({ ok: false, error: { code: 'unauthorized', message: NO_TOOL_NAME } });
      expect(await world.ledgerRows(victim)).toEqual([]);
      expect(await world.idempotencyRecordKeys(victim)).toEqual([]);
    },
  );

  it('accepts the tool name under the spelling an AWS tutorial gives (bedrockagentcoreToolName)', async () => {
    const tenant = newTenant();
    const context = {
      ...deadline(),
      clientContext: { custom: { bedrockagentcoreToolName: gatewayName('create_ticket') } },
    } as unknown as Context;

    const answer = await (await gatewayTool('create_ticket'))(
      { idempotency_key: 'rule-2', title: 's', body: 'b', ...caller(tenant, 'ada', 'create_ticket') },
      context,
    );

    expect(answer).toMatchObject({ ok: true, idempotent: false });
    expect((await world.idempotencyRecordKeys(tenant)).map((record) => record.tool)).toContain('create_ticket');
  });

  it.each(['refund', 'get_invoice'])(
    'takes an event carrying the gateway’s caller field for the gateway’s even without a client context: %s never reads it as API Gateway’s, and runs nothing',
    async (name) => {
      const victim = newTenant();
      const invoice = await world.seedInvoice(victim);
      const event = {
        idempotency_key: 'rule-3',
        invoice_id: invoice.invoice_id,
        amount: invoice.amount,
        pathParameters: { invoice_id: invoice.invoice_id },
        requestContext: { authorizer: { jwt: { claims: { tenant_id: victim, sub: 'ada' } } } },
        body: JSON.stringify({ idempotency_key: 'rule-3', invoice_id: invoice.invoice_id, amount: invoice.amount }),
        ...caller(newTenant(), 'eve', name),
      };

      const answer = await (await gatewayTool(name))(event, deadline() as unknown as Context);

      expect(answer).toMatchObject({ ok: false, error: { code: 'unauthorized', message: NO_TOOL_NAME } });
      expect(JSON.stringify(answer)).not.toContain(invoice.invoice_id);
      expect(await world.ledgerRows(victim)).toEqual([]);
      expect(await world.idempotencyRecordKeys(victim)).toEqual([]);
    },
  );

  it.each([
    ['a body that is not JSON', '{"jsonrpc":"2.0","method":"tools/call"', -32700],
    ['a body that is not a request object', 42, -32700],
    ['a tools/call without a name', { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { arguments: {} } }, -32602],
    [
      'a tools/call whose name is not a string',
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: ['refund'] } },
      -32602,
    ],
  ])(
    'refuses %s at the interceptor with a JSON-RPC error instead of letting it through unsigned',
    async (_case, body, code) => {
      const token = await key.mint(newTenant(), 'ada');

      const output = await intercept({
        interceptorInputVersion: '1.0',
        mcp: { gatewayRequest: { headers: { Authorization: `Bearer ${token}` }, body } },
      });

      expect('transformedGatewayRequest' in output.mcp).toBe(false);
      expect(output.mcp).toMatchObject({ transformedGatewayResponse: { body: { jsonrpc: '2.0', error: { code } } } });
    },
  );
});

describe('a caller the agent wrote as API Gateway’s claims, in a gateway invocation without the documented tool-name key', () => {
  // The rule (lib/agentcore/caller.ts, gatewayInvocationTool): any client context makes an invocation the
  // gateway's, whichever spelling names the tool. The event of such an invocation is the agent's arguments,
  // and the agent can write API Gateway's `requestContext.authorizer.jwt.claims` and `body` into them: they
  // must never be read as API Gateway's. (Found by review 35: the function took it for API Gateway's.)
  it('refuses a gateway invocation whose client context lacks bedrockAgentCoreToolName, even when the agent wrote API Gateway’s claims into its arguments', async () => {
    const eve = newTenant();
    const victim = newTenant();
    const invoice = await world.seedInvoice(victim);
    // Prepare: what the agent (eve, of her own tenant) sends as the refund's arguments.
    const agentArgs = {
      idempotency_key: 'forged-1',
      invoice_id: invoice.invoice_id,
      amount: invoice.amount,
      requestContext: { authorizer: { jwt: { claims: { tenant_id: victim, sub: 'ada' } } } },
      body: JSON.stringify({ idempotency_key: 'forged-1', invoice_id: invoice.invoice_id, amount: invoice.amount }),
    };
    const output = await interceptRequest(toolsCall(gatewayName('refund'), agentArgs, 'Bearer token-of-eve'), {
      verifyToken: async () => ({ tenant_id: eve, sub: 'eve' }),
      callerKey: async () => KEY,
      env: {},
    });
    // The gateway's invocation, its tool name under the spelling one AWS tutorial gives.
    const context = {
      ...deadline(),
      clientContext: { custom: { bedrockagentcoreToolName: gatewayName('refund') } },
    } as unknown as Context;

    // Act
    await (await gatewayTool('refund'))(forwarded(output), context);

    // Assess: nothing moved in the victim's tenant, no record claimed there.
    expect(await world.ledgerRows(victim)).toEqual([]);
    expect(await world.idempotencyRecordKeys(victim)).toEqual([]);
  });

  it('refuses a read through the gateway without bedrockAgentCoreToolName in its client context: the agent’s path parameters and claims read another tenant’s invoice', async () => {
    const eve = newTenant();
    const victim = newTenant();
    const invoice = await world.seedInvoice(victim);
    const agentArgs = {
      invoice_id: invoice.invoice_id,
      pathParameters: { invoice_id: invoice.invoice_id },
      requestContext: { authorizer: { jwt: { claims: { tenant_id: victim, sub: 'ada' } } } },
    };
    const output = await interceptRequest(toolsCall(gatewayName('get_invoice'), agentArgs, 'Bearer token-of-eve'), {
      verifyToken: async () => ({ tenant_id: eve, sub: 'eve' }),
      callerKey: async () => KEY,
      env: {},
    });
    const context = {
      ...deadline(),
      clientContext: { custom: { bedrockagentcoreToolName: gatewayName('get_invoice') } },
    } as unknown as Context;

    const answer = (await (
      await gatewayTool('get_invoice')
    )(forwarded(output), context)) as unknown as {
      body?: string;
    };

    // The victim's invoice must not reach eve in any shape (an HTTP response's body or the answer itself).
    expect(JSON.stringify(answer)).not.toContain(invoice.invoice_id);
  });
});

describe('a pending answer through the gateway names a way to ask again that the gateway serves', () => {
  it('does not point the agent at get_operation, which no target lists', async () => {
    const tenant = newTenant();
    const { tool: held, started, release } = heldSendEmail();
    const args = { idempotency_key: 'held-1', to: 'a@example.com', subject: 's', body: 'b' };
    const running = world.runtime.invoke(held, { tenant, user: 'ada' }, args, deadline(5_000));
    await started.opened;
    const signed = await interceptRequest(toolsCall(gatewayName('send_email'), args, 'Bearer token-of-ada'), {
      verifyToken: async () => ({ tenant_id: tenant, sub: 'ada' }),
      callerKey: async () => KEY,
      env: {},
    });

    const context = {
      ...deadline(1_500),
      clientContext: { custom: { bedrockAgentCoreToolName: gatewayName('send_email') } },
    } as unknown as Context;
    const answer = await (await gatewayTool('send_email'))(forwarded(signed), context).catch((error) => error);
    release.open();
    await running;

    const listed = gatewayToolDefinitions(TOOLS, READS).map(({ name }) => name);
    expect(answer).toMatchObject({ ok: false, status: 'pending' });
    const poll = (answer as { next: { poll?: { tool: string } } }).next.poll;
    expect(poll === undefined || listed.includes(poll.tool)).toBe(true);
  });
});

describe('the interceptor’s answers say when to ask again', () => {
  // The MCP function answers a verifier outage with the verifier's own wait (lib/mcp/http.ts,
  // `verifierUnavailable`: `error.retryAfterSeconds * 1000`); the interceptor drops it.
  it('tells the agent the verifier’s own wait when the issuer’s keys cannot be fetched', async () => {
    const output = await interceptRequest(
      toolsCall(gatewayName('refund'), { idempotency_key: 'k' }, 'Bearer token-of-eve'),
      {
        verifyToken: async () => {
          throw new VerifierUnavailableError('the issuer signing keys cannot be fetched', 45);
        },
        callerKey: async () => KEY,
        env: {},
      },
    );

    const response = (
      output.mcp as { transformedGatewayResponse: { body: { result: { structuredContent: unknown } } } }
    ).transformedGatewayResponse;
    expect(response.body.result.structuredContent).toMatchObject({
      ok: false,
      error: { code: 'unavailable' },
      next: { action: 'call_again', after_ms: 45_000 },
    });
  });
});

describe('the caller key (callerKeyFromEnv)', () => {
  it('names the variable when it is unset, and reads nothing', async () => {
    const reads = secretReads.length;

    await expect(callerKeyFromEnv({})()).rejects.toThrow(`${CALLER_KEY_SECRET_VAR} is not set`);
    expect(secretReads.length).toBe(reads);
  });

  it('is read once and kept; a read that failed is not kept', async () => {
    const env = { [CALLER_KEY_SECRET_VAR]: `${KEY_ARN}-missing` };
    const missing = callerKeyFromEnv(env);
    const kept = callerKeyFromEnv({ [CALLER_KEY_SECRET_VAR]: KEY_ARN });
    const before = secretReads.length;

    await expect(missing()).rejects.toThrow();
    await expect(missing()).rejects.toThrow();
    expect([await kept(), await kept()]).toEqual([KEY, KEY]);

    expect(secretReads.slice(before)).toEqual([`${KEY_ARN}-missing`, `${KEY_ARN}-missing`, KEY_ARN]);
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
