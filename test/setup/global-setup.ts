import { startDynamoDBLocal } from '../../lib/local/dynamodb-local';
import { createDynamoDBClient } from '../../lib/store/client';
import { createTables } from '../../lib/store/create-tables';

/**
 * One in-memory DynamoDB Local for the whole run, on a free port, with the tables from the shared
 * definitions. Workers inherit DYNAMODB_ENDPOINT from this process's environment.
 */
export default async function globalSetup(): Promise<void> {
  await import('./env');
  const local = await startDynamoDBLocal();
  (globalThis as { dynamoDBLocal?: typeof local }).dynamoDBLocal = local;
  process.env.DYNAMODB_ENDPOINT = local.endpoint;
  const client = createDynamoDBClient();
  try {
    await createTables(client);
  } finally {
    client.destroy();
  }
}
