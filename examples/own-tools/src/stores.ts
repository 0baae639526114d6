import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';

/** What a conditional create found: it wrote the item, or the item was there already (returned). */
export type Created<T> = { readonly written: true; readonly item: T } | { readonly written: false; readonly existing: T };

/**
 * Writes `item` unless an item with its key exists; one round trip either way (the existing item comes
 * back with the refusal).
 */
async function createOnce<T extends Record<string, unknown>>(
  documents: DynamoDBDocumentClient,
  table: string,
  item: T,
  partitionKey: string,
): Promise<Created<T>> {
  try {
    await documents.send(
      new PutCommand({
        TableName: table,
        Item: item,
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': partitionKey },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return { written: true, item };
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException && error.Item) {
      return { written: false, existing: unmarshall(error.Item) as T };
    }
    throw error;
  }
}

export interface Account extends Record<string, unknown> {
  readonly tenant: string;
  readonly external_id: string;
  readonly account_id: string;
  readonly name: string;
  /** The call that opened it (`callId`): that call executed, every other one replays. */
  readonly opened_by: string;
}

export class AccountStore {
  constructor(
    private readonly documents: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  open(account: Account): Promise<Created<Account>> {
    return createOnce(this.documents, this.table, account, 'tenant');
  }
}

export interface LoggedCall extends Record<string, unknown> {
  readonly tenant: string;
  readonly call_id: string;
  readonly summary: string;
  readonly logged_by: string;
}

export class CallLog {
  constructor(
    private readonly documents: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  log(call: LoggedCall): Promise<Created<LoggedCall>> {
    return createOnce(this.documents, this.table, call, 'tenant');
  }
}
