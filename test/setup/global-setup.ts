import { startDynamoDBLocal } from '../../lib/local/dynamodb-local';
import { createDynamoDBClient } from '../../lib/store/client';
import { createTables } from '../../lib/store/create-tables';

/**
 * One in-memory DynamoDB Local for the whole run, on a free port, with the tables from the shared
 * definitions. Workers inherit DYNAMODB_ENDPOINT from this process's environment.
 */
export default async function globalSetup(): Promise<void> {
  process.env.AWS_REGION ??= 'us-east-1';
  process.env.AWS_ACCESS_KEY_ID ??= 'local';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'local';
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
