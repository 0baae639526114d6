import { Logger } from '@aws-lambda-powertools/logger';
import { InvoiceStore } from './domain/invoices';
import { Outbox } from './domain/outbox';
import { TicketStore } from './domain/tickets';
import { LedgerPaymentProvider } from './payments/ledger';
import { createDocumentClient, createDynamoDBClient } from './store/client';
import { tableName } from './store/tables';

/**
 * The composition root: the DynamoDB clients, the logger and the domain stores, built from the
 * environment once per process (a Lambda container reuses them across invocations). The idempotency
 * runtime (`lib/runtime.ts`) and each tool are built by the entry points that need them, so a read's
 * bundle carries neither Powertools idempotency nor zod.
 */
export function createServices(env: NodeJS.ProcessEnv = process.env) {
  const client = createDynamoDBClient(env);
  const documents = createDocumentClient(client);
  const logger = new Logger({ serviceName: env.POWERTOOLS_SERVICE_NAME || 'retrysafe' });
  const invoices = new InvoiceStore(documents, tableName('invoices', env));
  const tickets = new TicketStore(documents, tableName('tickets', env));
  const outbox = new Outbox(documents, tableName('outbox', env));
  const provider = new LedgerPaymentProvider(documents, tableName('ledger', env));
  return {
    client,
    documents,
    logger,
    invoices,
    tickets,
    outbox,
    provider,
  };
}

export type Services = ReturnType<typeof createServices>;

let shared: Services | undefined;

/** The process-wide services, created on first use. */
export function services(): Services {
  shared ??= createServices();
  return shared;
}
