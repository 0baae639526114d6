import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { ConflictError, defineToolModule, InvalidArgsError, NotFoundError, UnavailableError } from 'retrysafe/tools';
import * as z from 'zod/mini';
import { MAX_INVOICE_ID_LENGTH, type RecordedRefund, type RefundReceipt } from '../domain/invoices';
import { ProviderKeyReuseError } from '../payments/provider';
import type { ToolServices } from '../services';

export const refundArgs = z.strictObject({
  invoice_id: z
    .string()
    .check(
      z.minLength(1),
      z.maxLength(MAX_INVOICE_ID_LENGTH),
      z.describe('The invoice to refund, as returned by create_invoice.'),
    ),
  amount: z
    .int()
    .check(
      z.positive(),
      z.maximum(Number.MAX_SAFE_INTEGER),
      z.describe('The full invoice amount in integer minor units (cents): refunds are full refunds.'),
    ),
});

/**
 * `refund`: a full refund of one invoice. Natural key: `invoice_id` — one refund per invoice, whatever
 * client key the agent sends, after any TTL and under any race.
 */
export const refund = defineToolModule({
  name: 'refund',
  description: 'Refund an invoice in full. One refund per invoice: repeating it returns the first receipt.',
  args: refundArgs,
  annotations: { destructiveHint: true, openWorldHint: true },
  naturalKey: ['invoice_id'],
  receipt: z.strictObject({ refund_id: z.string(), invoice_id: z.string(), amount: z.int(), currency: z.string() }),
  access: { invoices: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], ledger: ['dynamodb:PutItem'] },
  async execute(
    args,
    { identity, downstreamKey, callId },
    { invoices, provider }: Pick<ToolServices, 'invoices' | 'provider'>,
  ) {
    const invoice = await invoices.get(identity.tenant, args.invoice_id);
    if (!invoice) throw new NotFoundError(`invoice_id: no invoice ${args.invoice_id}`);
    if (invoice.refund) return replayOf({ receipt: invoice.refund, by: invoice.refunded_by }, args.amount, callId);
    if (args.amount !== invoice.amount) {
      throw new InvalidArgsError(`amount: a refund is a full refund of ${invoice.amount} ${invoice.currency}`);
    }

    // The provider guards the money with the derived key; the invoice guards the receipt. A crash
    // between the two leaves the claim to expire, and the retry gets the same movement back.
    const { movement } = await provider
      .refund({
        idempotencyKey: downstreamKey,
        tenant: identity.tenant,
        invoiceId: invoice.invoice_id,
        amount: invoice.amount,
        currency: invoice.currency,
      })
      .catch((error: unknown) => {
        if (!(error instanceof ProviderKeyReuseError)) throw error;
        throw new ConflictError(`invoice_id: the provider holds another refund for invoice ${invoice.invoice_id}`, {
          cause: error,
        });
      });
    const receipt: RefundReceipt = {
      refund_id: movement.movement_id,
      invoice_id: invoice.invoice_id,
      amount: movement.amount,
      currency: movement.currency,
    };
    // The invoice is the commit: the call that records the refund on it executed it — even when the
    // provider replayed (an earlier attempt of this call, or a racing call, moved the money under the
    // same natural key) — and every other call is a replay.
    const recorded = await invoices.recordRefund(identity.tenant, receipt, callId).catch((error: unknown) => {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // The invoice is gone (erased) after the money moved: not a business error that frees the claim
      // (the effect happened); the retry finds no invoice and that answer is stored.
      throw new UnavailableError(`invoice_id: invoice ${invoice.invoice_id} changed during the refund; retry`, {
        cause: error,
      });
    });
    return recorded.written ? { receipt, replayed: false } : replayOf(recorded.existing, args.amount, callId);
  },
});

/**
 * The invoice was already refunded: the same request gets the stored receipt (a replay, unless this
 * very call committed it in an earlier attempt), another amount is refused.
 */
function replayOf(existing: RecordedRefund, amount: number, callId: string) {
  if (existing.receipt.amount !== amount) {
    throw new InvalidArgsError(
      `amount: invoice ${existing.receipt.invoice_id} was already refunded with amount ${existing.receipt.amount}`,
    );
  }
  return { receipt: existing.receipt, replayed: existing.by !== callId };
}
