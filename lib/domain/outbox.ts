import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { putIfAbsent, type Written } from '../store/put-if-absent';

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
export class Outbox {
  constructor(
    private readonly documents: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async get(tenant: string, messageId: string): Promise<OutboxMessage | undefined> {
    const { Item } = await this.documents.send(
      new GetCommand({ TableName: this.tableName, Key: { tenant, message_id: messageId }, ConsistentRead: true }),
    );
    return Item as OutboxMessage | undefined;
  }

  enqueue(message: OutboxMessage): Promise<Written<OutboxMessage>> {
    return putIfAbsent(this.documents, this.tableName, 'message_id', message);
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
