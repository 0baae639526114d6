import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * The DynamoDB client every part of retrysafe shares, configured from the environment only:
 * `DYNAMODB_ENDPOINT` points it at DynamoDB Local; unset, the SDK's normal resolution applies (Lambda).
 *
 * Timeouts are explicit so an unreachable store fails fast (and a claim is never assumed).
 */
export function createDynamoDBClient(
  env: NodeJS.ProcessEnv = process.env,
  overrides: DynamoDBClientConfig = {},
): DynamoDBClient {
  const endpoint = env.DYNAMODB_ENDPOINT || undefined;
  return new DynamoDBClient({
    ...(endpoint ? { endpoint } : {}),
    requestHandler: { connectionTimeout: 1_000, requestTimeout: 5_000 },
    ...overrides,
  });
}

/** Document client over `client`: plain JS values in and out, `undefined` attributes dropped. */
export function createDocumentClient(client: DynamoDBClient): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
}
