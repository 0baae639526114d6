import { NEXT_ACTIONS, nextAfterError } from '../../lib/api/next-step';
import { HTTP_STATUS, type HttpErrorCode } from '../../lib/api/status';
import { answerToolCall, RetrysafeClient } from '../../lib/client';
import { startTestApi, type TestApi } from '../helpers/api';
import { heldSendEmail } from '../helpers/tools';
import { deadline, newTenant } from '../helpers/world';

// Every answer says what to do next as data (`next`): clients that show a model only the answer object
// (MCP `structuredContent`, the agent client's answer) still tell it. Suites elsewhere assert the answers
// themselves; this one asserts their next steps, over HTTP and through the agent client.

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

describe('the next step, by code', () => {
  it.each(Object.keys(HTTP_STATUS) as HttpErrorCode[])(
    '%s names an action and one sentence; only a retryable code says call_again, with a wait',
    (code) => {
      const next = nextAfterError(code);

      expect(NEXT_ACTIONS).toContain(next.action);
      expect(next.message).toMatch(/^[A-Z].*\.$/);
      const retryable = HTTP_STATUS[code] >= 500;
      expect({ code, action: next.action, waits: typeof next.after_ms === 'number' }).toEqual({
        code,
        action: retryable ? 'call_again' : expect.not.stringMatching(/^call_again$/),
        waits: retryable,
      });
    },
  );
});

describe('the next step over HTTP', () => {
  it('says a first call and its replay are done, and that the replay must not be repeated', async () => {
    const token = await api.token(newTenant());
    const body = { idempotency_key: 'k1', customer: 'cus_ada', amount: 4_200 };

    const first = await api.post('/tools/create_invoice', token, body);
    const replay = await api.post('/tools/create_invoice', token, body);

    expect(first.next).toEqual({
      action: 'none',
      message: expect.stringMatching(/^Done, once: .*Do not call it again/),
    });
    expect(replay.next).toEqual({
      action: 'none',
      message: expect.stringMatching(/^Already done: .*nothing was done now.*Do not repeat it\.$/),
    });
  });

  it('sends a pending call back after retry_after_ms, naming the poll; the poll it names answers', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant, 'ada');
    const { tool: held, started, release: hold } = heldSendEmail();
    const body = { idempotency_key: 'k/1', to: 'a@example.com', subject: 's', body: 'b' };
    const running = api.runtime.invoke(held, { tenant, user: 'ada' }, body, deadline(5_000));
    await started.opened;

    const pending = await api.post('/tools/send_email', token, body);
    const polled = await api.get(pending.next!.poll!.path!, token);
    hold.open();
    await running;
    const done = await api.get(pending.next!.poll!.path!, token);

    expect(pending.status).toBe(202);
    expect(pending.next).toEqual({
      action: 'call_again',
      after_ms: pending.body.retry_after_ms,
      poll: {
        tool: 'get_operation',
        arguments: { tool: 'send_email', idempotency_key: 'k/1' },
        path: '/tools/send_email/operations/k%2F1',
      },
      message: expect.stringContaining('it will not run twice'),
    });
    expect(polled.body).toMatchObject({ status: 'pending', key: 'k/1' });
    expect(polled.next).toMatchObject({ action: 'call_again', after_ms: expect.any(Number) });
    expect(done.body).toMatchObject({ status: 'completed', key: 'k/1' });
    expect(done.next).toMatchObject({ action: 'none' });
  });

  it('tells a conflict to repeat the original arguments, and a refusal to fix them', async () => {
    const token = await api.token(newTenant());
    await api.post('/tools/create_invoice', token, { idempotency_key: 'k1', customer: 'c', amount: 100 });

    const conflict = await api.post('/tools/create_invoice', token, {
      idempotency_key: 'k1',
      customer: 'c',
      amount: 9,
    });
    const invalid = await api.post('/tools/create_invoice', token, { idempotency_key: 'k2', customer: 'c' });
    const missing = await api.post('/tools/refund', token, { idempotency_key: 'k3', invoice_id: 'inv_no', amount: 1 });
    const read = await api.get('/invoices/inv_no', token);
    const anonymous = await api.post('/tools/create_invoice', '', { idempotency_key: 'k4', customer: 'c', amount: 1 });

    expect([conflict.status, conflict.next?.action]).toEqual([422, 'use_original_arguments']);
    expect([invalid.status, invalid.next?.action]).toEqual([400, 'fix_arguments']);
    expect([missing.status, missing.next?.action]).toEqual([404, 'fix_arguments']);
    expect([read.status, read.next?.action]).toEqual([404, 'fix_arguments']);
    expect([anonymous.status, anonymous.next?.action]).toEqual([401, 'stop']);
  });
});

describe('the next step through the agent client', () => {
  it('passes the model the same next step as the server, and a call it gave up on to resume under its key', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant, 'ada');
    const client = new RetrysafeClient({ baseUrl: api.url, token, deadlineMs: 300 });
    const body = { to: 'a@example.com', subject: 's', body: 'b' };
    const { tool: held, started, release: hold } = heldSendEmail();
    const running = api.runtime.invoke(
      held,
      { tenant, user: 'ada' },
      { idempotency_key: 'held', ...body },
      deadline(5_000),
    );
    await started.opened;

    const gaveUp = await answerToolCall(client, {
      tool: 'send_email',
      input: { ...body, idempotency_key: 'held' },
      toolCallId: 'call_1',
    });
    hold.open();
    await running;
    const resumed = await answerToolCall(client, {
      tool: 'send_email',
      input: { ...body, idempotency_key: 'held' },
      toolCallId: 'call_2',
    });
    const direct = await api.post('/tools/send_email', token, { idempotency_key: 'held', ...body });

    expect(gaveUp).toMatchObject({
      ok: false,
      key: 'held',
      error: { code: 'gave_up' },
      next: { action: 'call_again', after_ms: expect.any(Number), message: expect.stringContaining('"held"') },
    });
    expect(resumed).toMatchObject({ ok: true, idempotent: true });
    expect((resumed as { next: unknown }).next).toEqual(direct.next);
  });
});
