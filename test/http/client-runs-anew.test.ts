// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
// Rule 1 (docs/state-machine.md): a record whose effect may have happened is never deleted.
/**
 * The typed client and a call Powertools' handler holds (`runs_anew`): the server says a resend past the
 * record's TTL runs it anew and can act twice, so the client never resends it on its own (review 4, F1).
 */
import { answerToolCall, MayRunAnewError, RetrysafeClient, type ToolCaller } from '../../lib/client';
import { startTestApi, type TestApi } from '../helpers/api';
import { ownIdempotencyTable } from '../helpers/own-table';
import { putPowertoolsInFlight } from '../helpers/powertools-records';
import { newTenant } from '../helpers/world';

// Tenantless records (Powertools' handler's): a table of the suite's own (rule 6), as answer-waits.test.ts does.
ownIdempotencyTable('client-runs-anew');
let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

describe('the typed client and a call Powertools’ handler holds (runs_anew)', () => {
  it('RetrysafeClient.call stops at the 202 pending runs_anew answer with MayRunAnewError: it never resends past the TTL on its own', async () => {
    const tenant = newTenant('r4c');
    const key = `r4c-${Date.now()}`;
    const args = { to: 'a@example.com', subject: 's', body: 'b' };
    // What Powertools' handler leaves when its worker died mid-call (its effect may have happened): its lock
    // ended, its TTL 3 s away.
    await putPowertoolsInFlight(api.services.client, { tenant, key, args, ttlS: 3 });
    const first = await api.post('/tools/send_email', await api.token(tenant), { idempotency_key: key, ...args });
    expect(first.status).toBe(202);
    expect(first.body).toMatchObject({ status: 'pending', runs_anew: true });

    const client = new RetrysafeClient({
      baseUrl: api.url,
      token: await api.token(tenant),
      retry: { baseDelayMs: 10, maxDelayMs: 50 },
    });
    const answered = await client.call('send_email', args, { key, deadlineMs: 10_000 }).then(
      (value) => ({ resolved: value }),
      (error: unknown) => ({ rejected: String(error) }),
    );

    // It must not run the call anew on its own: the caller has to check the effect first.
    expect(answered).toEqual({ rejected: expect.stringContaining('MayRunAnewError') });
    expect(answered).not.toMatchObject({ resolved: { ok: true, idempotent: false } });
    const thrown = await client.call('send_email', args, { key, deadlineMs: 1_000 }).catch((error: unknown) => error);
    expect(thrown).toBeInstanceOf(MayRunAnewError);
    expect(thrown).toMatchObject({ tool: 'send_email', key });
  });
});

describe('the agent adapters and a call Powertools’ handler holds (MayRunAnewError; review 5, F3)', () => {
  it('answerToolCall answers the model (ok: false, the key, a next step) instead of throwing what the server decided', async () => {
    const client: ToolCaller = {
      call: async (tool, _args, options) => {
        // What RetrysafeClient.call throws on a 202 pending with runs_anew (client-runs-anew.test.ts).
        throw new MayRunAnewError(tool, options.key ?? '', 60_000);
      },
    };
    const answered = await answerToolCall(client, {
      tool: 'send_email',
      input: { to: 'a@example.com', subject: 's', body: 'b' },
      toolCallId: 'call_r5',
    }).then(
      (answer) => ({ answer }),
      (error: unknown) => ({ thrown: String(error) }),
    );

    // agent.ts: "Never an exception for what the server decided"; docs/agents.md: the adapters "answer
    // refusals to the model instead of throwing".
    expect(answered).toMatchObject({
      answer: {
        ok: false,
        key: 'call_r5',
        error: { code: 'runs_anew' },
        next: {
          action: 'call_again',
          after_ms: 60_000,
          message: expect.stringContaining('check with a read whether it acted'),
        },
      },
    });
  });
});

describe('the agent adapters’ runs_anew answer names the key (review 6)', () => {
  it('R6-5 its next step names the key to ask again with, as gave_up’s does: a model that asks again under a new tool-call id starts a new call, which runs now', async () => {
    const { answerToolCall, MayRunAnewError } = await import('../../lib/client');
    const client = {
      call: async (tool: string, _args: unknown, options: { key?: string }) => {
        throw new MayRunAnewError(tool, options.key ?? '', 60_000);
      },
    };
    const answer = await answerToolCall(client as never, {
      tool: 'send_email',
      input: { to: 'a@example.com', subject: 's', body: 'b' },
      toolCallId: 'call_r6',
    });

    expect(answer).toMatchObject({ ok: false, key: 'call_r6', error: { code: 'runs_anew' } });
    // The adapter's key is the tool call's id: only idempotency_key "call_r6" asks about this call again.
    expect((answer as { next: { message: string } }).next.message).toContain('call_r6');
  });
});
