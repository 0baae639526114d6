import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Written } from 'retrysafe/tools/dynamodb';
import { TenantItems } from './tenant-items';

/** Longest ticket key accepted anywhere (a tool argument, a path): far under DynamoDB's 1 KB sort key. */
export const MAX_TICKET_KEY_LENGTH = 64;

export interface Ticket {
  readonly tenant: string;
  readonly ticket_key: string;
  readonly title: string;
  readonly body?: string;
  readonly status: 'open' | 'closed';
  readonly resolution?: string;
  readonly created_at: string;
  /** The call (its `callId`) that created the ticket. */
  readonly created_by?: string;
  readonly closed_at?: string;
  /** The call that closed it. */
  readonly closed_by?: string;
}

/** Tickets, keyed by (tenant, ticket_key). */
export class TicketStore extends TenantItems<Ticket> {
  constructor(documents: DynamoDBDocumentClient, tableName: string) {
    super(documents, tableName, 'ticket_key');
  }

  /**
   * Closes an open ticket, once: the `status = open` condition is the natural-key guard of
   * close_ticket. A ticket that is already closed comes back as it is; a missing one as undefined.
   */
  async close(
    tenant: string,
    ticketKey: string,
    resolution: string,
    closedAt: string,
    by: string,
  ): Promise<Written<Ticket> | undefined> {
    try {
      const { Attributes } = await this.documents.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { tenant, ticket_key: ticketKey },
          UpdateExpression: 'SET #status = :closed, resolution = :resolution, closed_at = :closed_at, closed_by = :by',
          ConditionExpression: 'attribute_exists(ticket_key) AND #status = :open',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':closed': 'closed',
            ':open': 'open',
            ':resolution': resolution,
            ':closed_at': closedAt,
            ':by': by,
          },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { written: true, item: Attributes as Ticket };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      return error.Item ? { written: false, existing: unmarshall(error.Item) as Ticket } : undefined;
    }
  }
}
