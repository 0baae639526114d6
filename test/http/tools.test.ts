import { startTestApi, type TestApi } from '../helpers/api';
import { newTenant } from '../helpers/world';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

describe('the five tools over HTTP', () => {
  it('create_invoice: first 200 idempotent:false, replay 200 with Idempotent-Replayed and the identical receipt', async () => {
    const token = await api.token(newTenant());
    const body = { idempotency_key: 'k1', customer: 'cus_ada', amount: 4200 };

    const first = await api.post('/tools/create_invoice', token, body);
    const replay = await api.post('/tools/create_invoice', token, body);

    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      ok: true,
      idempotent: false,
      key: 'k1',
      receipt: { invoice_id: expect.stringMatching(/^inv_/), customer: 'cus_ada', amount: 4200, currency: 'usd' },
    });
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual({ ...first.body, idempotent: true });
  });

  it('refund: natural key invoice_id, across keys; wrong amount 400; missing invoice 404', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const invoice = (
      await api.post('/tools/create_invoice', token, { idempotency_key: 'c1', customer: 'c', amount: 900 })
    ).body.receipt;

    const first = await api.post('/tools/refund', token, {
      idempotency_key: 'r1',
      invoice_id: invoice.invoice_id,
      amount: 900,
    });
    const newKey = await api.post('/tools/refund', token, {
      idempotency_key: 'r2',
      invoice_id: invoice.invoice_id,
      amount: 900,
    });
    const wrong = await api.post('/tools/refund', token, {
      idempotency_key: 'r3',
      invoice_id: invoice.invoice_id,
      amount: 1,
    });
    const missing = await api.post('/tools/refund', token, {
      idempotency_key: 'r4',
      invoice_id: 'inv_nope',
      amount: 1,
    });

    expect(first.status).toBe(200);
    expect(first.body.receipt).toEqual({
      refund_id: expect.stringMatching(/^re_/),
      invoice_id: invoice.invoice_id,
      amount: 900,
      currency: 'usd',
    });
    expect(newKey.status).toBe(200);
    expect(newKey.headers.get('idempotent-replayed')).toBe('true');
    expect(newKey.body).toEqual({ ok: true, idempotent: true, key: 'r2', receipt: first.body.receipt });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toEqual({ code: 'invalid_args', message: expect.stringMatching(/^amount: /) });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');

    const read = await api.get(`/invoices/${invoice.invoice_id}`, token);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({
      ok: true,
      invoice: {
        invoice_id: invoice.invoice_id,
        customer: 'c',
        amount: 900,
        currency: 'usd',
        created_at: expect.any(String),
        refunded: true,
        refund: first.body.receipt,
      },
    });
  });

  it('create_ticket then close_ticket: one close per ticket whichever key; another resolution is refused', async () => {
    const token = await api.token(newTenant());
    const created = await api.post('/tools/create_ticket', token, { idempotency_key: 't1', title: 'Printer on fire' });
    const ticketKey = created.body.receipt.ticket_key;

    const close = await api.post('/tools/close_ticket', token, {
      idempotency_key: 'x1',
      ticket_key: ticketKey,
      resolution: 'extinguished',
    });
    const again = await api.post('/tools/close_ticket', token, {
      idempotency_key: 'x2',
      ticket_key: ticketKey,
      resolution: 'extinguished',
    });
    const other = await api.post('/tools/close_ticket', token, {
      idempotency_key: 'x3',
      ticket_key: ticketKey,
      resolution: 'replaced',
    });
    const missing = await api.post('/tools/close_ticket', token, {
      idempotency_key: 'x4',
      ticket_key: 'tck_nope',
      resolution: 'r',
    });
    const read = await api.get(`/tickets/${ticketKey}`, token);

    expect(created.status).toBe(200);
    expect(created.body.receipt).toEqual({
      ticket_key: expect.stringMatching(/^tck_/),
      title: 'Printer on fire',
      status: 'open',
    });
    expect(close.body).toEqual({
      ok: true,
      idempotent: false,
      key: 'x1',
      receipt: { ticket_key: ticketKey, status: 'closed', resolution: 'extinguished' },
    });
    expect(again.body).toEqual({ ...close.body, key: 'x2', idempotent: true });
    expect(other.status).toBe(400);
    expect(other.body.error.message).toMatch(/^resolution: /);
    expect(missing.status).toBe(404);
    expect(read.body).toEqual({
      ok: true,
      ticket: expect.objectContaining({ ticket_key: ticketKey, status: 'closed', resolution: 'extinguished' }),
    });
  });

  it('send_email: delivered once per message id, however often it is sent', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const body = { idempotency_key: 'm1', to: 'ada@example.com', subject: 'Hello', body: 'private words' };

    const first = await api.post('/tools/send_email', token, body);
    const retry = await api.post('/tools/send_email', token, body);

    expect(first.body).toEqual({
      ok: true,
      idempotent: false,
      key: 'm1',
      receipt: { message_id: expect.stringMatching(/^msg_/), to: 'ada@example.com', subject: 'Hello' },
    });
    expect(retry.body).toEqual({ ...first.body, idempotent: true });
    const message = await api.services.outbox.get(tenant, first.body.receipt.message_id);
    expect(message).toMatchObject({ status: 'delivered', to: 'ada@example.com' });
  });

  it('answers 422 conflict for the same key with other arguments, and never takes the new amount', async () => {
    const token = await api.token(newTenant());
    await api.post('/tools/create_invoice', token, { idempotency_key: 'k1', customer: 'c', amount: 100 });

    const conflict = await api.post('/tools/create_invoice', token, {
      idempotency_key: 'k1',
      customer: 'c',
      amount: 999,
    });

    expect(conflict.status).toBe(422);
    expect(conflict.body).toEqual({
      ok: false,
      error: { code: 'conflict', message: 'idempotency_key: already used with different arguments' },
    });
  });

  it('treats reordered JSON fields as the same request', async () => {
    const token = await api.token(newTenant());

    await api.request('POST', '/tools/create_invoice', {
      token,
      raw: '{"idempotency_key":"k1","customer":"c","amount":100,"currency":"eur"}',
    });
    const reordered = await api.request('POST', '/tools/create_invoice', {
      token,
      raw: '{"currency":"eur","amount":100,"customer":"c","idempotency_key":"k1"}',
    });

    expect(reordered.status).toBe(200);
    expect(reordered.body.idempotent).toBe(true);
  });

  it('takes the key from the Idempotency-Key header, bare or as a structured-field string', async () => {
    const token = await api.token(newTenant());
    const args = { customer: 'c', amount: 100 };

    const bare = await api.post('/tools/create_invoice', token, args, { 'Idempotency-Key': 'h1' });
    const quoted = await api.post('/tools/create_invoice', token, args, { 'Idempotency-Key': '"h1"' });
    const both = await api.post(
      '/tools/create_invoice',
      token,
      { ...args, idempotency_key: 'h1' },
      { 'Idempotency-Key': 'h1' },
    );
    const differ = await api.post(
      '/tools/create_invoice',
      token,
      { ...args, idempotency_key: 'h2' },
      { 'Idempotency-Key': 'h1' },
    );

    expect(bare.body).toMatchObject({ ok: true, idempotent: false, key: 'h1' });
    expect(quoted.body).toMatchObject({ ok: true, idempotent: true, key: 'h1' });
    expect(both.body).toMatchObject({ ok: true, idempotent: true, key: 'h1' });
    expect(differ.status).toBe(400);
    expect(differ.body.error).toEqual({
      code: 'invalid_args',
      message: 'idempotency_key: the body and the Idempotency-Key header differ',
    });
  });
});
