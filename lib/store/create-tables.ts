import {
  CreateTableCommand,
  type CreateTableCommandInput,
  type DynamoDBClient,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { TABLES, type TableDefinition, type TableId, type TableSchema, tableName } from './tables';

/** The CreateTable request for a table definition (the CDK stack maps the same definition). */
export function createTableInput(
  definition: TableSchema & Partial<TableDefinition>,
  name: string,
): CreateTableCommandInput {
  const keyAttributes = [
    definition.partitionKey,
    definition.sortKey,
    ...(definition.globalSecondaryIndexes ?? []).flatMap((index) => [index.partitionKey, index.sortKey]),
  ].filter((attribute) => attribute !== undefined);
  const attributeDefinitions = [...new Map(keyAttributes.map((a) => [a.name, a])).values()];
  return {
    TableName: name,
    BillingMode: 'PAY_PER_REQUEST',
    ...(definition.stream ? { StreamSpecification: { StreamEnabled: true, StreamViewType: definition.stream } } : {}),
    AttributeDefinitions: attributeDefinitions.map((a) => ({ AttributeName: a.name, AttributeType: a.type })),
    KeySchema: [
      { AttributeName: definition.partitionKey.name, KeyType: 'HASH' },
      ...(definition.sortKey ? [{ AttributeName: definition.sortKey.name, KeyType: 'RANGE' as const }] : []),
    ],
    ...(definition.globalSecondaryIndexes?.length
      ? {
          GlobalSecondaryIndexes: definition.globalSecondaryIndexes.map((index) => ({
            IndexName: index.indexName,
            KeySchema: [
              { AttributeName: index.partitionKey.name, KeyType: 'HASH' as const },
              ...(index.sortKey ? [{ AttributeName: index.sortKey.name, KeyType: 'RANGE' as const }] : []),
            ],
            Projection: { ProjectionType: index.projection },
          })),
        }
      : {}),
  };
}

/**
 * Creates the table `name` from its schema unless it exists already, and turns TTL on where the schema
 * has one. Resolves to whether it created it.
 */
export async function createTable(client: DynamoDBClient, definition: TableSchema, name: string): Promise<boolean> {
  try {
    await client.send(new CreateTableCommand(createTableInput(definition, name)));
  } catch (error) {
    if (error instanceof ResourceInUseException) return false;
    throw error;
  }
  if (definition.ttlAttribute) {
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: name,
        TimeToLiveSpecification: { AttributeName: definition.ttlAttribute, Enabled: true },
      }),
    );
  }
  return true;
}

/**
 * Creates every table of {@link TABLES} that does not exist yet (names from the environment) and
 * turns TTL on where the definition has one. Used by the local runner (the tests: `retrysafe/testing`).
 */
export async function createTables(client: DynamoDBClient, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  for (const id of Object.keys(TABLES) as TableId[]) {
    await createTable(client, TABLES[id], tableName(id, env));
  }
}
