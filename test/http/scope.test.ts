import { startTestApi, type TestApi } from '../helpers/api';
import { heldSendEmail } from '../helpers/held-send-email';
import { createWorld, deadline, newTenant } from '../helpers/world';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

describe('scope over HTTP: per tenant, per user, per tool', () => {
  it("never shows tenant A's invoice, ticket or operation to tenant B", async () => {
    const ada = await api.token(newTenant('a'), 'ada');
    const eve = await api.token(newTenant('b'), 'eve');
    const invoice = (
      await api.post('/tools/create_invoice', ada, { idempotency_key: 'k1', customer: 'c', amount: 100 })
    ).body.receipt;
    const ticket = (await api.post('/tools/create_ticket', ada, { idempotency_key: 'k2', title: 't' })).body.receipt;

    const readInvoice = await api.get(`/invoices/${invoice.invoice_id}`, eve);
    const readTicket = await api.get(`/tickets/${ticket.ticket_key}`, eve);
    const refund = await api.post('/tools/refund', eve, {
      idempotency_key: 'k9',
      invoice_id: invoice.invoice_id,
      amount: 100,
    });
    const close = await api.post('/tools/close_ticket', eve, {
      idempotency_key: 'k9',
      ticket_key: ticket.ticket_key,
      resolution: 'r',
    });
    const operation = await api.get('/tools/create_invoice/operations/k1', eve);
    const sameKey = await api.post('/tools/create_invoice', eve, { idempotency_key: 'k1', customer: 'c', amount: 100 });

    expect([readInvoice.status, readTicket.status, refund.status, close.status, operation.status]).toEqual([
      404, 404, 404, 404, 404,
    ]);
    // Eve's k1 is her own key: it creates her own invoice, not a replay of Ada's.
    expect(sameKey.body).toMatchObject({ ok: true, idempotent: false });
    expect(sameKey.body.receipt.invoice_id).not.toBe(invoice.invoice_id);
    expect((await api.get(`/invoices/${invoice.invoice_id}`, ada)).body.invoice.refunded).toBe(false);
  });

  it("keeps Ada's k1 from Bob's and from her colleague Carol's", async () => {
    const tenant = newTenant();
    const ada = await api.token(tenant, 'ada');
    const carol = await api.token(tenant, 'carol');
    const bob = await api.token(newTenant(), 'bob');
    const body = { idempotency_key: 'k1', customer: 'c', amount: 100 };

    const first = await api.post('/tools/create_invoice', ada, body);
    const byCarol = await api.post('/tools/create_invoice', carol, body);
    const byBob = await api.post('/tools/create_invoice', bob, body);
    const carolPoll = await api.get('/tools/create_invoice/operations/k1', carol);
    const adaPoll = await api.get('/tools/create_invoice/operations/k1', ada);

    expect(byCarol.body.idempotent).toBe(false);
    expect(byBob.body.idempotent).toBe(false);
    expect(new Set([first, byCarol, byBob].map((r) => r.body.receipt.invoice_id)).size).toBe(3);
    expect(carolPoll.body.receipt).toEqual(byCarol.body.receipt);
    expect(adaPoll.body).toEqual({ ok: true, status: 'completed', key: 'k1', receipt: first.body.receipt });
  });

  it("keeps refund's k1 apart from send_email's k1", async () => {
    const token = await api.token(newTenant());
    await api.post('/tools/create_ticket', token, { idempotency_key: 'k1', title: 't' });

    const email = await api.post('/tools/send_email', token, {
      idempotency_key: 'k1',
      to: 'a@example.com',
      subject: 's',
      body: 'b',
    });

    expect(email.body).toMatchObject({ ok: true, idempotent: false });
    expect((await api.get('/tools/send_email/operations/k1', token)).body.receipt).toEqual(email.body.receipt);
    expect((await api.get('/tools/create_ticket/operations/k1', token)).body.receipt.title).toBe('t');
  });

  it("never shows Ada's operation to Carol, who has no record of her own", async () => {
    const tenant = newTenant();
    const ada = await api.token(tenant, 'ada');
    const carol = await api.token(tenant, 'carol');
    await api.post('/tools/create_ticket', ada, { idempotency_key: 'only-ada', title: 't' });

    const byCarol = await api.get('/tools/create_ticket/operations/only-ada', carol);
    const byAda = await api.get('/tools/create_ticket/operations/only-ada', ada);

    expect(byCarol.status).toBe(404);
    expect(byAda.status).toBe(200);
  });

  it('answers 404 for an operation that never was, or of an unknown tool', async () => {
    const token = await api.token(newTenant());

    expect((await api.get('/tools/send_email/operations/never', token)).status).toBe(404);
    expect((await api.get('/tools/launch/operations/k1', token)).status).toBe(404);
  });
});

describe('in flight over HTTP', () => {
  it('answers 202 pending with Retry-After while the first call runs, the poll says pending, then both see the receipt', async () => {
    // Prepare: hold a send_email in flight under Ada's k1, in this process.
    const tenant = newTenant();
    const token = await api.token(tenant, 'ada');
    const { tool: held, started, release: hold } = heldSendEmail();
    const body = { idempotency_key: 'k1', to: 'a@example.com', subject: 's', body: 'b' };
    const running = api.runtime.invoke(held, { tenant, user: 'ada' }, body, deadline(5_000));
    await started.opened;

    // Act
    const pending = await api.post('/tools/send_email', token, body);
    const poll = await api.get('/tools/send_email/operations/k1', token);
    hold.open();
    await running;
    const after = await api.post('/tools/send_email', token, body);
    const pollAfter = await api.get('/tools/send_email/operations/k1', token);

    // Assess
    expect(pending.status).toBe(202);
    expect(pending.body).toEqual({ ok: false, status: 'pending', key: 'k1', retry_after_ms: expect.any(Number) });
    expect(pending.headers.get('retry-after')).toBe('1');
    expect(poll.body).toEqual({ ok: true, status: 'pending', key: 'k1', retry_after_ms: expect.any(Number) });
    expect(after.body).toEqual({
      ok: true,
      idempotent: true,
      key: 'k1',
      receipt: { message_id: 'msg_held', to: 'a@example.com', subject: 's' },
    });
    expect(pollAfter.body).toEqual({ ok: true, status: 'completed', key: 'k1', receipt: after.body.receipt });
  });

  it('runs 24 concurrent same-key calls once: one first execution, the rest replays or 202', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const invoice = (
      await api.post('/tools/create_invoice', token, { idempotency_key: 'c', customer: 'c', amount: 700 })
    ).body.receipt;
    const body = { idempotency_key: 'r1', invoice_id: invoice.invoice_id, amount: 700 };

    const replies = await Promise.all(Array.from({ length: 24 }, () => api.post('/tools/refund', token, body)));

    const statuses = replies.map((r) => r.status);
    expect(replies.filter((r) => r.status === 200 && r.body.idempotent === false)).toHaveLength(1);
    expect(statuses.every((s) => s === 200 || s === 202)).toBe(true);
    for (const reply of replies.filter((r) => r.status === 202)) expect(reply.headers.get('retry-after')).toBe('1');
    const world = createWorld();
    expect(await world.ledgerRows(tenant)).toHaveLength(1);
    world.destroy();
  });
});
