import { ConflictError, defineToolModule, derivedId } from 'retrysafe/tools';
import * as z from 'zod/mini';
import type { ToolServices } from '../services';

export const createInvoiceArgs = z.strictObject({
  customer: z.string().check(z.minLength(1), z.maxLength(200), z.describe('Who is invoiced.')),
  amount: z
    .int()
    .check(z.positive(), z.maximum(Number.MAX_SAFE_INTEGER), z.describe('Integer minor units (cents), > 0.')),
  currency: z._default(
    z
      .string()
      .check(z.regex(/^[a-z]{3}$/, 'must be a lowercase ISO 4217 code'), z.describe('ISO 4217 code, lowercase.')),
    'usd',
  ),
});

/**
 * `create_invoice`: a create has no natural id yet, so the client key identifies it — and the invoice
 * id is derived from it, so even a retry after the record's TTL finds the invoice it made.
 */
export const createInvoice = defineToolModule({
  name: 'create_invoice',
  description: 'Create an invoice for a customer. Returns its invoice_id.',
  args: createInvoiceArgs,
  annotations: { destructiveHint: false, openWorldHint: false },
  receipt: z.strictObject({ invoice_id: z.string(), customer: z.string(), amount: z.int(), currency: z.string() }),
  access: { invoices: ['dynamodb:PutItem'] },
  async execute(args, { identity, downstreamKey, callId }, { invoices }: Pick<ToolServices, 'invoices'>) {
    const invoice = {
      tenant: identity.tenant,
      invoice_id: derivedId('inv', downstreamKey),
      customer: args.customer,
      amount: args.amount,
      currency: args.currency,
      created_at: new Date().toISOString(),
      created_by: callId,
    };
    const written = await invoices.create(invoice);
    const stored = written.written ? written.item : written.existing;
    if (
      !written.written &&
      (stored.customer !== args.customer || stored.amount !== args.amount || stored.currency !== args.currency)
    ) {
      throw new ConflictError('idempotency_key: already used with different arguments');
    }
    return {
      receipt: {
        invoice_id: stored.invoice_id,
        customer: stored.customer,
        amount: stored.amount,
        currency: stored.currency,
      },
      replayed: !written.written && stored.created_by !== callId,
    };
  },
});
