import { TOOLS_WITH_FIXTURE } from '../fixtures/registry';
import { startTestApi, type TestApi } from '../helpers/api';
import { newTenant } from '../helpers/world';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({ tools: TOOLS_WITH_FIXTURE });
});
afterAll(() => api.close());

describe('a tool added the documented way (a tool file, a Lambda entry, one registry line)', () => {
  it('is listed by GET /tools with its schema and the required idempotency_key', async () => {
    const reply = await api.get('/tools', await api.token(newTenant()));

    const listed = reply.body.tools.find((tool: { name: string }) => tool.name === 'send_reminder');
    expect(listed).toMatchObject({
      name: 'send_reminder',
      input_schema: { required: ['idempotency_key', 'to', 'text'] },
      annotations: { readOnlyHint: false, idempotentHint: true, destructiveHint: false, openWorldHint: false },
    });
  });

  it('is served by the local API: executed once, replayed with the same key, polled, and queued once', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const body = { idempotency_key: 'k1', to: 'ada@example.com', text: 'pay invoice 7' };

    const first = await api.post('/tools/send_reminder', token, body);
    const replay = await api.post('/tools/send_reminder', token, body);
    const conflict = await api.post('/tools/send_reminder', token, { ...body, text: 'other' });
    const poll = await api.get('/tools/send_reminder/operations/k1', token);

    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ ok: true, idempotent: false, receipt: { to: 'ada@example.com' } });
    expect(replay.body).toEqual({ ...first.body, idempotent: true });
    expect(conflict.status).toBe(422);
    expect(poll.body).toEqual({ ok: true, status: 'completed', key: 'k1', receipt: first.body.receipt });
    const queued = await api.services.outbox.get(tenant, first.body.receipt.reminder_id);
    expect(queued).toMatchObject({ status: 'queued', body: 'pay invoice 7' });
  });
});
