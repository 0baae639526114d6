import {
  CreateTableCommand,
  type CreateTableCommandInput,
  type DynamoDBClient,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { appTableName, IDEMPOTENCY_TABLE, idempotencyTableName, type TableSchema } from './tables';

/** The CreateTable request for a table's schema (the construct's `definedTable` maps the same schema). */
export function createTableInput(definition: TableSchema, name: string): CreateTableCommandInput {
  const attributeDefinitions = [definition.partitionKey, ...(definition.sortKey ? [definition.sortKey] : [])];
  return {
    TableName: name,
    BillingMode: 'PAY_PER_REQUEST',
    ...(definition.stream ? { StreamSpecification: { StreamEnabled: true, StreamViewType: definition.stream } } : {}),
    AttributeDefinitions: attributeDefinitions.map((a) => ({ AttributeName: a.name, AttributeType: a.type })),
    KeySchema: [
      { AttributeName: definition.partitionKey.name, KeyType: 'HASH' },
      ...(definition.sortKey ? [{ AttributeName: definition.sortKey.name, KeyType: 'RANGE' as const }] : []),
    ],
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
 * Creates the idempotency table and the app's `tables` that do not exist yet (names from `env`:
 * `IDEMPOTENCY_TABLE`, `<NAME>_TABLE`, else their default names), TTL on where a schema has one: what
 * the demo, the benchmark and the explorer run on.
 */
export async function createTables(
  client: DynamoDBClient,
  tables: Readonly<Record<string, TableSchema>>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  await createTable(client, IDEMPOTENCY_TABLE, idempotencyTableName(env));
  for (const [name, schema] of Object.entries(tables))
    await createTable(client, schema, appTableName(name, schema, env));
}
