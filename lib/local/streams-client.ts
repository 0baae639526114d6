import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { REQUEST_TIMEOUT_MS } from '../store/client';

/**
 * A DynamoDB Streams client configured like the table client, for the local stream feed
 * (`lib/local/stream-feed.ts`, run by `npm start` and `npm run complete`). On AWS nothing reads the
 * stream itself: Lambda's event source mapping feeds the completer. Kept out of `lib/store/client.ts`
 * so that no function's bundle loads the Streams client (4–7 ms of module init for nothing).
 */
export function createStreamsClient(env: NodeJS.ProcessEnv = process.env): DynamoDBStreamsClient {
  const endpoint = env.DYNAMODB_ENDPOINT || undefined;
  return new DynamoDBStreamsClient({
    ...(endpoint ? { endpoint } : {}),
    // The environment's region and (against a local endpoint) its key, as the table client gets them —
    // `env` need not be the process's.
    ...(env.AWS_REGION ? { region: env.AWS_REGION } : {}),
    ...(endpoint && env.AWS_ACCESS_KEY_ID
      ? { credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY || 'local' } }
      : {}),
    requestHandler: { connectionTimeout: 1_000, requestTimeout: REQUEST_TIMEOUT_MS, throwOnRequestTimeout: true },
  });
}
