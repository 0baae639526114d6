import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { deadlineError, timeLeftForStoreCall } from './deadline';

/** The longest one DynamoDB request may take, outside an invocation's deadline too. */
export const REQUEST_TIMEOUT_MS = 5_000;

/**
 * The DynamoDB client every part of retrysafe shares, configured from the environment only:
 * `DYNAMODB_ENDPOINT` points it at DynamoDB Local; unset, the SDK's normal resolution applies (Lambda).
 *
 * Timeouts are explicit so an unreachable store fails fast (and a claim is never assumed). Inside an
 * invocation (`withInvocationDeadline`), every request — each attempt of the SDK's retries — is also
 * bounded by the time left and aborted at the deadline (less the answer reserve): a brownout ends in
 * the function's own JSON 503, and a call that ran past its deadline sends nothing more.
 */
export function createDynamoDBClient(
  env: NodeJS.ProcessEnv = process.env,
  overrides: DynamoDBClientConfig = {},
): DynamoDBClient {
  const endpoint = env.DYNAMODB_ENDPOINT || undefined;
  const client = new DynamoDBClient({
    ...(endpoint ? { endpoint } : {}),
    // Without throwOnRequestTimeout the SDK's handler only warns when a request runs over.
    requestHandler: { connectionTimeout: 1_000, requestTimeout: REQUEST_TIMEOUT_MS, throwOnRequestTimeout: true },
    ...overrides,
  });
  boundByInvocationDeadline(client);
  return client;
}

type RequestHandler = DynamoDBClient['config']['requestHandler'];
/** What the SDK's Node handler offers besides `handle` (the SDK calls these on a configured handler). */
interface HttpHandlerExtras {
  updateHttpClientConfig(key: never, value: never): void;
  httpHandlerConfigs(): unknown;
}

/**
 * Wraps the client's HTTP handler so that each request (each attempt) is bounded by the invocation's
 * deadline: one started with no time left is refused, one in flight is cut at the deadline by the
 * SDK's own request timeout (`throwOnRequestTimeout`: a `TimeoutError`, transient, so `unavailable`),
 * given per request. No timer or abort controller of its own: the SDK arms one timer per request anyway.
 */
function boundByInvocationDeadline(client: DynamoDBClient): void {
  const inner = client.config.requestHandler as RequestHandler & HttpHandlerExtras;
  function handleWithinDeadline(...[request, options = {}]: Parameters<RequestHandler['handle']>) {
    const timeLeft = timeLeftForStoreCall();
    if (timeLeft === undefined) return inner.handle(request, options);
    if (timeLeft <= 0) return Promise.reject(deadlineError());
    return inner.handle(request, { ...options, requestTimeout: Math.min(REQUEST_TIMEOUT_MS, timeLeft) });
  }
  // Delegates everything else to the SDK's own handler (its connection pool, its config).
  client.config.requestHandler = {
    metadata: inner.metadata,
    handle: handleWithinDeadline,
    updateHttpClientConfig: (key: never, value: never) => inner.updateHttpClientConfig(key, value),
    httpHandlerConfigs: () => inner.httpHandlerConfigs(),
    destroy: () => inner.destroy?.(),
  } as RequestHandler;
}

/** Document client over `client`: plain JS values in and out, `undefined` attributes dropped. */
export function createDocumentClient(client: DynamoDBClient): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
}
