import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { promisify } from 'node:util';
import { generateKeyPair, SignJWT } from 'jose';
import { READS } from '../../app/reads';
import { TOOLS } from '../../app/tools';
import { apiRoutes } from '../../lib/api/routes';
import { startTestApi, type TestApi } from '../helpers/api';
import { newTenant } from '../helpers/world';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

async function foreignToken(
  claims: Record<string, unknown>,
  options: { issuer?: string; audience?: string; exp?: string; alg?: 'ES256' | 'RS256' } = {},
) {
  const alg = options.alg ?? 'ES256';
  const { privateKey } = await generateKeyPair(alg);
  return new SignJWT(claims)
    .setProtectedHeader({ alg })
    .setIssuer(options.issuer ?? api.key.settings.issuer)
    .setAudience(options.audience ?? 'retrysafe')
    .setExpirationTime(options.exp ?? '1h')
    .sign(privateKey);
}

describe('authorization, as the JWT authorizer does it', () => {
  it('serves /health without a token', async () => {
    const health = await api.get('/health');

    expect(health.status).toBe(200);
    expect(health.body).toEqual({ ok: true });
  });

  it.each(
    apiRoutes(TOOLS, READS)
      .filter((route) => route.auth === 'gateway')
      .map((route) => [`${route.method} ${route.path}`, route] as const),
  )('answers 401 without a token: %s', async (_label, route) => {
    const reply = await api.request(route.method, route.path.replace(/\{[^}]+\}/g, 'x'), {
      raw: route.method === 'POST' ? '{}' : undefined,
    });

    expect(reply.status).toBe(401);
    expect(reply.body).toMatchObject({ ok: false, error: { code: 'unauthorized' } });
  });

  it.each([
    [
      'a token signed by another key',
      () => foreignToken({ tenant_id: 'acme', sub: 'ada' }, { alg: 'RS256' }),
      /signature does not verify/,
    ],
    [
      'a token of another algorithm',
      () => foreignToken({ tenant_id: 'acme', sub: 'ada' }),
      /signing algorithm is not accepted/,
    ],
    ['a garbled token', async () => 'not.a.jwt', /not a valid JWT/],
    ['an expired token', () => api.token('acme', 'ada', '-1m'), /has expired/],
  ])('answers 401 for %s, saying why', async (_label, makeToken, why) => {
    const reply = await api.get('/tools', await makeToken());

    expect(reply.status).toBe(401);
    expect(reply.body.error.code).toBe('unauthorized');
    expect(reply.body.error.message).toMatch(why);
  });

  it.each([
    ['another issuer', { JWT_ISSUER: 'https://someone-else.example' }, /another issuer .*\(iss\)/],
    ['another audience', { JWT_AUDIENCE: 'another-api' }, /another audience \(aud\)/],
  ])('answers 401 for a token of %s, even signed by the right key, saying why', async (_label, settings, why) => {
    const reply = await api.get('/tools', await api.tokenWith(settings));

    expect(reply.status).toBe(401);
    expect(reply.body.error.message).toMatch(why);
  });

  it.each([
    ['no tenant claim', { sub: 'ada' }, '1h'],
    ['an empty tenant claim', { tenant_id: '', sub: 'ada' }, '1h'],
    ['no subject', { tenant_id: 'acme' }, '1h'],
    ['no expiry', { tenant_id: 'acme', sub: 'ada' }, null],
  ])('answers 401 for a token signed by the right key with %s', async (_label, claims, ttl) => {
    const reply = await api.get('/tools', await api.key.sign(claims, ttl));

    expect(reply.status).toBe(401);
    expect(reply.body.error.code).toBe('unauthorized');
  });

  it('answers 401, not 413, to a large body without a token', async () => {
    const raw = JSON.stringify({ idempotency_key: 'k1', customer: 'x'.repeat(70 * 1024), amount: 1 });

    const write = await api.request('POST', '/tools/create_invoice', { raw });
    const unknown = await api.request('POST', '/nope', { raw });

    expect([write.status, unknown.status]).toEqual([401, 401]);
  });

  // The client runs in a process of its own: in the server's, the two never race. It sends each body
  // whole, as Node's http client does, and reports each request's status or error.
  const SENDER = `
const http = require('node:http');
const [url, count, size, authorization] = process.argv.slice(1);
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
const target = new URL(url);
const one = () => new Promise((resolve) => {
  const headers = { 'content-type': 'application/json', 'content-length': size, ...(authorization ? { authorization } : {}) };
  const out = http.request({ host: target.hostname, port: target.port, method: 'POST', path: '/tools/create_invoice', headers, agent },
    (answer) => { answer.resume(); answer.on('end', () => resolve(String(answer.statusCode))); });
  out.on('error', (error) => resolve(error.message));
  out.end(Buffer.alloc(Number(size), 'x'));
});
Promise.all(Array.from({ length: Number(count) }, one)).then((results) => { agent.destroy(); console.log(JSON.stringify(results)); });
`;
  async function sendFromAnotherProcess(count: number, size: number, authorization = '') {
    const args = ['-e', SENDER, api.url, String(count), String(size), authorization];
    const { stdout } = await promisify(execFile)(process.execPath, args);
    const counts: Record<string, number> = {};
    for (const result of JSON.parse(stdout) as string[]) counts[result] = (counts[result] ?? 0) + 1;
    return counts;
  }

  it('answers every body over the 6 MB a request may carry, while the client still sends it: 401 without a token, 413 with one', async () => {
    const overLimit = 6 * 2 ** 20 + 1;

    const tokenless = await sendFromAnotherProcess(40, overLimit);
    const wrongToken = await sendFromAnotherProcess(20, overLimit, 'Bearer a.b.c');
    const valid = await sendFromAnotherProcess(20, overLimit, `Bearer ${await api.token(newTenant())}`);

    // Before: the server closed the connection on the client still sending, which lost its answer.
    expect([tokenless, wrongToken, valid]).toEqual([{ '401': 40 }, { '401': 20 }, { '413': 20 }]);
  });

  it('reads and drops a refused upload for a few seconds after its answer (lingering close), then closes it', async () => {
    // A client that goes on sending after its 401, and does not close: the server half-closes at once
    // (the answer is whole), drops what keeps arriving, and ends the connection some 5 s later.
    const { port } = new URL(api.url);
    const socket = connect({ host: '127.0.0.1', port: Number(port), allowHalfOpen: true });
    await once(socket, 'connect');
    const started = Date.now();
    let answer = '';
    let answeredAfterMs = -1;
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('latin1');
    });
    socket.once('end', () => {
      answeredAfterMs = Date.now() - started;
    });
    socket.write(
      `POST /tools/create_invoice HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${100 * 2 ** 20}\r\n\r\n`,
    );
    const chunk = Buffer.alloc(16 * 1024, 0x20);
    const ended = new Promise<number>((resolve) => {
      const stop = () => resolve(Date.now() - started);
      socket.once('error', stop);
      socket.once('close', stop);
    });
    const sending = setInterval(() => socket.writable && socket.write(chunk), 50);
    const closedAfterMs = await ended;
    clearInterval(sending);
    socket.destroy();

    expect(answer).toMatch(/^HTTP\/1\.1 401 [^\r]*\r\n/);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    expect(answeredAfterMs).toBeGreaterThanOrEqual(0);
    expect(answeredAfterMs).toBeLessThan(1_000);
    expect(closedAfterMs).toBeGreaterThanOrEqual(4_500);
    expect(closedAfterMs).toBeLessThan(10_000);
  });

  it('answers 401, not 404, to a request without a token that no route matches', async () => {
    const unknownTool = await api.request('POST', '/tools/launch_rockets', { raw: '{}' });
    const unknownPath = await api.request('GET', '/nowhere');

    expect(unknownTool.status).toBe(401);
    expect(unknownPath.status).toBe(401);
  });
});

describe('routes', () => {
  it('answers 404 JSON for anything no route matches (an unknown tool included)', async () => {
    const token = await api.token(newTenant());

    const unknownTool = await api.post('/tools/launch_rockets', token, { idempotency_key: 'k1' });
    const unknownPath = await api.get('/nowhere', token);

    expect(unknownTool.status).toBe(404);
    expect(unknownTool.body).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(unknownPath.status).toBe(404);
  });

  it('lists every tool with its JSON Schema (idempotency_key required) and MCP-style annotations', async () => {
    const reply = await api.get('/tools', await api.token(newTenant()));

    expect(reply.status).toBe(200);
    expect(reply.body.tools.map((tool: { name: string }) => tool.name)).toEqual([
      'create_invoice',
      'refund',
      'create_ticket',
      'close_ticket',
      'send_email',
    ]);
    for (const tool of reply.body.tools) {
      expect(tool.input_schema).toMatchObject({ type: 'object', additionalProperties: false });
      expect(tool.input_schema.required).toContain('idempotency_key');
      expect(tool.input_schema.properties.idempotency_key).toMatchObject({ type: 'string', maxLength: 255 });
      expect(tool.annotations).toMatchObject({ readOnlyHint: false, idempotentHint: true });
    }
    const refund = reply.body.tools.find((tool: { name: string }) => tool.name === 'refund');
    expect(refund.input_schema.required.sort()).toEqual(['amount', 'idempotency_key', 'invoice_id']);
    expect(refund.annotations).toEqual({
      readOnlyHint: false,
      idempotentHint: true,
      destructiveHint: true,
      openWorldHint: true,
    });
    const createInvoice = reply.body.tools.find((tool: { name: string }) => tool.name === 'create_invoice');
    expect(createInvoice.input_schema.required).not.toContain('currency');
  });
});

describe('bad bodies get a clear 4xx, never a 5xx', () => {
  it.each([
    ['an empty body', ''],
    ['malformed JSON', '{"idempotency_key": "k1",'],
    ['null', 'null'],
    ['an array', '[{"idempotency_key":"k1"}]'],
    ['a string', '"refund please"'],
    ['an empty key', '{"idempotency_key":"","customer":"c","amount":1}'],
    ['a numeric key', '{"idempotency_key":7,"customer":"c","amount":1}'],
    ['an object key', '{"idempotency_key":{"k":1},"customer":"c","amount":1}'],
    ['a huge key', JSON.stringify({ idempotency_key: 'k'.repeat(10_000), customer: 'c', amount: 1 })],
    ['a negative amount', '{"idempotency_key":"k1","customer":"c","amount":-5}'],
    ['a fractional amount', '{"idempotency_key":"k1","customer":"c","amount":12.5}'],
    ['a huge amount', '{"idempotency_key":"k1","customer":"c","amount":1e300}'],
    ['a null amount', '{"idempotency_key":"k1","customer":"c","amount":null}'],
    ['an unknown field', '{"idempotency_key":"k1","customer":"c","amount":1,"discount":5}'],
    ['__proto__', '{"idempotency_key":"k1","customer":"c","amount":1,"__proto__":{"isAdmin":true}}'],
    ['constructor', '{"idempotency_key":"k1","customer":"c","amount":1,"constructor":{"prototype":{}}}'],
    ['a bad currency', '{"idempotency_key":"k1","customer":"c","amount":1,"currency":"US Dollars"}'],
  ])('create_invoice with %s → 400 invalid_args naming the field', async (_label, raw) => {
    const reply = await api.request('POST', '/tools/create_invoice', { token: await api.token(newTenant()), raw });

    expect(reply.status).toBe(400);
    expect(reply.body).toEqual({
      ok: false,
      error: { code: 'invalid_args', message: expect.stringMatching(/^[a-z_]+[^:]*: .+/) },
    });
  });

  it.each([
    ['refund', '{"idempotency_key":"k1","invoice_id":"inv_1","amount":-1}'],
    ['refund', '{"idempotency_key":"k1","invoice_id":"inv_1","amount":"100"}'],
    ['refund', '{"idempotency_key":"k1","invoice_id":"","amount":100}'],
    ['refund', '{"idempotency_key":"k1","invoice_id":["inv_1"],"amount":100}'],
    ['close_ticket', '{"idempotency_key":"k1","ticket_key":"tck_1"}'],
    ['create_ticket', '{"idempotency_key":"k1","title":null}'],
    ['send_email', '{"idempotency_key":"k1","to":"not-an-address","subject":"s","body":"b"}'],
    ['send_email', '{"idempotency_key":"k1","to":"a@example.com","subject":"s","body":""}'],
  ])('%s with %s → 400 invalid_args naming the field', async (tool, raw) => {
    const reply = await api.request('POST', `/tools/${tool}`, { token: await api.token(newTenant()), raw });

    expect(reply.status).toBe(400);
    expect(reply.body).toEqual({
      ok: false,
      error: { code: 'invalid_args', message: expect.stringMatching(/^[a-z_]+: .+/) },
    });
  });

  it('answers 413 for a body over 64 KB', async () => {
    const raw = JSON.stringify({ idempotency_key: 'k1', customer: 'x'.repeat(70 * 1024), amount: 1 });

    const reply = await api.request('POST', '/tools/create_invoice', { token: await api.token(newTenant()), raw });

    expect(reply.status).toBe(413);
    expect(reply.body).toEqual({
      ok: false,
      error: { code: 'payload_too_large', message: 'body: larger than 65536 bytes' },
    });
  });
});

describe('over-long ids and identities never reach DynamoDB', () => {
  const long = 'x'.repeat(2_000);

  it.each([
    ['an invoice id', `/invoices/${long}`],
    ['a ticket key', `/tickets/${long}`],
    ['an operation key', `/tools/refund/operations/${long}`],
    ['an operation tool', `/tools/${long}/operations/k1`],
  ])('answers 404 for %s over the limit (not a 500 from the key-size check)', async (_label, path) => {
    const reply = await api.get(path, await api.token(newTenant()));

    expect(reply.status).toBe(404);
    expect(reply.body).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(JSON.stringify(reply.body).length).toBeLessThan(500); // the id is not echoed whole
  });

  it.each([
    ['tenant', { tenant_id: 'x'.repeat(257), sub: 'ada' }],
    ['user', { tenant_id: 'acme', sub: 'x'.repeat(257) }],
  ])('answers 401 for a %s claim over the identity limit, on writes and reads alike', async (_label, claims) => {
    const token = await api.key.sign(claims);

    const write = await api.post('/tools/create_invoice', token, { idempotency_key: 'k1', customer: 'c', amount: 1 });
    const read = await api.get('/invoices/inv_1', token);

    expect([write.status, read.status]).toEqual([401, 401]);
  });
});
