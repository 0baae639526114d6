/**
 * The Logger's JSON replacer (`jsonReplacerFn`): an error is logged by what it is, not by everything it
 * carries. Powertools' own `formatError` copies every own property of an error into the line — and an SDK
 * error can carry data: a `ConditionalCheckFailedException` from a write with
 * `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'` holds the stored item (`Item`: a call's arguments, an
 * email's body). Here an error keeps its `name`, `message`, `stack`, a string or number `code`, the SDK's
 * `$metadata` as `http_status` and `request_id`, and its `cause` — an error cause (replaced the same way
 * as the line is written), a scalar kept, an object (or null) as `[not logged]`. Nothing else.
 *
 * A replacer rather than a `LogFormatter` subclass: the package exports only the abstract `LogFormatter`
 * (not `PowertoolsLogFormatter`), so a formatter would restate Powertools' line — ~0.4 KB more in every
 * write's bundle, which is held to a budget (test/infra/entries.ts). The line is Powertools' own.
 */
export function errorSafeReplacer(_key: string, value: unknown): unknown {
  if (!(value instanceof Error)) return value;
  const { code, $metadata, cause } = value as Error & {
    code?: unknown;
    $metadata?: { httpStatusCode?: number; requestId?: string };
  };
  // Fields left undefined are not written.
  return {
    name: value.name,
    message: value.message,
    stack: value.stack,
    code: typeof code === 'string' || typeof code === 'number' ? code : undefined,
    http_status: $metadata?.httpStatusCode,
    request_id: $metadata?.requestId,
    cause: cause instanceof Error || typeof cause !== 'object' ? cause : '[not logged]',
  };
}
