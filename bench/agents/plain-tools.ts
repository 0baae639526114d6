/**
 * The three tools as a team writes them without retrysafe: the same semantics as the example's
 * (app/tools/: one full refund per invoice, a repeat returning the first receipt; a ticket; an email
 * queued then delivered), on the same domain stores and provider, with nothing of retrysafe's protocol —
 * no natural key, no derived downstream key, no dedupe window. New ids are random per execution, and the
 * provider gets a fresh idempotency key per request, as stripe-node sends one by default for its own
 * network retries. `none` serves these as they are; the Powertools approaches wrap them in `makeIdempotent`.
 */
import { randomUUID } from 'node:crypto';
import type { RefundReceipt } from '../../app/domain/invoices';
import type { ExampleServices } from '../../app/services';

/** A refusal the tool answers as such (4xx), not a failure of the worker. */
export class ToolRefusal extends Error {
  constructor(
    readonly code: 'not_found' | 'invalid_args',
    message: string,
  ) {
    super(message);
    this.name = 'ToolRefusal';
  }
}

export interface RefundArgs {
  readonly invoice_id: string;
  readonly amount: number;
}
export interface TicketArgs {
  readonly title: string;
  readonly body?: string;
}
export interface EmailArgs {
  readonly to: string;
  readonly subject: string;
  readonly body: string;
}

type Receipt = Readonly<Record<string, unknown>>;

/** refund: read the invoice, refuse what is not a full refund, move the money, mark the invoice. */
export async function plainRefund(services: ExampleServices, tenant: string, args: RefundArgs): Promise<Receipt> {
  const invoice = await services.invoices.get(tenant, args.invoice_id);
  if (!invoice) throw new ToolRefusal('not_found', `no invoice ${args.invoice_id}`);
  if (invoice.refund) return sameAmount(invoice.refund, args.amount);
  if (args.amount !== invoice.amount) {
    throw new ToolRefusal('invalid_args', `a refund is a full refund of ${invoice.amount} ${invoice.currency}`);
  }
  const { movement } = await services.provider.refund({
    idempotencyKey: `req_${randomUUID()}`,
    tenant,
    invoiceId: invoice.invoice_id,
    amount: invoice.amount,
    currency: invoice.currency,
  });
  const receipt: RefundReceipt = {
    refund_id: movement.movement_id,
    invoice_id: invoice.invoice_id,
    amount: movement.amount,
    currency: movement.currency,
  };
  const recorded = await services.invoices.recordRefund(tenant, receipt, `req_${randomUUID()}`);
  return recorded.written ? receipt : sameAmount(recorded.existing.receipt, args.amount);
}

function sameAmount(receipt: RefundReceipt, amount: number): Receipt {
  if (receipt.amount !== amount) {
    throw new ToolRefusal('invalid_args', `invoice ${receipt.invoice_id} was already refunded with ${receipt.amount}`);
  }
  return receipt;
}

/** create_ticket: a new ticket, its key random. */
export async function plainCreateTicket(services: ExampleServices, tenant: string, args: TicketArgs): Promise<Receipt> {
  const ticketKey = `tck_${randomUUID()}`;
  await services.tickets.create({
    tenant,
    ticket_key: ticketKey,
    title: args.title,
    ...(args.body === undefined ? {} : { body: args.body }),
    status: 'open',
    created_at: new Date().toISOString(),
  });
  return { ticket_key: ticketKey, title: args.title, status: 'open' };
}

/** send_email: queued in the outbox under a random id, then delivered. */
export async function plainSendEmail(services: ExampleServices, tenant: string, args: EmailArgs): Promise<Receipt> {
  const messageId = `msg_${randomUUID()}`;
  await services.outbox.create({
    tenant,
    message_id: messageId,
    to: args.to,
    subject: args.subject,
    body: args.body,
    status: 'queued',
    queued_at: new Date().toISOString(),
  });
  await services.outbox.deliver(tenant, messageId, new Date().toISOString(), `req_${randomUUID()}`);
  return { message_id: messageId, to: args.to, subject: args.subject };
}
