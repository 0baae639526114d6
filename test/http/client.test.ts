import { createHash } from 'node:crypto';
import type { RetrysafeTools } from '../../app/client-types';
import type { Invoice } from '../../app/domain/invoices';
import {
  type FetchLike,
  GaveUpError,
  RetrysafeClient,
  type RetrysafeClientOptions,
  ToolCallError,
} from '../../lib/client';
import { DEFAULT_ATTACH_MAX_WAIT_MS } from '../../lib/idempotency';
import {
  type LossPolicy,
  type LossyProxy,
  loseEveryOther,
  loseFirstAnswersPerKey,
  type ProxiedRequest,
  startLossyProxy,
} from '../faults/lossy-proxy';
import { startTestApi, type TestApi } from '../helpers/api';
import { heldSendEmail } from '../helpers/held-send-email';
import { gate } from '../helpers/tools';
import { deadline, newTenant } from '../helpers/world';

let api: TestApi;
const proxies: LossyProxy[] = [];
beforeAll(async () => {
  api = await startTestApi();
});
afterEach(async () => {
  await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
});
afterAll(() => api.close());

/** The local API behind a proxy that loses answers as `policy` says. */
async function lossy(policy?: LossPolicy): Promise<LossyProxy> {
  const proxy = await startLossyProxy(api.url, policy);
  proxies.push(proxy);
  return proxy;
}

/** A typed client for a tenant; fast backoff, so a test's retries take milliseconds, not seconds. */
async function clientFor(
  baseUrl: string,
  tenant: string,
  options: Partial<Pick<RetrysafeClientOptions, 'fetch' | 'deadlineMs'>> = {},
) {
  return new RetrysafeClient<RetrysafeTools>({
    baseUrl,
    token: await api.token(tenant),
    retry: { baseDelayMs: 10, maxDelayMs: 50 },
    ...options,
  });
}

async function seedInvoices(tenant: string, count: number): Promise<Invoice[]> {
  const invoices = Array.from({ length: count }, (_, i) => ({
    tenant,
    invoice_id: `inv_seed_${i}`,
    customer: `cus_${i}`,
    amount: 1_000 + i,
    currency: 'usd',
    created_at: new Date().toISOString(),
  }));
  await Promise.all(invoices.map((invoice) => api.services.invoices.create(invoice)));
  return invoices;
}

function keyOf(request: ProxiedRequest): unknown {
  return request.method === 'POST' ? JSON.parse(request.body).idempotency_key : undefined;
}

describe('RetrysafeClient through a network that loses answers', () => {
  it('refunds 20 invoices once each while every other answer is lost: one ledger movement per invoice, the stored receipt as the answer', async () => {
    // Prepare
    const tenant = newTenant();
    const invoices = await seedInvoices(tenant, 20);
    const proxy = await lossy(loseEveryOther());
    const client = await clientFor(proxy.url, tenant);

    // Act: 20 intents at once, one key each
    const answers = await Promise.all(
      invoices.map((invoice, i) =>
        client.call('refund', { invoice_id: invoice.invoice_id, amount: invoice.amount }, { key: `refund-${i}` }),
      ),
    );

    // Assess: the world holds one movement per invoice, and each answer is what the invoice holds
    const movements = await api.services.ledger.movements(tenant);
    expect(movements.map((movement) => movement.invoice_id).sort()).toEqual(
      invoices.map((invoice) => invoice.invoice_id).sort(),
    );
    for (const [i, answer] of answers.entries()) {
      const stored = await api.services.invoices.get(tenant, invoices[i]!.invoice_id);
      const movement = movements.find((m) => m.invoice_id === invoices[i]!.invoice_id)!;
      expect(answer.receipt).toEqual(stored!.refund);
      expect(answer.receipt.refund_id).toBe(movement.movement_id);
      // an answer the client saw after losing one is a replay of the first execution
      const lostOne = proxy.requests.some((request) => request.lost && keyOf(request) === answer.key);
      expect(answer.idempotent).toBe(lostOne);
    }
    const lost = proxy.requests.filter((request) => request.lost);
    expect(lost.length).toBe(Math.ceil(proxy.requests.length / 2));
    expect(new Set(lost.map((request) => request.lost))).toEqual(new Set(['close', 'reset']));
  });

  it('creates 20 invoices once each when the first two answers of every intent are lost', async () => {
    // Prepare
    const tenant = newTenant();
    const proxy = await lossy(loseFirstAnswersPerKey(2));
    const client = await clientFor(proxy.url, tenant);

    // Act
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        client.call('create_invoice', { customer: `cus_${i}`, amount: 100 + i }, { key: `invoice-${i}` }),
      ),
    );

    // Assess: every intent was sent exactly three times (two answers lost), and the table holds 20 invoices
    const stored = await api.services.invoices.list(tenant);
    expect(stored).toHaveLength(20);
    for (const answer of answers) {
      const invoice = stored.find((item) => item.invoice_id === answer.receipt.invoice_id);
      expect(answer.idempotent).toBe(true);
      expect(answer.receipt).toEqual({
        invoice_id: invoice!.invoice_id,
        customer: invoice!.customer,
        amount: invoice!.amount,
        currency: invoice!.currency,
      });
      expect(proxy.requests.filter((request) => keyOf(request) === answer.key)).toHaveLength(3);
    }
  });

  it.each(['close', 'reset'] as const)(
    'retries an answer lost on a pooled keep-alive connection (%s)',
    async (loss) => {
      // Prepare: lose the first answer of a request that came on a connection already used before
      // (the pool hands sockets back asynchronously, so which request reuses one is the pool's choice)
      const tenant = newTenant();
      const proxy = await lossy(function onReusedConnection(request, earlier) {
        if (earlier.some((other) => other.lost)) return false;
        return earlier.some((other) => other.index < request.index && other.connection === request.connection) && loss;
      });
      const client = await clientFor(proxy.url, tenant);

      // Act: sequential intents, as an agent's turn makes them
      const answers = [];
      for (let i = 0; i < 10; i++) {
        answers.push(await client.call('create_invoice', { customer: `cus_${i}`, amount: 100 + i }, { key: `k${i}` }));
      }

      // Assess: one answer was lost on a reused socket; its intent was retried on a new one and replayed
      const lost = proxy.requests.filter((request) => request.lost);
      expect(lost).toHaveLength(1);
      const [dropped] = lost;
      const retry = proxy.requests.find(
        (request) => request.index > dropped!.index && keyOf(request) === keyOf(dropped!),
      );
      expect(dropped!.lost).toBe(loss);
      expect(retry!.connection).not.toBe(dropped!.connection);
      expect(answers.map((answer) => answer.idempotent)).toEqual(
        answers.map((answer) => answer.key === keyOf(dropped!)),
      );
      expect(await api.services.invoices.list(tenant)).toHaveLength(10);
    },
  );
});

describe('RetrysafeClient keys', () => {
  it('derives the key from the tool-call id: the same id twice is one intent and one invoice', async () => {
    // Prepare
    const tenant = newTenant();
    const proxy = await lossy();
    const client = await clientFor(proxy.url, tenant);
    const args = { customer: 'cus_ada', amount: 4_200 };

    // Act
    const first = await client.call('create_invoice', args, { toolCallId: 'call_Xy12' });
    const again = await client.call('create_invoice', args, { toolCallId: 'call_Xy12' });
    const other = await client.call('create_invoice', args, { toolCallId: 'call_Zz34' });

    // Assess
    expect(proxy.requests.map(keyOf)).toEqual(['call_Xy12', 'call_Xy12', 'call_Zz34']);
    expect(first).toMatchObject({ idempotent: false, key: 'call_Xy12' });
    expect(again).toEqual({ ...first, idempotent: true });
    expect(other.receipt.invoice_id).not.toBe(first.receipt.invoice_id);
    expect(await api.services.invoices.list(tenant)).toHaveLength(2);
  });

  it('hashes a tool-call id that is no valid key into tc_<sha256>, stable across calls', async () => {
    const tenant = newTenant();
    const client = await clientFor(api.url, tenant);
    const id = `\u8c03\u7528-${'x'.repeat(300)}`;

    const first = await client.call('create_invoice', { customer: 'c', amount: 1 }, { toolCallId: id });
    const again = await client.call('create_invoice', { customer: 'c', amount: 1 }, { toolCallId: id });

    expect(first.key).toBe(`tc_${createHash('sha256').update(id).digest('hex')}`);
    expect(again).toEqual({ ...first, idempotent: true });
  });

  it('mints one key for a call that brings none, sends it on every retry, and returns it for reuse', async () => {
    // Prepare
    const tenant = newTenant();
    const proxy = await lossy(loseFirstAnswersPerKey(1));
    const client = await clientFor(proxy.url, tenant);

    // Act
    const answer = await client.call('create_invoice', { customer: 'cus_ada', amount: 4_200 });
    const reused = await client.call('create_invoice', { customer: 'cus_ada', amount: 4_200 }, { key: answer.key });
    const operation = await client.operation('create_invoice', answer.key);

    // Assess
    expect(answer.key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(proxy.requests.slice(0, 2).map(keyOf)).toEqual([answer.key, answer.key]);
    expect(proxy.requests[0]!.lost).toBe('close');
    expect(reused).toEqual({ ...answer, idempotent: true });
    expect(operation).toEqual({ ok: true, status: 'completed', key: answer.key, receipt: answer.receipt });
    expect(await api.services.invoices.list(tenant)).toHaveLength(1);
  });
});

describe('RetrysafeClient refusals', () => {
  it.each([
    ['a conflict (422)', 'conflict', 422, { customer: 'cus_ada', amount: 999 }, 'k-used'],
    ['bad arguments (400)', 'invalid_args', 400, { customer: 'cus_ada', amount: -1 }, 'k-bad'],
  ])('throws %s at once: one request, no retry', async (_label, code, status, args, key) => {
    // Prepare: k-used already holds another amount
    const tenant = newTenant();
    const proxy = await lossy();
    const client = await clientFor(proxy.url, tenant);
    await client.call('create_invoice', { customer: 'cus_ada', amount: 100 }, { key: 'k-used' });
    const before = proxy.requests.length;

    // Act
    const error = await client.call('create_invoice', args, { key }).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(ToolCallError);
    expect(error).toMatchObject({ code, status, key, tool: 'create_invoice', detail: expect.any(String) });
    expect(proxy.requests.length - before).toBe(1);
  });

  it.each([
    ['an unknown invoice (404)', 'not_found', 404, 'refund'],
    ['an unknown tool (404)', 'not_found', 404, 'launch_rockets'],
  ])('throws %s at once: one request, no retry', async (_label, code, status, tool) => {
    const proxy = await lossy();
    const client = new RetrysafeClient({ baseUrl: proxy.url, token: await api.token(newTenant()) });

    const error = await client
      .call(tool, { invoice_id: 'inv_nope', amount: 1 }, { key: 'k1' })
      .catch((e: unknown) => e);

    expect(error).toMatchObject({ name: 'ToolCallError', code, status });
    expect(proxy.requests).toHaveLength(1);
  });

  it('throws unauthorized (401) at once for a bad token', async () => {
    const proxy = await lossy();
    const client = new RetrysafeClient({ baseUrl: proxy.url, token: 'not-a-jwt' });

    const error = await client.call('create_invoice', { customer: 'c', amount: 1 }).catch((e: unknown) => e);

    expect(error).toMatchObject({ name: 'ToolCallError', code: 'unauthorized', status: 401 });
    expect(proxy.requests).toHaveLength(1);
  });
});

describe('RetrysafeClient and a call still in flight', () => {
  /** Holds a send_email under `key` in the runtime (as a slow first attempt would) until `release`. */
  function holdSendEmail(tenant: string, key: string, args: { to: string; subject: string; body: string }) {
    const { tool: held, started, release } = heldSendEmail();
    const running = api.runtime.invoke(
      held,
      { tenant, user: 'ada' },
      { idempotency_key: key, ...args },
      deadline(20_000),
    );
    return { started: started.opened, release: release.open, running };
  }

  const email = { to: 'ada@example.com', subject: 'Your refund', body: 'It is on its way.' };

  it('retries pending until the first call completes, and answers its receipt', async () => {
    // Prepare: the first call holds the key; the client's fetch reports each status it reads
    const tenant = newTenant();
    const first = holdSendEmail(tenant, 'k-held', email);
    await first.started;
    const statuses: number[] = [];
    const sawPending = gate();
    const observed: FetchLike = async function observedFetch(url, init) {
      const response = await fetch(url, init);
      statuses.push(response.status);
      if (response.status === 202) sawPending.open();
      return response;
    };
    const client = await clientFor(api.url, tenant, { fetch: observed });

    // Act: the client meets pending; only then does the first call finish
    const calling = client.call('send_email', email, { key: 'k-held' });
    await sawPending.opened;
    const whilePending = await client.operation('send_email', 'k-held');
    first.release();
    await first.running;
    const answer = await calling;

    // Assess
    expect(statuses[0]).toBe(202);
    expect(statuses.at(-1)).toBe(200);
    expect(whilePending).toEqual({ ok: true, status: 'pending', key: 'k-held', retry_after_ms: expect.any(Number) });
    expect(answer).toEqual({
      ok: true,
      idempotent: true,
      key: 'k-held',
      receipt: { message_id: 'msg_held', to: email.to, subject: email.subject },
    });
  });

  it('gives up at the deadline with the key, and operation(tool, key) finds the receipt later', async () => {
    // Prepare
    const tenant = newTenant();
    const first = holdSendEmail(tenant, 'k-slow', email);
    await first.started;
    // Longer than the server's attach cap (2 s: its duplicate waits that long for the held call before it
    // answers pending), shorter than that wait plus the hinted second before the next attempt.
    const client = await clientFor(api.url, tenant, { deadlineMs: 2_800 });

    // Act
    const startedAt = Date.now();
    const error = await client.call('send_email', email, { key: 'k-slow' }).catch((e: unknown) => e);
    const gaveUpAfter = Date.now() - startedAt;
    first.release();
    await first.running;
    const later = await client.operation('send_email', (error as GaveUpError).key);

    // Assess
    expect(error).toBeInstanceOf(GaveUpError);
    expect(error).toMatchObject({ key: 'k-slow', tool: 'send_email', last: 'pending' });
    // One round trip: the server attached for its cap (each pending was a round trip a second before).
    expect((error as GaveUpError).attempts).toBe(1);
    expect(gaveUpAfter).toBeGreaterThanOrEqual(DEFAULT_ATTACH_MAX_WAIT_MS);
    // a client that ignored the deadline would run to its 30 s default
    expect(gaveUpAfter).toBeLessThanOrEqual(2_800 + 1_000);
    expect(later).toEqual({
      ok: true,
      status: 'completed',
      key: 'k-slow',
      receipt: { message_id: 'msg_held', to: email.to, subject: email.subject },
    });
  });

  it('answers not_found for a key nobody used', async () => {
    const client = await clientFor(api.url, newTenant());

    await expect(client.operation('send_email', 'never-used')).rejects.toMatchObject({
      name: 'ToolCallError',
      code: 'not_found',
      status: 404,
    });
  });
});
