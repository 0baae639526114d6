import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { TenantItems } from '../store/tenant-items';

export interface OutboxMessage {
  readonly tenant: string;
  readonly message_id: string;
  readonly to: string;
  readonly subject: string;
  readonly body: string;
  readonly status: 'queued' | 'delivered';
  readonly queued_at: string;
  readonly delivered_at?: string;
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
   * Marks a queued message delivered; true when this call delivered it, false when it already was.
   * A real mailer (SES) would send here, with the message id as its deduplication key.
   */
  async deliver(tenant: string, messageId: string, deliveredAt: string): Promise<boolean> {
    try {
      await this.documents.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { tenant, message_id: messageId },
          UpdateExpression: 'SET #status = :delivered, delivered_at = :at',
          ConditionExpression: '#status = :queued',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':delivered': 'delivered', ':queued': 'queued', ':at': deliveredAt },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }
}
