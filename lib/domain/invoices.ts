import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { JsonObject } from '../idempotency';
import type { Written } from '../store/put-if-absent';
import { TenantItems } from '../store/tenant-items';

/** The receipt of a refund, stored on its invoice: the natural-key record of "one refund per invoice". */
export interface RefundReceipt extends JsonObject {
  refund_id: string;
  invoice_id: string;
  amount: number;
  currency: string;
}

/** Longest invoice id accepted anywhere (a tool argument, a path): far under DynamoDB's 1 KB sort key. */
export const MAX_INVOICE_ID_LENGTH = 128;

export interface Invoice {
  readonly tenant: string;
  readonly invoice_id: string;
  readonly customer: string;
  /** Integer minor units (cents). */
  readonly amount: number;
  readonly currency: string;
  readonly created_at: string;
  readonly refund?: RefundReceipt;
}

/** Invoices, keyed by (tenant, invoice_id): one tenant never sees another's invoice ids. */
export class InvoiceStore extends TenantItems<Invoice> {
  constructor(documents: DynamoDBDocumentClient, tableName: string) {
    super(documents, tableName, 'invoice_id');
  }

  /**
   * Records the refund on its invoice, once: `attribute_not_exists(refund)` makes the invoice itself
   * the natural-key guard, whatever client key, TTL or race led here. When another call won, its
   * receipt comes back on the same round trip.
   */
  async recordRefund(tenant: string, receipt: RefundReceipt): Promise<Written<RefundReceipt>> {
    try {
      await this.documents.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { tenant, invoice_id: receipt.invoice_id },
          UpdateExpression: 'SET refund = :refund',
          ConditionExpression: 'attribute_exists(invoice_id) AND attribute_not_exists(refund)',
          ExpressionAttributeValues: { ':refund': receipt },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { written: true, item: receipt };
    } catch (error) {
      // The document client does not unmarshall the item returned with a failed condition.
      const current =
        error instanceof ConditionalCheckFailedException && error.Item ? unmarshall(error.Item) : undefined;
      if (!current?.refund) throw error;
      return { written: false, existing: current.refund as RefundReceipt };
    }
  }
}
