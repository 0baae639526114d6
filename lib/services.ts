import { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { InvoiceStore } from './domain/invoices';
import { Outbox } from './domain/outbox';
import { TicketStore } from './domain/tickets';
import { LedgerPaymentProvider } from './payments/ledger';
import type { PaymentProvider } from './payments/provider';
import { createPaymentProvider } from './payments/select';
import { createDocumentClient, createDynamoDBClient } from './store/client';
import { type DomainTableId, tableName } from './store/tables';

/**
 * The example app's services — its domain stores and payment provider — over a document client, each
 * table named by `tableName` (the core services' own, from `<NAME>_TABLE`, in the tools' Lambda entries).
 * Every tool's entry composes them so (`lambdas/shared/tool-entry.ts`), as an app composes its own.
 */
export function exampleServices(
  {
    documents,
    tableName: nameOf,
  }: { readonly documents: DynamoDBDocumentClient; tableName(id: DomainTableId): string },
  env: NodeJS.ProcessEnv = process.env,
) {
  return {
    invoices: new InvoiceStore(documents, nameOf('invoices')),
    tickets: new TicketStore(documents, nameOf('tickets')),
    outbox: new Outbox(documents, nameOf('outbox')),
    // The ledger is always there (the demo and the tests read it); the provider that moves money is the
    // one PAYMENT_PROVIDER names — the ledger itself by default, or Stripe.
    ledger: new LedgerPaymentProvider(documents, nameOf('ledger')),
    provider: createPaymentProvider(env, documents),
  };
}

/**
 * The example's services as its Lambda entries compose them (`ComposeServices`): each table by
 * `<NAME>_TABLE` (what the construct sets), else its local name.
 */
export function composeExampleServices({ documents }: { readonly documents: DynamoDBDocumentClient }) {
  return exampleServices({ documents, tableName: (id) => tableName(id) });
}

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
  return {
    client,
    documents,
    logger,
    ...exampleServices({ documents, tableName: (id) => tableName(id, env) }, env),
  };
}

export type Services = ReturnType<typeof createServices>;

/** The example app's services, as its tools' entries compose them. */
export type ExampleServices = ReturnType<typeof exampleServices>;

/** What a tool's domain logic may use: the domain stores and a payment provider. */
export interface ToolServices {
  readonly invoices: InvoiceStore;
  readonly tickets: TicketStore;
  readonly outbox: Outbox;
  readonly provider: PaymentProvider;
}
