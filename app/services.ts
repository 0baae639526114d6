import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type CoreServices, createCoreServices } from 'retrysafe/lambda';
import { InvoiceStore } from './domain/invoices';
import { Outbox } from './domain/outbox';
import { TicketStore } from './domain/tickets';
import { LedgerPaymentProvider } from './payments/ledger';
import type { PaymentProvider } from './payments/provider';
import { createPaymentProvider } from './payments/select';
import { type TableId, tableName } from './tables';

/**
 * The example app's services — its domain stores and payment provider — over a document client, each
 * table named by `tableName`.
 */
export function exampleServices(
  { documents, tableName: nameOf }: { readonly documents: DynamoDBDocumentClient; tableName(id: TableId): string },
  env: NodeJS.ProcessEnv = process.env,
) {
  // The ledger is always there (the demo and the tests read it); the provider that moves money is the
  // one PAYMENT_PROVIDER names — the ledger itself by default, or Stripe.
  const ledger = new LedgerPaymentProvider(documents, nameOf('ledger'));
  return {
    invoices: new InvoiceStore(documents, nameOf('invoices')),
    tickets: new TicketStore(documents, nameOf('tickets')),
    outbox: new Outbox(documents, nameOf('outbox')),
    ledger,
    provider: createPaymentProvider(env, ledger),
  };
}

/**
 * The example's one services composition (`ComposeServices`), as its Lambda entries pass it
 * (`toolEntry(refund, services)`) and retrysafe.config.ts: each table by `<NAME>_TABLE`, which the
 * construct, `retrysafe dev` and the test store set.
 */
export function services(core: Pick<CoreServices, 'documents' | 'tableName'>): ExampleServices {
  return exampleServices(core);
}

/**
 * The DynamoDB clients, the logger and the domain stores, built from `env`: what the tests, the demo and
 * the benchmark work with (the Lambda entries compose through `services`).
 */
export function createServices(env: NodeJS.ProcessEnv = process.env) {
  const core = createCoreServices(env);
  return {
    client: core.client,
    documents: core.documents,
    logger: core.logger,
    ...exampleServices({ documents: core.documents, tableName: (id) => tableName(id, env) }, env),
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
