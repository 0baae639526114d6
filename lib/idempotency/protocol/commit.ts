// Rule 5's write (docs/state-machine.md): a tool's commit to its own table, created once per id and stamped
// with the call that made it, so that exactly one answer per effect says `idempotent: false`. The decision
// (`replayed` from the stamp) is `createOnce`'s (`retrysafe/tools/dynamodb`); the conditional write is here.
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';

/** Outcome of a conditional write: ours, or the item that was already there. */
export type Written<T> =
  | { readonly written: true; readonly item: T }
  | { readonly written: false; readonly existing: T };

/**
 * Puts `item` unless an item with its key exists (`attribute_not_exists(<key attribute>)`); then the
 * existing item comes back on the same round trip (`ReturnValuesOnConditionCheckFailure: ALL_OLD`).
 * Every "create once per id" in retrysafe — invoice, ticket, outbox message, ledger movement — is this;
 * a tool file reaches it through `createOnce` (`retrysafe/tools/dynamodb`), which also stamps the call and
 * decides `replayed` from the stamp (`written` alone cannot: a crashed call's retry finds its own write).
 */
export async function putIfAbsent<T extends object>(
  documents: DynamoDBDocumentClient,
  tableName: string,
  keyAttribute: keyof T & string,
  item: T,
): Promise<Written<T>> {
  try {
    await documents.send(
      new PutCommand({
        TableName: tableName,
        Item: item as Record<string, unknown>,
        ConditionExpression: 'attribute_not_exists(#key)',
        ExpressionAttributeNames: { '#key': keyAttribute },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return { written: true, item };
  } catch (error) {
    // The document client does not unmarshall the item returned with a failed condition.
    if (error instanceof ConditionalCheckFailedException && error.Item) {
      return { written: false, existing: unmarshall(error.Item) as T };
    }
    throw error;
  }
}
