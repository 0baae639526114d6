import { Logger } from '@aws-lambda-powertools/logger';
import { InvoiceStore } from './domain/invoices';
import { Outbox } from './domain/outbox';
import { TicketStore } from './domain/tickets';
import { LedgerPaymentProvider } from './payments/ledger';
import type { PaymentProvider } from './payments/provider';
import { createPaymentProvider } from './payments/select';
import { createDocumentClient, createDynamoDBClient } from './store/client';
import { tableName } from './store/tables';

/**
 * The DynamoDB clients, the logger and the domain stores, built from the environment. The entry points
 * (`lambdas/`, `bin/`) build them once per process and pass them on; nothing under `lib/` holds them.
 * The idempotency runtime (`lib/tools/tool-runtime.ts`) is built apart, so a read's bundle carries neither
 * Powertools idempotency nor zod.
 */
export function createServices(env: NodeJS.ProcessEnv = process.env) {
  const client = createDynamoDBClient(env);
  const documents = createDocumentClient(client);
  const logger = new Logger({ serviceName: env.POWERTOOLS_SERVICE_NAME || 'retrysafe' });
  const invoices = new InvoiceStore(documents, tableName('invoices', env));
  const tickets = new TicketStore(documents, tableName('tickets', env));
  const outbox = new Outbox(documents, tableName('outbox', env));
  // The ledger is always there (the demo and the tests read it); the provider that moves money is the
  // one PAYMENT_PROVIDER names — the ledger itself by default, or Stripe.
  const ledger = new LedgerPaymentProvider(documents, tableName('ledger', env));
  const provider = createPaymentProvider(env, documents);
  return {
    client,
    documents,
    logger,
    invoices,
    tickets,
    outbox,
    ledger,
    provider,
  };
}

export type Services = ReturnType<typeof createServices>;

/** What a tool's domain logic may use: the domain stores and a payment provider. */
export interface ToolServices {
  readonly invoices: InvoiceStore;
  readonly tickets: TicketStore;
  readonly outbox: Outbox;
  readonly provider: PaymentProvider;
}
