import { freePort } from '../../lib/local/free-port';
import { startTestApi, type TestApi } from '../helpers/api';

let api: TestApi;
let realEndpoint: string | undefined;
beforeAll(async () => {
  // This file's services (created on first use) point at a port nobody listens on.
  realEndpoint = process.env.DYNAMODB_ENDPOINT;
  process.env.DYNAMODB_ENDPOINT = `http://127.0.0.1:${await freePort()}`;
  api = await startTestApi();
});
afterAll(async () => {
  await api.close();
  process.env.DYNAMODB_ENDPOINT = realEndpoint;
});

describe('when DynamoDB cannot be reached', () => {
  it.each([
    ['a write', 'POST', '/tools/create_invoice', { idempotency_key: 'k1', customer: 'c', amount: 1 }],
    ['an operations poll', 'GET', '/tools/create_invoice/operations/k1', undefined],
    ['an invoice read', 'GET', '/invoices/inv_1', undefined],
  ])('answers %s with 503 unavailable, and nothing internal', async (_label, method, path, body) => {
    const reply = await api.request(method, path, { token: await api.token('acme'), body });

    expect(reply.status).toBe(503);
    expect(reply.body).toEqual({ ok: false, error: { code: 'unavailable', message: expect.stringMatching(/retry/) } });
    expect(JSON.stringify(reply.body)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|stack/);
  });
});
