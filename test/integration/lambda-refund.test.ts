import type { APIGatewayProxyEventV2WithJWTAuthorizer, Context } from 'aws-lambda';
import { createServices } from '../../app/services';
import { handler } from '../../lambdas/refund';
import { deadline, newTenant } from '../helpers/world';

/** The test's own view of the tables the entry point's process writes to. */
const services = createServices(process.env);
afterAll(() => services.client.destroy());

/** An API Gateway HTTP API (payload 2.0) event as the JWT authorizer hands it on. */
function event(
  body: string | undefined,
  claims: Record<string, string> | undefined,
): APIGatewayProxyEventV2WithJWTAuthorizer {
  return {
    version: '2.0',
    routeKey: 'POST /tools/refund',
    rawPath: '/tools/refund',
    rawQueryString: '',
    headers: { 'content-type': 'application/json' },
    body,
    isBase64Encoded: false,
    requestContext: {
      authorizer: { jwt: { claims: claims ?? {}, scopes: [] }, principalId: '', integrationLatency: 0 },
    },
  } as unknown as APIGatewayProxyEventV2WithJWTAuthorizer;
}

const context = () => deadline() as unknown as Context;

describe('lambdas/refund', () => {
  it('refunds for the tenant and user of the token, then replays with the header', async () => {
    const tenant = newTenant();
    const invoice = { tenant, invoice_id: 'inv_1', customer: 'c', amount: 500, currency: 'eur', created_at: 'now' };
    await services.invoices.create(invoice);
    const body = JSON.stringify({ idempotency_key: 'k1', invoice_id: 'inv_1', amount: 500 });
    const claims = { tenant_id: tenant, sub: 'ada' };

    const first = await handler(event(body, claims), context());
    const replay = await handler(event(body, claims), context());

    expect(first.statusCode).toBe(200);
    expect(JSON.parse(first.body)).toMatchObject({
      ok: true,
      idempotent: false,
      receipt: { amount: 500, currency: 'eur' },
    });
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(JSON.parse(replay.body)).toEqual({
      ...JSON.parse(first.body),
      idempotent: true,
      next: { action: 'none', message: expect.stringMatching(/^Already done/) },
    });
  });

  it('takes the tenant from the token, never from the body', async () => {
    const victim = newTenant('victim');
    await services.invoices.create({
      tenant: victim,
      invoice_id: 'inv_1',
      customer: 'c',
      amount: 500,
      currency: 'eur',
      created_at: 'now',
    });
    const body = JSON.stringify({ idempotency_key: 'k1', invoice_id: 'inv_1', amount: 500, tenant: victim });

    const response = await handler(event(body, { tenant_id: newTenant('attacker'), sub: 'eve' }), context());

    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body)).toEqual({
      ok: false,
      error: { code: 'invalid_args', message: 'tenant: unknown field' },
      next: { action: 'fix_arguments', message: expect.any(String) },
    });
    expect((await services.invoices.get(victim, 'inv_1'))?.refund).toBeUndefined();
  });

  it.each([
    ['no claims', undefined],
    ['no tenant claim', { sub: 'ada' }],
    ['no subject', { tenant_id: 'acme' }],
  ])('answers 401 with %s', async (_label, claims) => {
    const response = await handler(event('{}', claims), context());

    expect(response.statusCode).toBe(401);
    expect(JSON.parse(response.body)).toMatchObject({ ok: false, error: { code: 'unauthorized' } });
  });

  it.each([
    ['malformed JSON', '{"idempotency_key": '],
    ['an empty body', ''],
    ['no body', undefined],
  ])('answers 400 for %s', async (_label, body) => {
    const response = await handler(event(body, { tenant_id: 'acme', sub: 'ada' }), context());

    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body)).toEqual({
      ok: false,
      error: { code: 'invalid_args', message: 'body: not valid JSON' },
      next: { action: 'fix_arguments', message: expect.any(String) },
    });
  });
});
