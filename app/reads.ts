/**
 * The example's reads of its own data, each served over REST (`GET path`) and MCP (a read-only tool),
 * and documented in the OpenAPI document, from its one definition here.
 */
import { defineReadModule, readFailure } from 'retrysafe/tools';
import * as z from 'zod/mini';
import { type InvoiceStore, MAX_INVOICE_ID_LENGTH } from './domain/invoices';
import { MAX_TICKET_KEY_LENGTH, type TicketStore } from './domain/tickets';

/** `get_invoice` / `GET /invoices/{invoice_id}`: the caller's tenant's invoice, with its refund or null. */
export const getInvoice = defineReadModule({
  name: 'get_invoice',
  description: "Read one of the caller's invoices, with its refund (or null). Read-only, needs no key.",
  path: '/invoices/{invoice_id}',
  args: z.strictObject({
    invoice_id: z
      .string()
      .check(
        z.minLength(1),
        z.maxLength(MAX_INVOICE_ID_LENGTH),
        z.describe('The invoice, as create_invoice returned it.'),
      ),
  }),
  found: z.strictObject({
    invoice: z.looseObject({
      invoice_id: z.string(),
      customer: z.string(),
      amount: z.int().check(z.describe('Integer minor units (cents).')),
      currency: z.string(),
      created_at: z.string(),
      refunded: z.boolean(),
      refund: z.nullable(z.looseObject({}).check(z.describe('The receipt `refund` returned.'))),
    }),
  }),
  access: { invoices: ['dynamodb:GetItem'] },
  async read({ invoice_id }, caller, services: { readonly invoices: InvoiceStore }) {
    const invoice = await services.invoices.get(caller.tenant, invoice_id);
    if (!invoice) return readFailure('not_found', `invoice_id: no invoice ${invoice_id}`);
    // The calls that wrote it (`created_by`, `refunded_by`) are the protocol's, not the caller's.
    const { tenant: _tenant, refund, created_by: _created, refunded_by: _refunded, ...fields } = invoice;
    return { ok: true, invoice: { ...fields, refunded: refund !== undefined, refund: refund ?? null } };
  },
});

/** `get_ticket` / `GET /tickets/{ticket_key}`: the caller's tenant's ticket. */
export const getTicket = defineReadModule({
  name: 'get_ticket',
  description: "Read one of the caller's tickets. Read-only, needs no key.",
  path: '/tickets/{ticket_key}',
  args: z.strictObject({
    ticket_key: z
      .string()
      .check(
        z.minLength(1),
        z.maxLength(MAX_TICKET_KEY_LENGTH),
        z.describe('The ticket, as create_ticket returned it.'),
      ),
  }),
  found: z.strictObject({
    ticket: z.looseObject({
      ticket_key: z.string(),
      title: z.string(),
      body: z.optional(z.string()),
      status: z.enum(['open', 'closed']),
      resolution: z.optional(z.string()),
      created_at: z.string(),
      closed_at: z.optional(z.string()),
    }),
  }),
  access: { tickets: ['dynamodb:GetItem'] },
  async read({ ticket_key }, caller, services: { readonly tickets: TicketStore }) {
    const ticket = await services.tickets.get(caller.tenant, ticket_key);
    if (!ticket) return readFailure('not_found', `ticket_key: no ticket ${ticket_key}`);
    const { tenant: _tenant, created_by: _created, closed_by: _closed, ...fields } = ticket;
    return { ok: true, ticket: fields };
  },
});

/** The example's reads, in the order agents see them (after its tools, before `get_operation`). */
export const READS = [getInvoice, getTicket] as const;

/** The name of one of the example's reads. */
export type ReadName = (typeof READS)[number]['name'];
