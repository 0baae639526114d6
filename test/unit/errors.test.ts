import { isTransientAwsError } from '../../lib/idempotency/errors';

/** An error as the AWS SDK raises it: a name, a fault side and the HTTP status in `$metadata`. */
function sdkError(name: string, httpStatusCode: number, fault: 'client' | 'server') {
  return Object.assign(new Error(name), { name, $fault: fault, $metadata: { httpStatusCode } });
}

/** A transaction cancelled, with one reason per item (as DynamoDB's TransactWriteItems answers). */
function cancelled(...codes: string[]) {
  return Object.assign(sdkError('TransactionCanceledException', 400, 'client'), {
    CancellationReasons: codes.map((Code) => ({ Code })),
  });
}

function networkError(code: string) {
  return Object.assign(new Error(`connect ${code} 127.0.0.1:1`), { code });
}

describe('isTransientAwsError', () => {
  it.each([
    ['throttling', sdkError('ThrottlingException', 400, 'client')],
    ['provisioned throughput exceeded', sdkError('ProvisionedThroughputExceededException', 400, 'client')],
    ['a request limit', sdkError('RequestLimitExceeded', 400, 'client')],
    ['an internal server error', sdkError('InternalServerError', 500, 'server')],
    ['service unavailable', sdkError('ServiceUnavailable', 503, 'server')],
    ['a timeout', Object.assign(new Error('timed out'), { name: 'TimeoutError' })],
    ['a reset connection', networkError('ECONNRESET')],
    ['a refused connection', networkError('ECONNREFUSED')],
    ['a DNS failure', networkError('EAI_AGAIN')],
    ['a reset behind a cause', Object.assign(new Error('fetch failed'), { cause: networkError('ECONNRESET') })],
    ['an SDK wrapper of another realm', new Error('AWS SDK error wrapper for Error: connect ECONNREFUSED 1.2.3.4:1')],
    ['a transaction conflict', sdkError('TransactionConflictException', 400, 'client')],
    ['a transaction cancelled by a conflict', cancelled('None', 'TransactionConflict')],
    ['a transaction cancelled by throttling', cancelled('ThrottlingError', 'None')],
  ])('is transient for %s: retry with the same key', (_label, error) => {
    expect(isTransientAwsError(error)).toBe(true);
  });

  it.each([
    ['a missing table', sdkError('ResourceNotFoundException', 400, 'client')],
    ['a denied action', sdkError('AccessDeniedException', 400, 'client')],
    ['a malformed request', sdkError('ValidationException', 400, 'client')],
    ['a failed condition', sdkError('ConditionalCheckFailedException', 400, 'client')],
    ['a transaction cancelled by a failed condition', cancelled('ConditionalCheckFailed', 'TransactionConflict')],
    ['a transaction cancelled as invalid', cancelled('None', 'ValidationError')],
    ['a transaction cancelled for no reason given', cancelled('None', 'None')],
    ['a bug', new TypeError('cannot read properties of undefined')],
    ['an abort', Object.assign(new Error('aborted'), { name: 'AbortError' })],
    ['not an error', 'ECONNRESET'],
    ['nothing', undefined],
  ])('is not transient for %s: a deployment mistake or a bug is internal', (_label, error) => {
    expect(isTransientAwsError(error)).toBe(false);
  });
});
