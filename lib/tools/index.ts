import type { InvoiceStore } from '../domain/invoices';
import type { Outbox } from '../domain/outbox';
import type { TicketStore } from '../domain/tickets';
import type { PaymentProvider } from '../payments/provider';
import { createCloseTicketTool } from './close-ticket';
import { createCreateInvoiceTool } from './create-invoice';
import { createCreateTicketTool } from './create-ticket';
import { createRefundTool } from './refund';
import { createSendEmailTool } from './send-email';

export interface ToolDependencies {
  readonly invoices: InvoiceStore;
  readonly tickets: TicketStore;
  readonly outbox: Outbox;
  readonly provider: PaymentProvider;
}

/** Every tool retrysafe serves, by name. */
export function createTools(dependencies: ToolDependencies) {
  return {
    create_invoice: createCreateInvoiceTool(dependencies),
    refund: createRefundTool(dependencies),
    create_ticket: createCreateTicketTool(dependencies),
    close_ticket: createCloseTicketTool(dependencies),
    send_email: createSendEmailTool(dependencies),
  };
}

export type Tools = ReturnType<typeof createTools>;
export type ToolName = keyof Tools;
