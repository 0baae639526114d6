import type { JWTPayload } from 'jose';
import { type ApiEvent, identityFromEvent } from '../../lib/http/event';
import { handleListTools } from '../../lib/http/list-tools';
import { startTestApi, type TestApi } from '../helpers/api';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

/** An MCP `initialize` with `token`: the MCP function checks the token itself. */
function mcpInitialize(token: string) {
  return api.request('POST', '/mcp', {
    token,
    headers: { accept: 'application/json, text/event-stream' },
    body: {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    },
  });
}

describe('a tenant or user claim that is not a string', () => {
  it.each<[string, JWTPayload, string]>([
    ['a list tenant', { tenant_id: ['x', 'y'], sub: 'ada' }, 'tenant_id'],
    ['a number tenant', { tenant_id: 123, sub: 'ada' }, 'tenant_id'],
    ['an object tenant', { tenant_id: { name: 'acme' }, sub: 'ada' }, 'tenant_id'],
    ['a number sub', { tenant_id: 'acme', sub: 123 as unknown as string }, 'sub'],
  ])('is refused with a 401 naming the claim, on REST and on MCP: %s', async (_kind, claims, claim) => {
    const token = await api.key.sign(claims);

    const rest = await api.get('/tools', token);
    const write = await api.post('/tools/create_invoice', token, { idempotency_key: 'k1', customer: 'c', amount: 1 });
    const mcp = await mcpInitialize(token);

    for (const reply of [rest, write, mcp]) {
      expect(reply.status).toBe(401);
      expect(JSON.stringify(reply.json)).toContain(`${claim} claim is not a string`);
    }
    expect(rest.body.error.code).toBe('unauthorized');
  });

  it('leaves the string "123" a tenant', async () => {
    const reply = await api.get('/tools', await api.key.sign({ tenant_id: '123', sub: 'ada' }));

    expect(reply.status).toBe(200);
  });
});

describe('behind API Gateway (claims flattened to strings by the JWT authorizer)', () => {
  const eventWith = (claims: Record<string, string>) =>
    ({ requestContext: { authorizer: { jwt: { claims, scopes: [] } } } }) as unknown as ApiEvent;

  it.each([
    ['a list', { tenant_id: '[x y]', sub: 'ada' }],
    ['a map', { tenant_id: 'map[name:acme]', sub: 'ada' }],
    ['a list sub', { tenant_id: 'acme', sub: '[a b]' }],
  ])('names no caller when the tenant or sub was %s: a 401 saying both are strings', (_kind, claims) => {
    const reply = handleListTools([], eventWith(claims));

    expect(identityFromEvent(eventWith(claims))).toBeUndefined();
    expect(reply.statusCode).toBe(401);
    expect(JSON.parse(reply.body).error).toEqual({
      code: 'unauthorized',
      message: expect.stringMatching(/tenant claim and sub each a string/),
    });
  });

  it('takes a plain string (and cannot tell "123" from 123 there)', () => {
    expect(identityFromEvent(eventWith({ tenant_id: '123', sub: 'ada' }))).toEqual({ tenant: '123', user: 'ada' });
  });
});

describe('the audience, locally as deployed (isIssuedTo)', () => {
  it.each<[string, number, JWTPayload]>([
    [
      'a Cognito access token for this client (no aud, client_id = audience)',
      200,
      { aud: undefined, client_id: 'retrysafe' },
    ],
    ['a token for this audience (aud)', 200, {}],
    ['a list aud that holds this audience', 200, { aud: ['other', 'retrysafe'] }],
    ['a token without aud for another client', 401, { aud: undefined, client_id: 'other' }],
    ['a token for another audience with client_id = audience', 401, { aud: 'other', client_id: 'retrysafe' }],
    ['a token with neither aud nor client_id', 401, { aud: undefined }],
  ])('%s: %d on REST and on MCP', async (_kind, status, audience) => {
    const token = await api.key.sign({ tenant_id: 'acme', sub: 'ada', ...audience });

    const rest = await api.get('/tools', token);
    const mcp = await mcpInitialize(token);

    expect([rest.status, mcp.status]).toEqual([status, status]);
    if (status === 401) expect(rest.body.error.message).toMatch(/another audience \(aud\)/);
  });
});
