// Generated from retrysafe.config.ts by:
//   retrysafe types --out app/client-types.ts --name RetrysafeTools
// The tools' arguments (as a caller sends them) and receipts as plain types, no zod and no server
// package: new RetrysafeClient<RetrysafeTools>(…). Regenerate it when a schema changes; do not edit it.
import type { ToolTypes } from 'retrysafe/client';

// A type alias, not an interface: it must satisfy the client's ToolMap (an index signature).
export type RetrysafeTools = {
  /** Create an invoice for a customer. Returns its invoice_id. */
  readonly create_invoice: ToolTypes<
    {
      /** Who is invoiced. */
      customer: string;
      /** Integer minor units (cents), > 0. */
      amount: number;
      /** ISO 4217 code, lowercase. */
      currency?: string;
    },
    {
      invoice_id: string;
      customer: string;
      amount: number;
      currency: string;
    }
  >;
  /** Refund an invoice in full. One refund per invoice: repeating it returns the first receipt. */
  readonly refund: ToolTypes<
    {
      /** The invoice to refund, as returned by create_invoice. */
      invoice_id: string;
      /** The full invoice amount in integer minor units (cents): refunds are full refunds. */
      amount: number;
    },
    {
      refund_id: string;
      invoice_id: string;
      amount: number;
      currency: string;
    }
  >;
  /** Open a support ticket. Returns its ticket_key. An identical ticket (same title and body) within 10 minutes is the same ticket, whatever its key. */
  readonly create_ticket: ToolTypes<
    {
      /** One line that says what is wrong. */
      title: string;
      /** Details. */
      body?: string;
    },
    {
      ticket_key: string;
      title: string;
      status: 'open';
    }
  >;
  /** Close a ticket with a resolution. One close per ticket: repeating it returns the first receipt. */
  readonly close_ticket: ToolTypes<
    {
      /** The ticket to close, as returned by create_ticket. */
      ticket_key: string;
      /** How it was resolved. */
      resolution: string;
    },
    {
      ticket_key: string;
      status: 'closed';
      resolution: string;
    }
  >;
  /** Send an email. Delivered once per idempotency_key; an identical email (same to, subject, body) within 10 minutes is the same send, whatever its key. */
  readonly send_email: ToolTypes<
    {
      /** Recipient address. */
      to: string;
      subject: string;
      /** Plain text. Never logged. */
      body: string;
    },
    {
      message_id: string;
      to: string;
      subject: string;
    }
  >;
};
