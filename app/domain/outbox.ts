import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { TenantItems } from './tenant-items';

export interface OutboxMessage {
  readonly tenant: string;
  readonly message_id: string;
  readonly to: string;
  readonly subject: string;
  readonly body: string;
  readonly status: 'queued' | 'delivered';
  readonly queued_at: string;
  /** The call (its `callId`) that queued the message. */
  readonly created_by?: string;
  readonly delivered_at?: string;
  /** The call that delivered it: the one told `idempotent: false`. */
  readonly delivered_by?: string;
}

/**
 * The email outbox: a message is queued once per message id (a conditional put) and delivered once
 * (a conditional status change), so neither a retry nor a crash between the two sends it twice.
 */
export class Outbox extends TenantItems<OutboxMessage> {
  constructor(documents: DynamoDBDocumentClient, tableName: string) {
    super(documents, tableName, 'message_id');
  }

  /**
   * Marks a queued message delivered by call `by`, once. Returns the call that delivered it: `by`
   * now, or whoever did before. A real mailer (SES) would send here, with the message id as its
   * deduplication key. A message that is gone (never queued, erased) is an error, never "delivered".
   */
  async deliver(tenant: string, messageId: string, deliveredAt: string, by: string): Promise<string | undefined> {
    try {
      await this.documents.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { tenant, message_id: messageId },
          UpdateExpression: 'SET #status = :delivered, delivered_at = :at, delivered_by = :by',
          ConditionExpression: '#status = :queued',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':delivered': 'delivered', ':queued': 'queued', ':at': deliveredAt, ':by': by },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return by;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      if (!error.Item) throw new Error(`message ${messageId} is not in the outbox`, { cause: error });
      return unmarshall(error.Item).delivered_by as string | undefined;
    }
  }
}
