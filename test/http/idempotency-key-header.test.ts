import { request as httpRequest } from 'node:http';
import { startTestApi, type TestApi } from '../helpers/api';
import { newTenant } from '../helpers/world';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

const ARGS = { customer: 'c', amount: 100 };

/** A create_invoice POST whose raw header lines are exactly `headers` (a name may come twice). */
function postWithRawHeaders(
  token: string,
  headers: string[],
  // biome-ignore lint/suspicious/noExplicitAny: replies are asserted structurally
): Promise<{ status: number; body: any }> {
  const body = JSON.stringify(ARGS);
  const url = new URL('/tools/create_invoice', api.url);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      {
        method: 'POST',
        headers: [
          'host',
          url.host,
          'content-type',
          'application/json',
          'authorization',
          `Bearer ${token}`,
          'content-length',
          String(Buffer.byteLength(body)),
          ...headers,
        ],
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk) => {
          text += chunk;
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

describe('the Idempotency-Key header sent more than once', () => {
  it.each([
    ['twice (two header lines, joined ", " by Node)', ['Idempotency-Key', 'k1', 'Idempotency-Key', 'k2']],
    ['twice quoted', ['Idempotency-Key', '"k1"', 'Idempotency-Key', '"k2"']],
    ['as API Gateway hands two over (joined ",")', ['Idempotency-Key', 'k1,k2']],
  ])('is refused with a 400 naming the header, and nothing runs: %s', async (_how, headers) => {
    const tenant = newTenant();
    const token = await api.token(tenant);

    const refused = await postWithRawHeaders(token, headers);
    const invoices = await api.services.invoices.list(tenant);
    // Nothing was claimed under either key: each executes afresh.
    const first = await api.post('/tools/create_invoice', token, { ...ARGS, idempotency_key: 'k1' });

    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ ok: false, error: { code: 'invalid_args' } });
    expect(refused.body.error.message).toMatch(/^Idempotency-Key: sent more than once/);
    expect(invoices).toEqual([]);
    expect(first.body).toMatchObject({ ok: true, idempotent: false, key: 'k1' });
  });

  it('still takes one key with a comma, sent as a structured-field string (escapes read)', async () => {
    const token = await api.token(newTenant());

    const quoted = await postWithRawHeaders(token, ['Idempotency-Key', '"a,b \\"c\\""']);
    const again = await api.post('/tools/create_invoice', token, { ...ARGS, idempotency_key: 'a,b "c"' });

    expect(quoted.body).toMatchObject({ ok: true, idempotent: false, key: 'a,b "c"' });
    expect(again.body).toMatchObject({ ok: true, idempotent: true, key: 'a,b "c"' });
  });
});
