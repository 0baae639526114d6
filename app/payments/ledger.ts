import { randomUUID } from 'node:crypto';
import { type DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { putIfAbsent } from 'retrysafe/tools/dynamodb';
import {
  type Movement,
  type PaymentProvider,
  ProviderKeyReuseError,
  type ProviderRefund,
  type RefundRequest,
} from './provider';

/**
 * A provider backed by a DynamoDB ledger: the stand-in for Stripe. One item per provider key, written
 * with `attribute_not_exists`, so a second request with the same key returns the first movement and
 * never moves money again — the guarantee that makes a crash after "provider accepted" harmless.
 */
export class LedgerPaymentProvider implements PaymentProvider {
  constructor(
    private readonly documents: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async refund(request: RefundRequest): Promise<ProviderRefund> {
    const movement: Movement = {
      movement_id: `re_${randomUUID().replaceAll('-', '')}`,
      provider_key: request.idempotencyKey,
      tenant: request.tenant,
      invoice_id: request.invoiceId,
      kind: 'refund',
      amount: request.amount,
      currency: request.currency,
      created_at: new Date().toISOString(),
    };
    const written = await putIfAbsent(this.documents, this.tableName, 'provider_key', movement);
    if (written.written) return { movement, replayed: false };
    const { existing } = written;
    const same =
      existing.tenant === movement.tenant &&
      existing.invoice_id === movement.invoice_id &&
      existing.kind === movement.kind &&
      existing.amount === movement.amount &&
      existing.currency === movement.currency;
    if (!same) throw new ProviderKeyReuseError('idempotency key reused with different parameters', existing);
    return { movement: existing, replayed: true };
  }

  /** Every movement of one tenant (Stripe's "list refunds"): what the demo and the tests count. */
  async movements(tenant: string): Promise<Movement[]> {
    const rows: Movement[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.documents.send(
        new ScanCommand({
          TableName: this.tableName,
          FilterExpression: 'tenant = :tenant',
          ExpressionAttributeValues: { ':tenant': tenant },
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      );
      rows.push(...((page.Items ?? []) as Movement[]));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return rows;
  }
}
