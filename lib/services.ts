import { Logger } from '@aws-lambda-powertools/logger';
import { InvoiceStore } from './domain/invoices';
import { Outbox } from './domain/outbox';
import { TicketStore } from './domain/tickets';
import { ToolRuntime } from './idempotency/runtime';
import { LedgerPaymentProvider } from './payments/ledger';
import { createDocumentClient, createDynamoDBClient } from './store/client';
import { tableName } from './store/tables';
import { createTools } from './tools';

/**
 * The composition root: clients, stores, the runtime and the tools, built from the environment once
 * per process (a Lambda container reuses them across invocations).
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
    runtime: new ToolRuntime({ client, tableName: tableName('idempotency', env), logger }),
    tools: createTools({ invoices, tickets, outbox, provider }),
  };
}

export type Services = ReturnType<typeof createServices>;

let shared: Services | undefined;

/** The process-wide services, created on first use. */
export function services(): Services {
  shared ??= createServices();
  return shared;
}
