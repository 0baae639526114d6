/**
 * The Logger's JSON replacer (`jsonReplacerFn`): an error is logged by what it is, not by everything it
 * carries. Powertools' own `formatError` copies every own property of an error into the line — and an SDK
 * error can carry data: a `ConditionalCheckFailedException` from a write with
 * `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'` holds the stored item (`Item`: a call's arguments, an
 * email's body). Here an error keeps its `name`, `message`, `stack`, a scalar `code`, the SDK's
 * `$metadata` as `http_status` and `request_id`, and its `cause` — an error cause (replaced the same way
 * as the line is written), a scalar kept, anything else named only by its type. Nothing else.
 *
 * A replacer rather than a `LogFormatter` subclass: the package exports only the abstract `LogFormatter`
 * (not `PowertoolsLogFormatter`), so a formatter would restate Powertools' line — ~0.4 KB more in every
 * write's bundle, which is held to a budget (test/infra/entries.ts). The line is Powertools' own.
 */
export function errorSafeReplacer(_key: string, value: unknown): unknown {
  if (!(value instanceof Error)) return value;
  const carried = value as Error & { code?: unknown; $metadata?: { httpStatusCode?: unknown; requestId?: unknown } };
  const cause: unknown = value.cause;
  return {
    name: value.name,
    message: value.message,
    stack: value.stack,
    ...(isScalar(carried.code) ? { code: carried.code } : {}),
    ...(typeof carried.$metadata?.httpStatusCode === 'number' ? { http_status: carried.$metadata.httpStatusCode } : {}),
    ...(typeof carried.$metadata?.requestId === 'string' ? { request_id: carried.$metadata.requestId } : {}),
    ...(cause === undefined
      ? {}
      : {
          cause:
            cause instanceof Error || isScalar(cause)
              ? cause
              : `[${cause === null ? 'null' : typeof cause} not logged]`,
        }),
  };
}

function isScalar(value: unknown): value is string | number | boolean {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}
