import { randomUUID } from 'node:crypto';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import type { Invoice } from '../../app/domain/invoices';
import { LedgerPaymentProvider } from '../../app/payments/ledger';
import type { PaymentProvider, ProviderRefund, RefundRequest } from '../../app/payments/provider';
import { createPaymentProvider } from '../../app/payments/select';
import {
  createStripeClient,
  StripePaymentProvider,
  type StripePaymentProviderOptions,
} from '../../app/payments/stripe';
import { refund as refundTool } from '../../app/tools/refund';
import type { JsonObject, ToolResult } from '../../lib/idempotency/types';
import { advanceClock } from '../helpers/clock';
import { FakeStripe, type Fault, type Outcome } from '../helpers/fake-stripe';
import { gate } from '../helpers/tools';
import { createWorld, deadline, identity, type World } from '../helpers/world';

let world: World;
let fake: FakeStripe;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());
beforeEach(async () => {
  fake = await FakeStripe.start();
});
afterEach(async () => {
  jest.restoreAllMocks();
  await fake.close();
});

interface StripeToolOptions extends StripePaymentProviderOptions {
  /** The key the SDK sends. @default the fake's own */
  readonly apiKey?: string;
  /** The first refund reaches Stripe, then the worker dies: its answer never comes back. */
  readonly dieAfterFirst?: boolean;
}

/**
 * The real refund tool on a `StripePaymentProvider` that talks to the fake, plus what the tool asked of
 * the provider (the downstream key the runtime derived) and when the first refund was accepted.
 */
function stripeTool(options: StripeToolOptions = {}) {
  const stripe = new StripePaymentProvider(
    createStripeClient(options.apiKey ?? fake.apiKey, { apiBase: fake.apiBase }),
    options,
  );
  const requests: RefundRequest[] = [];
  const accepted = gate();
  const provider: PaymentProvider = {
    async refund(request: RefundRequest): Promise<ProviderRefund> {
      const first = requests.push(request) === 1;
      const answer = await stripe.refund(request);
      if (!(options.dieAfterFirst && first)) return answer;
      accepted.open();
      return new Promise<never>(() => {});
    },
  };
  return { tool: refundTool.bind({ ...world, provider }), requests, accepted: accepted.opened };
}

/** An invoice, and the PaymentIntent it was paid with at the fake: the same id (the default mapping). */
async function paidInvoice(tenant: string): Promise<Invoice> {
  const invoice = await world.seedInvoice(tenant);
  fake.addPaymentIntent(invoice.invoice_id, { amount: invoice.amount, currency: invoice.currency });
  return invoice;
}

function callFor(invoice: Invoice, key = 'k1') {
  return { idempotency_key: key, invoice_id: invoice.invoice_id, amount: invoice.amount };
}

function receiptOf(result: ToolResult): JsonObject {
  if (!result.ok) throw new Error(`expected a receipt, got ${JSON.stringify(result)}`);
  return result.receipt;
}

/** What the fake saw: which key each attempt carried, and what it answered. */
function attempts(): Array<[string | undefined, Outcome | undefined]> {
  return fake.received.map((received) => [received.idempotencyKey, received.outcome]);
}

describe('the refund tool on StripePaymentProvider (a fake Stripe on 127.0.0.1)', () => {
  it('refunds once, sending the derived downstream key as the Idempotency-Key, tenant and invoice as metadata', async () => {
    // Prepare
    const caller = identity();
    const invoice = await paidInvoice(caller.tenant);
    const { tool, requests } = stripeTool();

    // Act
    const result = await world.runtime.invoke(tool, caller, callFor(invoice), deadline());

    // Assess
    expect(result).toMatchObject({ ok: true, idempotent: false, key: 'k1' });
    expect(fake.refunds).toHaveLength(1);
    const [refund] = fake.refunds;
    expect(receiptOf(result)).toEqual({
      refund_id: refund?.id,
      invoice_id: invoice.invoice_id,
      amount: invoice.amount,
      currency: invoice.currency,
    });
    expect((await world.invoices.get(caller.tenant, invoice.invoice_id))?.refund?.refund_id).toBe(refund?.id);
    const key = requests[0]?.idempotencyKey;
    expect(key).toMatch(/^rs1_[0-9a-f]{64}$/);
    expect(attempts()).toEqual([[key, 'created']]);
    expect(fake.received[0]?.params).toMatchObject({
      payment_intent: invoice.invoice_id,
      amount: String(invoice.amount),
      'metadata[retrysafe_tenant]': caller.tenant,
      'metadata[retrysafe_invoice_id]': invoice.invoice_id,
      'metadata[retrysafe_key]': key,
    });
  });

  it('a worker that dies after Stripe accepted: the retry sends the same key, Stripe replays, and the retry is the call that finished it', async () => {
    const caller = identity();
    const invoice = await paidInvoice(caller.tenant);
    const { tool, requests, accepted } = stripeTool({ dieAfterFirst: true });

    // The first worker claims (its lock: 300 ms), Stripe refunds, the worker dies; its lock expires.
    void world.runtime.invoke(tool, caller, callFor(invoice), deadline(300));
    await accepted;
    advanceClock(1_000);
    const retry = await world.runtime.invoke(tool, caller, callFor(invoice), deadline());

    // No money moved now; the retry recorded the refund the dead worker started: it says it executed.
    expect(retry).toMatchObject({ ok: true, idempotent: false, key: 'k1' });
    expect(fake.refunds).toHaveLength(1);
    expect(receiptOf(retry).refund_id).toBe(fake.refunds[0]?.id);
    const key = requests[0]?.idempotencyKey;
    expect(requests.map((request) => request.idempotencyKey)).toEqual([key, key]);
    expect(attempts()).toEqual([
      [key, 'created'],
      [key, 'replayed'],
    ]);
  });

  it("a response lost after Stripe refunded: the SDK's own retry sends the same key, and money moved once", async () => {
    const caller = identity();
    const invoice = await paidInvoice(caller.tenant);
    const { tool, requests } = stripeTool();
    fake.failNext('lose_response');

    const result = await world.runtime.invoke(tool, caller, callFor(invoice), deadline());

    // The replay is of this call's own first attempt: money moved now, so it is no replay for the agent.
    expect(result).toMatchObject({ ok: true, idempotent: false });
    expect(fake.refunds).toHaveLength(1);
    expect(receiptOf(result).refund_id).toBe(fake.refunds[0]?.id);
    const key = requests[0]?.idempotencyKey;
    expect(attempts()).toEqual([
      [key, 'response_lost'],
      [key, 'replayed'],
    ]);
  });

  it.each<[string, Fault, Outcome]>([
    ['a 500 on every attempt', 'server_error', 'server_error'],
    ['a connection closed on every attempt', 'close', 'closed'],
  ])('%s answers unavailable; the retry with the same key refunds once', async (_label, fault, outcome) => {
    const caller = identity();
    const invoice = await paidInvoice(caller.tenant);
    const { tool, requests } = stripeTool();
    fake.failNext(fault, 2); // the first attempt and the SDK's retry

    const failed = await world.runtime.invoke(tool, caller, callFor(invoice), deadline());
    const retry = await world.runtime.invoke(tool, caller, callFor(invoice), deadline());

    expect(failed).toEqual({
      ok: false,
      error: { code: 'unavailable', message: 'the payment provider is unavailable; retry with the same key' },
    });
    expect(retry).toMatchObject({ ok: true, idempotent: false, key: 'k1' });
    expect(fake.refunds).toHaveLength(1);
    const key = requests[0]?.idempotencyKey;
    expect(attempts()).toEqual([
      [key, outcome],
      [key, outcome],
      [key, 'created'],
    ]);
  });

  it('the key in use by a running request (409) answers pending; once that request is done, the retry replays it', async () => {
    // Prepare: a first call is held at Stripe; a second client key asks for the same invoice's refund,
    // so the runtime derives the same downstream key and the second call reaches Stripe while it runs.
    const caller = identity();
    const invoice = await paidInvoice(caller.tenant);
    const { tool, requests } = stripeTool();
    const held = fake.holdNext();

    // Act
    const first = world.runtime.invoke(tool, caller, callFor(invoice, 'k1'), deadline());
    await held.arrived;
    const second = await world.runtime.invoke(tool, caller, callFor(invoice, 'k2'), deadline());
    held.release();
    const firstDone = await first;
    // The pending call's record stays in flight (pollable) until it is told to retry.
    advanceClock(second.ok === false && 'status' in second ? second.retry_after_ms : 0);
    const secondAgain = await world.runtime.invoke(tool, caller, callFor(invoice, 'k2'), deadline());

    // Assess
    expect(second).toEqual({ ok: false, status: 'pending', key: 'k2', retry_after_ms: expect.any(Number) });
    expect(firstDone).toMatchObject({ ok: true, idempotent: false, key: 'k1' });
    expect(secondAgain).toEqual({ ok: true, idempotent: true, key: 'k2', receipt: receiptOf(firstDone) });
    expect(fake.refunds).toHaveLength(1);
    const key = requests[0]?.idempotencyKey;
    expect(requests.map((request) => request.idempotencyKey)).toEqual([key, key]);
    expect(attempts()).toEqual([
      [key, 'created'],
      [key, 'key_in_use'],
      [key, 'key_in_use'],
    ]);
  });

  it('the same key with other parameters (the invoice now maps to another payment) answers conflict, and moves no money', async () => {
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    fake.addPaymentIntent('pi_first', { amount: invoice.amount, currency: invoice.currency });
    fake.addPaymentIntent('pi_second', { amount: invoice.amount, currency: invoice.currency });
    let paymentIntent = 'pi_first';
    const { tool, accepted } = stripeTool({ dieAfterFirst: true, refundTarget: () => ({ paymentIntent }) });

    void world.runtime.invoke(tool, caller, callFor(invoice), deadline(300));
    await accepted;
    paymentIntent = 'pi_second';
    advanceClock(1_000);
    const retry = await world.runtime.invoke(tool, caller, callFor(invoice), deadline());

    expect(retry).toMatchObject({ ok: false, error: { code: 'conflict' } });
    expect(fake.refunds.map((refund) => refund.payment_intent)).toEqual(['pi_first']);
    expect(attempts().map(([, outcome]) => outcome)).toEqual(['created', 'key_mismatch']);
    expect((await world.invoices.get(caller.tenant, invoice.invoice_id))?.refund).toBeUndefined();
  });

  it.each<[string, StripeToolOptions, boolean, Outcome]>([
    ['a refused API key', { apiKey: 'sk_test_not_the_right_one' }, true, 'unauthorized'],
    ['a PaymentIntent Stripe does not know', {}, false, 'no_such_payment_intent'],
  ])(
    '%s answers internal (a deployment mistake, not the agent’s), and moves no money',
    async (_label, options, paid, outcome) => {
      const caller = identity();
      const invoice = paid ? await paidInvoice(caller.tenant) : await world.seedInvoice(caller.tenant);
      const { tool } = stripeTool(options);

      const result = await world.runtime.invoke(tool, caller, callFor(invoice), deadline());

      expect(result).toEqual({ ok: false, error: { code: 'internal', message: 'internal error' } });
      expect(fake.refunds).toEqual([]);
      expect(attempts().map(([, seen]) => seen)).toEqual([outcome]);
    },
  );

  it('a retry after Stripe forgot the key (24 h) finds its own refund by the key in its metadata: no money moved', async () => {
    const caller = identity();
    const invoice = await paidInvoice(caller.tenant);
    const { tool, requests, accepted } = stripeTool({ dieAfterFirst: true });

    void world.runtime.invoke(tool, caller, callFor(invoice), deadline(300));
    await accepted;
    fake.forgetKeys();
    advanceClock(1_000);
    const retry = await world.runtime.invoke(tool, caller, callFor(invoice), deadline());

    // The retry finishes what the dead worker started: the one answer that says it executed.
    expect(retry).toMatchObject({ ok: true, idempotent: false, key: 'k1' });
    expect(fake.refunds).toHaveLength(1);
    expect(receiptOf(retry).refund_id).toBe(fake.refunds[0]?.id);
    const key = requests[0]?.idempotencyKey;
    expect(attempts()).toEqual([
      [key, 'created'],
      [key, 'already_refunded'],
    ]);
  });

  it('an invoice refunded outside retrysafe (the dashboard) answers conflict, and moves no more money', async () => {
    const caller = identity();
    const invoice = await paidInvoice(caller.tenant);
    const elsewhere = fake.addRefund(invoice.invoice_id);
    const { tool } = stripeTool();

    const result = await world.runtime.invoke(tool, caller, callFor(invoice), deadline());

    expect(result).toEqual({
      ok: false,
      error: {
        code: 'conflict',
        message: `invoice_id: the payment provider already holds a refund for invoice ${invoice.invoice_id} made elsewhere`,
      },
    });
    expect(fake.refunds).toEqual([elsewhere]);
    expect(attempts().map(([, outcome]) => outcome)).toEqual(['already_refunded']);
  });
});

describe('createPaymentProvider', () => {
  /** A refund request as the tool makes it, for an invoice the fake knows. */
  function refundRequest(invoiceId = `inv_${randomUUID()}`): RefundRequest {
    fake.addPaymentIntent(invoiceId, { amount: 4_200, currency: 'usd' });
    return { idempotencyKey: `rs1_${invoiceId}`, tenant: 't1', invoiceId, amount: 4_200, currency: 'usd' };
  }

  it('is the DynamoDB ledger unless PAYMENT_PROVIDER says otherwise', () => {
    const provider = createPaymentProvider({}, world.ledger);

    expect(provider).toBeInstanceOf(LedgerPaymentProvider);
  });

  it.each<[string, NodeJS.ProcessEnv, RegExp]>([
    ['an unknown provider', { PAYMENT_PROVIDER: 'paypal' }, /PAYMENT_PROVIDER: "paypal" is not one of ledger, stripe/],
    ['stripe without a key', { PAYMENT_PROVIDER: 'stripe' }, /STRIPE_SECRET_KEY or STRIPE_SECRET_ARN is required/],
    [
      'stripe with a publishable key and a base with a path (both reported at once)',
      { PAYMENT_PROVIDER: 'stripe', STRIPE_SECRET_KEY: 'pk_test_1', STRIPE_API_BASE: 'http://127.0.0.1:1/v1' },
      /secret \(sk_\) or restricted \(rk_\) key; STRIPE_API_BASE must be protocol, host and port/,
    ],
  ])('refuses %s when the process starts', (_label, env, message) => {
    expect(() => createPaymentProvider(env, world.ledger)).toThrow(message);
  });

  it('with PAYMENT_PROVIDER=stripe, refunds at STRIPE_API_BASE with STRIPE_SECRET_KEY', async () => {
    const env = { PAYMENT_PROVIDER: 'stripe', STRIPE_SECRET_KEY: fake.apiKey, STRIPE_API_BASE: fake.url };
    const request = refundRequest();

    const answer = await createPaymentProvider(env, world.ledger).refund(request);

    expect(answer).toEqual({
      replayed: false,
      movement: expect.objectContaining({ movement_id: fake.refunds[0]?.id, provider_key: request.idempotencyKey }),
    });
    expect(fake.received.map((received) => [received.authorization, received.idempotencyKey])).toEqual([
      [`Bearer ${fake.apiKey}`, request.idempotencyKey],
    ]);
  });

  it('with STRIPE_SECRET_ARN, reads the key from Secrets Manager on the first refund, once', async () => {
    const secretArn = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:stripe-AbCdEf';
    const secrets = mockClient(SecretsManagerClient);
    try {
      secrets.on(GetSecretValueCommand, { SecretId: secretArn }).resolves({ SecretString: `${fake.apiKey}\n` });
      const env = { PAYMENT_PROVIDER: 'stripe', STRIPE_SECRET_ARN: secretArn, STRIPE_API_BASE: fake.url };

      const provider = createPaymentProvider(env, world.ledger);
      const readAtStart = secrets.commandCalls(GetSecretValueCommand).length;
      await provider.refund(refundRequest());
      await provider.refund(refundRequest());

      expect(readAtStart).toBe(0);
      expect(secrets.commandCalls(GetSecretValueCommand)).toHaveLength(1);
      expect(fake.refunds).toHaveLength(2);
      expect(fake.received.map((received) => received.authorization)).toEqual([
        `Bearer ${fake.apiKey}`,
        `Bearer ${fake.apiKey}`,
      ]);
    } finally {
      secrets.restore();
    }
  });

  it('a Secrets Manager outage answers unavailable, and the next refund reads the secret again', async () => {
    const secretArn = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:stripe-AbCdEf';
    const secrets = mockClient(SecretsManagerClient);
    try {
      const outage = Object.assign(new Error('Service Unavailable'), {
        name: 'ServiceUnavailable',
        $fault: 'server',
        $metadata: { httpStatusCode: 503 },
      });
      secrets.on(GetSecretValueCommand).rejectsOnce(outage).resolves({ SecretString: fake.apiKey });
      const provider = createPaymentProvider(
        { PAYMENT_PROVIDER: 'stripe', STRIPE_SECRET_ARN: secretArn, STRIPE_API_BASE: fake.url },
        world.ledger,
      );

      const failed = provider.refund(refundRequest());
      await expect(failed).rejects.toMatchObject({ code: 'unavailable', cause: outage });
      const retried = await provider.refund(refundRequest());

      expect(retried.movement.movement_id).toBe(fake.refunds[0]?.id);
      expect(secrets.commandCalls(GetSecretValueCommand)).toHaveLength(2);
      expect(fake.refunds).toHaveLength(1);
    } finally {
      secrets.restore();
    }
  });
});
