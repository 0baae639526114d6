import { type DynamoDBDocumentClient, GetCommand, paginateQuery } from '@aws-sdk/lib-dynamodb';
import { putIfAbsent, type Written } from 'retrysafe/tools/dynamodb';

/**
 * A table of items keyed by (tenant, id): the shape every domain table of retrysafe has. One tenant
 * can only ever name its own items; creates happen once per id.
 */
export class TenantItems<T extends { readonly tenant: string }> {
  constructor(
    protected readonly documents: DynamoDBDocumentClient,
    protected readonly tableName: string,
    private readonly idAttribute: keyof T & string,
  ) {}

  /** The tenant's item, read consistently, or undefined (also for another tenant's id). */
  async get(tenant: string, id: string): Promise<T | undefined> {
    const { Item } = await this.documents.send(
      new GetCommand({ TableName: this.tableName, Key: { tenant, [this.idAttribute]: id }, ConsistentRead: true }),
    );
    return Item as T | undefined;
  }

  /**
   * Every item of one tenant (a Query on the partition key), for operators and the demo; no tool's
   * code calls it, so no function is granted Query.
   */
  async list(tenant: string): Promise<T[]> {
    const items: T[] = [];
    const pages = paginateQuery(
      { client: this.documents },
      {
        TableName: this.tableName,
        KeyConditionExpression: 'tenant = :tenant',
        ExpressionAttributeValues: { ':tenant': tenant },
      },
    );
    for await (const page of pages) items.push(...((page.Items ?? []) as T[]));
    return items;
  }

  /** Stores a new item unless its id exists; then the existing item comes back instead. */
  create(item: T): Promise<Written<T>> {
    return putIfAbsent(this.documents, this.tableName, this.idAttribute, item);
  }
}
