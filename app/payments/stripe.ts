import { ConflictError, InFlightError, InternalError, UnavailableError } from 'retrysafe/idempotency/errors';
import Stripe from 'stripe';
import {
  type Movement,
  type PaymentProvider,
  ProviderKeyReuseError,
  type ProviderRefund,
  type RefundRequest,
} from './provider';

/**
 * The Stripe payment an invoice's refund goes against: a PaymentIntent or a charge, never both (Stripe
 * refuses a refund that names both).
 */
export type RefundTarget =
  | { readonly paymentIntent: string; readonly charge?: never }
  | { readonly charge: string; readonly paymentIntent?: never };

/** The invoice a refund is for, as a {@link StripePaymentProviderOptions.refundTarget} resolver sees it. */
export interface InvoiceRef {
  readonly tenant: string;
  readonly invoiceId: string;
}

export interface StripePaymentProviderOptions {
  /**
   * Which Stripe payment an invoice was paid with. retrysafe invoices carry no Stripe id yet, so the
   * deployment says how they map: a lookup in its own records, or a naming rule. The resolver must be
   * stable: a retry that resolves another payment sends other parameters under the same key, which
   * Stripe refuses (answered `conflict`), so money never moves against two payments for one invoice.
   * @default the invoice id is the PaymentIntent id: `{ paymentIntent: invoiceId }`
   */
  readonly refundTarget?: (invoice: InvoiceRef) => RefundTarget | Promise<RefundTarget>;
  /**
   * How long a caller is told to wait (answered `pending`) when Stripe says the key is in use by a
   * request still running (409). The SDK has already retried once by then (see `createStripeClient`).
   * @default 1_000
   */
  readonly inFlightRetryAfterMs?: number;
}

export interface StripeClientSettings {
  /**
   * Per attempt. Stripe's own default (80 s) outlives a 10 s Lambda many times over: an attempt cut
   * off by the Lambda timeout leaves nothing to translate. 3 s, with one retry and its 0.5 s backoff,
   * ends by ~6.5 s and leaves the invocation time to record the receipt or answer `unavailable`.
   * @default 3_000
   */
  readonly timeoutMs?: number;
  /**
   * Retries the SDK makes itself: after a network error, a 409 (key in use) or a 5xx. Enabled because
   * every retry carries the same `Idempotency-Key` (ours, passed per request), so Stripe replays a
   * refund it already made instead of making another, and a lost response is recovered inside the
   * invocation instead of costing the agent a round trip. One, to stay within the Lambda's 10 s.
   * @default 1
   */
  readonly maxNetworkRetries?: number;
  /**
   * Where the API is, for tests and stripe-mock (`createPaymentProvider` reads it from `STRIPE_API_BASE`).
   * @default https://api.stripe.com on port 443
   */
  readonly apiBase?: StripeApiBase;
}

/** The SDK's `protocol`, `host` and `port` settings. */
export interface StripeApiBase {
  readonly protocol: 'http' | 'https';
  readonly host: string;
  readonly port: number;
}

/** Defaults of {@link createStripeClient}, as plain data. */
export const STRIPE_CLIENT_DEFAULTS = { timeoutMs: 3_000, maxNetworkRetries: 1 } as const;

/**
 * Metadata retrysafe writes on every refund: who asked, for which invoice, under which key. The key
 * is how our own refund is found again once Stripe has forgotten it (see `StripePaymentProvider`).
 */
export const REFUND_METADATA = {
  tenant: 'retrysafe_tenant',
  invoiceId: 'retrysafe_invoice_id',
  key: 'retrysafe_key',
} as const;

/** A Stripe client for refunds: bounded for a Lambda, optionally pointed at another API base. */
export function createStripeClient(apiKey: string, settings: StripeClientSettings = {}): Stripe {
  return new Stripe(apiKey, {
    timeout: settings.timeoutMs ?? STRIPE_CLIENT_DEFAULTS.timeoutMs,
    maxNetworkRetries: settings.maxNetworkRetries ?? STRIPE_CLIENT_DEFAULTS.maxNetworkRetries,
    ...settings.apiBase,
    appInfo: { name: 'retrysafe' },
  });
}

/**
 * Refunds through Stripe's API. Money moves at most once per derived key: the key is sent as Stripe's
 * `Idempotency-Key` on every attempt (ours, the SDK's retries, the retry after a crash), and Stripe
 * answers a repeated key with the stored refund.
 *
 * ```
 * attempt with key K ─▶ Stripe holds no K      ─▶ refund created           replayed: false
 *                    ├▶ K done, same params     ─▶ stored refund replayed   replayed: true
 *                    ├▶ K done, other params    ─▶ 400 idempotency_error    ProviderKeyReuseError (conflict)
 *                    ├▶ K still running         ─▶ 409                      InFlightError (pending)
 *                    └▶ K forgotten (> 24 h),
 *                       the charge refunded     ─▶ 400 charge_already_refunded
 *                                                   └▶ our refund, found by K in its metadata: replayed: true
 *                                                   └▶ someone else's refund: ConflictError
 * ```
 */
export class StripePaymentProvider implements PaymentProvider {
  readonly #stripe: Stripe;
  readonly #refundTarget: NonNullable<StripePaymentProviderOptions['refundTarget']>;
  readonly #inFlightRetryAfterMs: number;

  constructor(stripe: Stripe, options: StripePaymentProviderOptions = {}) {
    this.#stripe = stripe;
    this.#refundTarget = options.refundTarget ?? paymentIntentNamedLikeTheInvoice;
    this.#inFlightRetryAfterMs = options.inFlightRetryAfterMs ?? 1_000;
  }

  async refund(request: RefundRequest): Promise<ProviderRefund> {
    const target = await this.#refundTarget({ tenant: request.tenant, invoiceId: request.invoiceId });
    // Every attempt the SDK sends under our key, its own retries included.
    let attempts = 0;
    function countAttempt(event: Stripe.RequestEvent): void {
      if (event.idempotency_key === request.idempotencyKey) attempts += 1;
    }
    this.#stripe.on('request', countAttempt);
    try {
      const refund = await this.#stripe.refunds.create(
        {
          ...targetParams(target),
          amount: request.amount,
          metadata: {
            [REFUND_METADATA.tenant]: request.tenant,
            [REFUND_METADATA.invoiceId]: request.invoiceId,
            [REFUND_METADATA.key]: request.idempotencyKey,
          },
        },
        { idempotencyKey: request.idempotencyKey },
      );
      // Stripe replays what it stored for the key. When this call sent more than one attempt (the SDK
      // retried after a lost response), the stored refund may be this call's own: money moved now,
      // so it is not a replay. The tool's invoice record still lets only one call say "not a replay".
      const replayed = refund.lastResponse.headers['idempotent-replayed'] === 'true' && attempts === 1;
      return { movement: movementOf(refund, request), replayed };
    } catch (error) {
      if (error instanceof Stripe.errors.StripeInvalidRequestError && error.code === 'charge_already_refunded') {
        return await this.#ownRefund(request, target, error);
      }
      throw translated(error, request, this.#inFlightRetryAfterMs);
    } finally {
      this.#stripe.off('request', countAttempt);
    }
  }

  /**
   * Stripe keeps idempotency keys for 24 hours. A retry later than that (a crash after Stripe accepted,
   * its claim retried the next day) meets "already refunded" instead of a replay: the refund carrying
   * our key in its metadata is ours, and is returned as the replay it is. A refund without our key was
   * made elsewhere (the dashboard, another system): a conflict, since no retry can change it.
   */
  async #ownRefund(
    request: RefundRequest,
    target: RefundTarget,
    refused: InstanceType<typeof Stripe.errors.StripeInvalidRequestError>,
  ): Promise<ProviderRefund> {
    // A full refund leaves no room for a second one, so the list is short; 100 is Stripe's page limit.
    const refunds = await this.#stripe.refunds.list({ ...targetParams(target), limit: 100 }).catch((error: unknown) => {
      throw translated(error, request, this.#inFlightRetryAfterMs);
    });
    const own = refunds.data.find((refund) => refund.metadata?.[REFUND_METADATA.key] === request.idempotencyKey);
    if (own) return { movement: movementOf(own, request), replayed: true };
    throw new ConflictError(
      `invoice_id: the payment provider already holds a refund for invoice ${request.invoiceId} made elsewhere`,
      { cause: refused },
    );
  }
}

function paymentIntentNamedLikeTheInvoice(invoice: InvoiceRef): RefundTarget {
  return { paymentIntent: invoice.invoiceId };
}

function targetParams(target: RefundTarget): { payment_intent: string } | { charge: string } {
  return target.charge !== undefined ? { charge: target.charge } : { payment_intent: target.paymentIntent };
}

function movementOf(refund: Stripe.Refund, request: RefundRequest): Movement {
  return {
    movement_id: refund.id,
    provider_key: request.idempotencyKey,
    tenant: request.tenant,
    invoice_id: request.invoiceId,
    kind: 'refund',
    amount: refund.amount,
    currency: refund.currency,
    created_at: new Date(refund.created * 1000).toISOString(),
  };
}

/**
 * Stripe's errors as the answers they call for, next to the call that raises them. Decided by HTTP
 * status where the SDK's class does not say enough: the SDK makes a 409 a `StripeAPIError` whatever its
 * type, and a body that is not JSON (a proxy's 502 page) a `StripeAPIError` without a status.
 */
function translated(error: unknown, request: RefundRequest, inFlightRetryAfterMs: number): unknown {
  const { errors } = Stripe;
  if (!(error instanceof errors.StripeError)) return error;
  const about = `Stripe refund of invoice ${request.invoiceId}`;
  const seen = `${error.type}${error.code ? `/${error.code}` : ''}${error.requestId ? ` (${error.requestId})` : ''}`;
  if (error.statusCode === 409) {
    // Another request with our key is still running (another worker, or a call whose lock expired).
    return new InFlightError(`${about}: the key is in use by a running request: ${seen}`, inFlightRetryAfterMs, {
      cause: error,
    });
  }
  if (error instanceof errors.StripeIdempotencyError) {
    return new ProviderKeyReuseError(`${about}: the key was used with other parameters: ${seen}`, undefined, {
      cause: error,
    });
  }
  // The outcome is unknown (a timeout may come after Stripe refunded) or nothing happened: either way
  // the retry with the same key is safe, and Stripe replays what it made.
  if (error instanceof errors.StripeConnectionError || error instanceof errors.StripeRateLimitError) {
    return new UnavailableError('the payment provider is unavailable; retry with the same key', { cause: error });
  }
  if (error instanceof errors.StripeAPIError && (error.statusCode === undefined || error.statusCode >= 500)) {
    return new UnavailableError('the payment provider is unavailable; retry with the same key', { cause: error });
  }
  if (error instanceof errors.StripeAuthenticationError || error instanceof errors.StripePermissionError) {
    return new InternalError(`${about}: the API key was refused: ${seen}`, { cause: error });
  }
  // An invalid request (no such PaymentIntent, an amount above what was paid) was built from our own
  // invoice and mapping, not from the agent's arguments: a deployment or data mistake, for the log.
  return new InternalError(`${about}: refused: ${seen}: ${error.message}`, { cause: error });
}
