import {
  answerOf,
  failureOf,
  MAX_RETRY_AFTER_MS,
  MIN_RETRY_AFTER_MS,
  pendingAnswer,
  REFUSED,
  retryAfterMs,
  StoreWriteError,
  toToolError,
} from '../../lib/idempotency/answers';
import {
  ConflictError,
  INTERNAL_MESSAGE,
  InternalError,
  NotFoundError,
  UnavailableError,
} from '../../lib/idempotency/errors';

/**
 * What a caller is told (answers.ts): a stored outcome's answer, the one `pending` answer and its
 * `retry_after_ms`, and every failure worded into the closed set of codes — `internal` never shows why.
 */
const NOW = 1_800_000_000_000;
beforeEach(() => jest.spyOn(Date, 'now').mockReturnValue(NOW));
afterEach(() => jest.restoreAllMocks());

function sdkError(name: string, httpStatusCode: number, fault: 'client' | 'server') {
  return Object.assign(new Error(name), { name, $fault: fault, $metadata: { httpStatusCode } });
}
const throttled = () => sdkError('ThrottlingException', 400, 'client');
const denied = () => sdkError('AccessDeniedException', 400, 'client');

describe('a stored outcome’s answer', () => {
  it('a receipt: ok, under the client key, idempotent when replayed', () => {
    expect(answerOf({ receipt: '{"id":"r1"}', replayed: true }, 'k1')).toEqual({
      ok: true,
      idempotent: true,
      key: 'k1',
      receipt: { id: 'r1' },
    });
  });

  it('a failure: its code and message; no code stored is internal', () => {
    expect(answerOf({ failure: 'not_found', message: 'no such invoice', replayed: false }, 'k1')).toEqual({
      ok: false,
      idempotent: false,
      error: { code: 'not_found', message: 'no such invoice' },
    });
    expect(failureOf({ replayed: false })).toEqual({ code: 'internal', message: INTERNAL_MESSAGE });
  });

  it('a failure without a message says its code; an internal one never shows its message', () => {
    expect(failureOf({ failure: 'conflict', replayed: false })).toEqual({ code: 'conflict', message: 'conflict' });
    expect(failureOf({ failure: 'internal', message: 'stack trace here', replayed: false })).toEqual({
      code: 'internal',
      message: INTERNAL_MESSAGE,
    });
  });
});

describe('pending', () => {
  it('names the key, and asks again when the lock ends — never sooner than 100 ms, never later than 1 s', () => {
    expect(pendingAnswer('k1', { atMs: NOW + 400 })).toEqual({
      ok: false,
      status: 'pending',
      key: 'k1',
      retry_after_ms: 400,
    });
    expect(pendingAnswer('k1', { afterMs: 250 })).toMatchObject({ retry_after_ms: 250 });
    expect(retryAfterMs(NOW + 400.2)).toBe(401);
    expect(retryAfterMs(NOW + 20)).toBe(MIN_RETRY_AFTER_MS);
    expect(retryAfterMs(NOW - 5_000)).toBe(MIN_RETRY_AFTER_MS);
    expect(retryAfterMs(NOW + 60_000)).toBe(MAX_RETRY_AFTER_MS);
    expect(retryAfterMs(undefined)).toBe(MAX_RETRY_AFTER_MS);
  });
});

describe('a failure, worded into the closed set of codes', () => {
  it('passes a tool’s own error through as it is', () => {
    const error = new NotFoundError('no such invoice');
    expect(toToolError(error)).toBe(error);
  });

  it('a store write refused for good (a missing table, a denied action): internal, the cause kept', () => {
    const cause = denied();
    const worded = toToolError(new StoreWriteError('claim', { cause }));
    expect(worded).toBeInstanceOf(InternalError);
    expect(worded.message).toBe('the idempotency store refused the request');
    expect((worded.cause as StoreWriteError).cause).toBe(cause);
  });

  it('a store write failed transiently: unavailable — after the effect ran, says it may have been applied', () => {
    const afterEffect = toToolError(new StoreWriteError('store', { cause: throttled() }));
    const beforeEffect = toToolError(new StoreWriteError('claim', { cause: throttled() }));
    const settling = toToolError(new StoreWriteError('settle', { cause: throttled() }));

    expect(afterEffect).toBeInstanceOf(UnavailableError);
    expect(afterEffect.cause).toBeInstanceOf(StoreWriteError);
    expect(beforeEffect.cause).toBeInstanceOf(StoreWriteError);
    expect(afterEffect.message).toBe('the write may have been applied; retry with the same key to read its result');
    expect(beforeEffect).toBeInstanceOf(UnavailableError);
    expect(beforeEffect.message).toBe('the idempotency store is unavailable; retry later');
    expect(settling.message).toBe('the idempotency store is unavailable; retry later');
  });

  it('any other transient AWS failure: unavailable; anything else: internal, with its message kept inside', () => {
    const transient = toToolError(throttled());
    const bug = toToolError(new TypeError('x is undefined'));
    const thrown = toToolError('a string');

    expect(transient).toBeInstanceOf(UnavailableError);
    expect(transient.cause).toMatchObject({ name: 'ThrottlingException' });
    expect(bug.cause).toBeInstanceOf(TypeError);
    expect(transient.message).toBe('a store is unavailable; retry with the same key');
    expect(bug).toBeInstanceOf(InternalError);
    expect(bug.message).toBe('x is undefined');
    expect(thrown).toBeInstanceOf(InternalError);
    expect(thrown.message).toBe('unknown failure');
    expect(thrown.cause).toBe('a string');
  });

  it('names which store write failed', () => {
    expect(new StoreWriteError('settle', { cause: undefined })).toMatchObject({
      name: 'StoreWriteError',
      write: 'settle',
      message: 'the idempotency store failed the settle write',
    });
  });
});

describe('why a claim or an attempt is refused', () => {
  it.each([
    ['conflict', () => REFUSED.conflict(), ConflictError, 'idempotency_key: already used with different arguments'],
    ['erased', () => REFUSED.erased(), NotFoundError, 'idempotency_key: the call under this key was erased'],
    [
      'noTimeLeft',
      () => REFUSED.noTimeLeft(),
      UnavailableError,
      'no time was left for this call; retry with the same key',
    ],
    [
      'nothingToResume',
      () => REFUSED.nothingToResume(),
      NotFoundError,
      'idempotency_key: nothing to resume under this key',
    ],
    [
      'changedWhileRead',
      () => REFUSED.changedWhileRead(),
      UnavailableError,
      'the idempotency record changed while it was read; retry',
    ],
    [
      'claimLostAfterEffect',
      () => REFUSED.claimLostAfterEffect(),
      UnavailableError,
      'the write may have been applied; retry with the same key to read its result',
    ],
    [
      'claimLostBeforeRun',
      () => REFUSED.claimLostBeforeRun(),
      UnavailableError,
      'another attempt holds this call now; retry with the same key to read its result',
    ],
    [
      'notACallRecord',
      () => REFUSED.notACallRecord('refund#h'),
      InternalError,
      'the item under refund#h is not a call record a claim wrote',
    ],
  ])('%s: its code and what the caller reads', (_name, refusal, type, message) => {
    // Made inside the test, so that the mutation run counts this test as the one that covers it.
    const error = refusal();
    expect(error).toBeInstanceOf(type);
    expect(error.message).toBe(message);
  });
});
