import type { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { INTERNAL_MESSAGE, isTransientAwsError } from '../idempotency/errors';
import { withInvocationDeadline } from '../store/deadline';
import type { ApiEvent } from './event';
import { errorResponse, type HttpResponse } from './status';

export type LambdaHandler = (event: ApiEvent, context: Context) => Promise<HttpResponse>;

/**
 * The last line of defence of an entry point: whatever escapes becomes a JSON `internal` (or
 * `unavailable` for a store outage) answer, logged, and never serialised into the response. It also
 * makes the invocation's deadline the bound of every DynamoDB call the handler makes.
 */
export function withErrorBoundary<E = ApiEvent>(
  name: string,
  logger: Logger,
  handle: (event: E, context: Context) => Promise<HttpResponse>,
  logFields: Readonly<Record<string, string>> = {},
): (event: E, context: Context) => Promise<HttpResponse> {
  return async function boundary(event, context) {
    try {
      return await withInvocationDeadline(context, () => handle(event, context));
    } catch (error) {
      logger.error('unhandled error', { handler: name, ...logFields, error: error as Error });
      return isTransientAwsError(error)
        ? errorResponse('unavailable', 'a store is unavailable; retry later')
        : errorResponse('internal', INTERNAL_MESSAGE);
    }
  };
}
