import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { JsonObject } from 'retrysafe/tools';
import type { Written } from 'retrysafe/tools/dynamodb';
import { TenantItems } from './tenant-items';

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
  /** The call (its `callId`) that created the invoice. */
  readonly created_by?: string;
  readonly refund?: RefundReceipt;
  /** The call that committed the refund: the one told `idempotent: false`. */
  readonly refunded_by?: string;
}

/** A refund as its invoice holds it: the receipt and the call that committed it. */
export interface RecordedRefund {
  readonly receipt: RefundReceipt;
  readonly by: string | undefined;
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
  async recordRefund(tenant: string, receipt: RefundReceipt, by: string): Promise<Written<RecordedRefund>> {
    try {
      await this.documents.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { tenant, invoice_id: receipt.invoice_id },
          UpdateExpression: 'SET refund = :refund, refunded_by = :by',
          ConditionExpression: 'attribute_exists(invoice_id) AND attribute_not_exists(refund)',
          ExpressionAttributeValues: { ':refund': receipt, ':by': by },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { written: true, item: { receipt, by } };
    } catch (error) {
      // The document client does not unmarshall the item returned with a failed condition.
      const current =
        error instanceof ConditionalCheckFailedException && error.Item ? unmarshall(error.Item) : undefined;
      if (!current?.refund) throw error;
      return { written: false, existing: { receipt: current.refund as RefundReceipt, by: current.refunded_by } };
    }
  }
}
