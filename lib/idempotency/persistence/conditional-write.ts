import {
  ConditionalCheckFailedException,
  type DeleteItemCommand,
  type DynamoDBClient,
  type UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { RecordAttributes } from '../record';

/** Where a transition outside a call's own attempt writes: the idempotency table and its attribute names. */
export interface RecordTable {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  readonly attr: RecordAttributes;
}

/**
 * One conditional write of a transition: `done` when it passed, `changed` when the item moved on since
 * it was read (its condition failed: whoever reads it next decides); any other failure throws.
 */
export async function conditionally(
  client: DynamoDBClient,
  command: UpdateItemCommand | DeleteItemCommand,
): Promise<'done' | 'changed'> {
  try {
    await client.send(command as UpdateItemCommand);
    return 'done';
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return 'changed';
    throw error;
  }
}
