/**
 * The baseline retrysafe is measured against: a refund made idempotent the way the Powertools docs show
 * it — one `DynamoDBPersistenceLayer` and one `IdempotencyConfig` per container, `makeIdempotent` around
 * the function — doing the same DynamoDB calls as retrysafe's `refund` (the claim, the invoice read, the
 * ledger movement, the invoice's refund, the result). Nothing else: no logger, metrics, tracer, schema
 * validation, takeover or intent. The physical limit of "claim before the effect, store after".
 */
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { InvoiceStore } from '../app/domain/invoices';
import { LedgerPaymentProvider } from '../app/payments/ledger';
import { tableName } from '../app/tables';

export interface BareRefundRequest {
  readonly tenant: string;
  readonly user: string;
  readonly key: string;
  readonly invoice_id: string;
  readonly amount: number;
}

export type BareRefundAnswer =
  | { readonly ok: true; readonly receipt: Record<string, unknown> }
  | { readonly ok: false; readonly error: string };

/** The bare idempotent refund; the Lambda context (second argument) gives Powertools the lock's deadline. */
export function bareRefund(
  env: NodeJS.ProcessEnv = process.env,
): (request: BareRefundRequest, context: Context) => Promise<BareRefundAnswer> {
  const client = new DynamoDBClient(env.DYNAMODB_ENDPOINT ? { endpoint: env.DYNAMODB_ENDPOINT } : {});
  const documents = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  const invoices = new InvoiceStore(documents, tableName('invoices', env));
  const ledger = new LedgerPaymentProvider(documents, tableName('ledger', env));
  const persistenceStore = new DynamoDBPersistenceLayer({
    tableName: tableName('idempotency', env),
    awsSdkV3Client: client,
  });
  const config = new IdempotencyConfig({
    eventKeyJmesPath: '[tenant, user, key]',
    payloadValidationJmesPath: '[invoice_id, amount]',
    hashFunction: 'sha256',
  });

  async function refund(request: BareRefundRequest, _context: Context): Promise<BareRefundAnswer> {
    const invoice = await invoices.get(request.tenant, request.invoice_id);
    if (!invoice) return { ok: false, error: 'not_found' };
    if (invoice.amount !== request.amount) return { ok: false, error: 'invalid_args' };
    const providerKey = `refund#${request.tenant}#${request.invoice_id}`;
    const { movement } = await ledger.refund({
      idempotencyKey: providerKey,
      tenant: request.tenant,
      invoiceId: invoice.invoice_id,
      amount: invoice.amount,
      currency: invoice.currency,
    });
    const receipt = {
      refund_id: movement.movement_id,
      invoice_id: invoice.invoice_id,
      amount: movement.amount,
      currency: movement.currency,
    };
    const recorded = await invoices.recordRefund(request.tenant, receipt, request.key);
    return { ok: true, receipt: recorded.written ? receipt : recorded.existing.receipt };
  }

  return makeIdempotent(refund, { persistenceStore, config });
}
