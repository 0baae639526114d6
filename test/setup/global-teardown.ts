import type { DynamoDBLocal } from '../../lib/local/dynamodb-local';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { dynamoDBLocal?: DynamoDBLocal }).dynamoDBLocal?.stop();
}
