import { LogFormatter, LogItem } from '@aws-lambda-powertools/logger';
import type { LogAttributes, UnformattedAttributes } from '@aws-lambda-powertools/logger/types';

/**
 * Powertools' log line, with errors logged by what they are, not by everything they carry. Powertools'
 * own `formatError` copies every own property of an error into the line — and an SDK error can carry
 * data: a `ConditionalCheckFailedException` from a write with `ReturnValuesOnConditionCheckFailure:
 * 'ALL_OLD'` holds the stored item (`Item`: a call's arguments, an email's body). Here an error keeps its
 * `name`, `location`, `message`, `stack`, a scalar `code`, the SDK's `$metadata` as `http_status` and
 * `request_id`, and its `cause` — an error cause formatted the same way, a scalar kept, anything else
 * named only by its type. Nothing else.
 *
 * `formatAttributes` is `PowertoolsLogFormatter`'s (without `logRecordOrder`, which retrysafe does not
 * set), restated because `@aws-lambda-powertools/logger` exports only the abstract `LogFormatter`;
 * test/unit/log-formatter.test.ts holds its fields to the default formatter's.
 */
export class ErrorSafeLogFormatter extends LogFormatter {
  override formatAttributes(attributes: UnformattedAttributes, additionalLogAttributes: LogAttributes): LogItem {
    const baseAttributes: LogAttributes = {
      level: attributes.logLevel,
      message: attributes.message,
      timestamp: this.formatTimestamp(attributes.timestamp),
      service: attributes.serviceName,
      cold_start: attributes.lambdaContext?.coldStart,
      function_arn: attributes.lambdaContext?.invokedFunctionArn,
      function_memory_size: attributes.lambdaContext?.memoryLimitInMB,
      function_name: attributes.lambdaContext?.functionName,
      function_request_id: attributes.lambdaContext?.awsRequestId,
      sampling_rate: attributes.sampleRateValue,
      xray_trace_id: attributes.xRayTraceId,
      tenant_id: attributes.lambdaContext?.tenantId,
    };
    return new LogItem({ attributes: baseAttributes }).addAttributes(additionalLogAttributes);
  }

  override formatError(error: Error): LogAttributes {
    const carried = error as Error & { code?: unknown; $metadata?: { httpStatusCode?: unknown; requestId?: unknown } };
    const fields: LogAttributes = {
      name: error.name,
      location: this.getCodeLocation(error.stack),
      message: error.message,
      stack: error.stack,
    };
    if (isScalar(carried.code)) fields.code = carried.code;
    if (typeof carried.$metadata?.httpStatusCode === 'number') fields.http_status = carried.$metadata.httpStatusCode;
    if (typeof carried.$metadata?.requestId === 'string') fields.request_id = carried.$metadata.requestId;
    const cause: unknown = error.cause;
    if (cause instanceof Error) fields.cause = this.formatError(cause);
    else if (isScalar(cause)) fields.cause = cause;
    else if (cause !== undefined) fields.cause = `[${cause === null ? 'null' : typeof cause} not logged]`;
    return fields;
  }
}

function isScalar(value: unknown): value is string | number | boolean {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}
