/**
 * A payment provider that honours idempotency keys, as Stripe does: the same key always yields the
 * same movement, and money moves at most once per key. `LedgerPaymentProvider` (ledger.ts) is the
 * DynamoDB stand-in; `StripePaymentProvider` (stripe.ts) sends `idempotencyKey` as Stripe's
 * `Idempotency-Key` header. `createPaymentProvider` (select.ts) picks one from the environment.
 */
export interface PaymentProvider {
  refund(request: RefundRequest): Promise<ProviderRefund>;
}

/** What the provider answered: the movement, and whether it already existed for this key. */
export interface ProviderRefund {
  readonly movement: Movement;
  /**
   * True when the provider held this key's movement already and returned it (Stripe's replay) — a
   * call that crashed after the provider accepted is being finished, and no money moved now.
   */
  readonly replayed: boolean;
}

export interface RefundRequest {
  /** Derived by the runtime from the natural key: the same on every retry and after a crash. */
  readonly idempotencyKey: string;
  readonly tenant: string;
  readonly invoiceId: string;
  /** Integer minor units. */
  readonly amount: number;
  readonly currency: string;
}

/** One movement of money, as the provider reports it. */
export interface Movement {
  readonly movement_id: string;
  readonly provider_key: string;
  readonly tenant: string;
  readonly invoice_id: string;
  readonly kind: 'refund';
  readonly amount: number;
  readonly currency: string;
  readonly created_at: string;
}

/** The provider refused because the key was used before with other parameters (Stripe answers 400). */
export class ProviderKeyReuseError extends Error {
  constructor(
    message: string,
    /** The movement the key already holds, when the provider says (the ledger does; Stripe's 400 does not). */
    readonly existing?: Movement,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'ProviderKeyReuseError';
  }
}
