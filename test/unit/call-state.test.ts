import { classify, createdAtOf, holdsIntent } from '../../lib/idempotency/call-state';
import { intentOf, UNKNOWN_RUNNERS } from '../../lib/idempotency/protocol/intent-record';
import {
  DEFAULT_RECORD_ATTRIBUTES as ATTR,
  type CallRecord,
  callIdOf,
  callRecordOf,
  decodeCall,
  decodeOutcome,
  encodeCall,
  isCallRecordKey,
  recordKeyOfCallId,
  STATUS,
} from '../../lib/idempotency/protocol/record';

/**
 * call-state.ts read on its own: `classify`'s boundaries (the same instants the conditions of
 * protocol/ decide on: `#expiry < :now`, `#lock < :nowMs`), and the readers of table items, which must
 * refuse an item that is not one as the protocol writes it rather than hand on a half-typed record.
 * Found by the mutation run (docs/mutation.md): 52 of call-state's mutants survived the whole suite,
 * all of them here.
 */
const NOW = 1_800_000_000_000;

function record(override: Partial<CallRecord> = {}): CallRecord {
  return {
    recordKey: 'refund#abc',
    callId: 'refund#abc@i1',
    status: STATUS.inProgress,
    claimId: 'c1',
    lockEndsMs: NOW + 1_000,
    expiresAtS: NOW / 1000 + 3_600,
    validation: 'v',
    tenant: 't',
    tool: 'refund',
    call: undefined,
    downstreamKey: undefined,
    attempt: 1,
    outcome: undefined,
    stalledClaimId: undefined,
    createdAtMs: NOW,
    completedAtMs: undefined,
    ...override,
  };
}

describe('classify', () => {
  it('is absent without a record', () => {
    expect(classify(undefined, NOW)).toBe('absent');
  });

  it('counts a record expired only after its TTL second, as the claim condition `#expiry < :now` does', () => {
    const expiresAtS = NOW / 1000;

    expect(classify(record({ expiresAtS }), NOW)).toBe('live');
    expect(classify(record({ expiresAtS }), NOW + 1)).toBe('expired');
  });

  it('keeps a lock live through its last millisecond, as the takeover condition `#lock < :nowMs` does', () => {
    expect(classify(record({ lockEndsMs: NOW }), NOW)).toBe('live');
    expect(classify(record({ lockEndsMs: NOW }), NOW + 1)).toBe('abandoned');
  });

  it.each([
    // No claim at all (Powertools' handler wrote it): no takeover can name one (rule 2), nothing can finish it.
    ['no claim at all', { stalledClaimId: undefined, claimId: undefined }, 'stalled'],
    ['no claim given up on', { stalledClaimId: undefined }, 'abandoned'],
    ['another claim given up on (the call was taken over since)', { stalledClaimId: 'c0' }, 'abandoned'],
    ['its own claim given up on', { stalledClaimId: 'c1' }, 'stalled'],
  ] as const)('an ended lock with %s is %s', (_what, override, state) => {
    expect(classify(record({ lockEndsMs: NOW - 1, ...override }), NOW)).toBe(state);
  });

  it('reads erased and completed before the lock', () => {
    expect(classify(record({ status: STATUS.erased }), NOW)).toBe('erased');
    expect(classify(record({ status: STATUS.completed, lockEndsMs: NOW - 1 }), NOW)).toBe('completed');
  });
});

describe('the ids', () => {
  it('derives a record created before created_at from its TTL less the tool TTL', () => {
    expect(createdAtOf({ createdAtMs: undefined, expiresAtS: 1_000_000 }, 3_600)).toBe(996_400_000);
    expect(createdAtOf({ createdAtMs: 5, expiresAtS: 1_000_000 }, 3_600)).toBe(5);
  });

  it('names the record key of a call id, and none for a string without an instance', () => {
    expect(recordKeyOfCallId(callIdOf('refund#a@b', 'i1'))).toBe('refund#a@b');
    expect(recordKeyOfCallId('refund#abc')).toBeUndefined();
  });

  it.each([
    ['refund#abc', true],
    ['refund#intent#abc', false],
    ['refundabc', false],
    ['', false],
  ])('%j is a call record key: %s', (key, expected) => {
    expect(isCallRecordKey(key)).toBe(expected);
  });
});

describe('callRecordOf', () => {
  const item = {
    [ATTR.key]: 'refund#abc',
    [ATTR.status]: STATUS.inProgress,
    [ATTR.callInstance]: 'i1',
    [ATTR.attempt]: 2,
    [ATTR.expiry]: 1_900_000_000,
    [ATTR.lockEnd]: NOW,
    [ATTR.claim]: 'c1',
    [ATTR.createdAt]: NOW - 5,
    [ATTR.call]: encodeCall({ user: 'ada', clientKey: 'k1', args: { amount: 1 } }),
  };

  it('reads an item as every claim writes it', () => {
    expect(callRecordOf(item, ATTR)).toMatchObject({
      recordKey: 'refund#abc',
      callId: 'refund#abc@i1',
      status: STATUS.inProgress,
      attempt: 2,
      expiresAtS: 1_900_000_000,
      lockEndsMs: NOW,
      claimId: 'c1',
      createdAtMs: NOW - 5,
      call: { user: 'ada', clientKey: 'k1', args: { amount: 1 } },
    });
  });

  it.each([ATTR.key, ATTR.status, ATTR.callInstance, ATTR.attempt, ATTR.expiry, ATTR.lockEnd])(
    'refuses an item without %s, or with it of the other type',
    (name) => {
      const { [name]: kept, ...without } = item;

      expect(callRecordOf(without, ATTR)).toBeUndefined();
      expect(callRecordOf({ ...item, [name]: typeof kept === 'string' ? 7 : String(kept) }, ATTR)).toBeUndefined();
    },
  );

  // Powertools' handler on this table: key, status, TTL, validation, its result, and a lock only when it had
  // a Lambda context — no instance, attempt, claim or call.
  const powertoolsItem = {
    [ATTR.key]: 'refund#abc',
    [ATTR.status]: STATUS.inProgress,
    [ATTR.expiry]: 1_900_000_000,
    [ATTR.validation]: 'v',
  };

  it('reads an item Powertools wrote as attempt 1 of the call <key>@powertools, stalled for powertools once its lock ends', () => {
    expect(callRecordOf({ ...powertoolsItem, [ATTR.lockEnd]: NOW }, ATTR)).toEqual(
      expect.objectContaining({
        callId: 'refund#abc@powertools',
        attempt: 1,
        lockEndsMs: NOW,
        stalledReason: 'powertools',
        writtenBy: 'powertools',
        outcome: undefined,
        validation: 'v',
      }),
    );
  });

  it('holds a Powertools claim made without a Lambda context (no lock) until its TTL', () => {
    expect(callRecordOf(powertoolsItem, ATTR)?.lockEndsMs).toBe(1_900_000_000 * 1000);
  });

  it('reads no outcome from a Powertools record in flight, whatever its data', () => {
    const read = callRecordOf({ ...powertoolsItem, [ATTR.data]: { receipt: '{}', replayed: false } }, ATTR);

    expect(read?.outcome).toBeUndefined();
  });

  it.each([
    [
      'a result that is a JSON object: its receipt, the effect its own',
      { b: 2, a: 1 },
      { receipt: '{"a":1,"b":2}', replayed: false },
    ],
    [
      'a result of exactly an outcome’s shape: that outcome',
      { receipt: '{"a":1}', replayed: true },
      { receipt: '{"a":1}', replayed: true },
    ],
    [
      'a result that is not a JSON object: internal, never a second run',
      'done',
      { replayed: false, failure: 'internal' },
    ],
    ['no result: internal', undefined, { replayed: false, failure: 'internal' }],
  ])('reads a completed Powertools record holding %s', (_what, data, outcome) => {
    const read = callRecordOf({ ...powertoolsItem, [ATTR.status]: STATUS.completed, [ATTR.data]: data }, ATTR);

    expect(read?.outcome).toEqual(outcome);
  });

  it('refuses a Powertools item whose status Powertools never writes', () => {
    expect(callRecordOf({ ...powertoolsItem, [ATTR.status]: 'PARKED' }, ATTR)).toBeUndefined();
  });

  it('reads a claim’s own stall reason, and says a claim was not Powertools’', () => {
    const read = callRecordOf({ ...item, [ATTR.stalledReason]: 'attempts' }, ATTR);

    expect(read).toMatchObject({ stalledReason: 'attempts' });
    expect(read?.writtenBy).toBeUndefined();
  });

  it('leaves an optional attribute of the wrong type out', () => {
    const read = callRecordOf({ ...item, [ATTR.claim]: 3, [ATTR.createdAt]: 'yesterday' }, ATTR);

    expect(read?.claimId).toBeUndefined();
    expect(read?.createdAtMs).toBeUndefined();
  });
});

describe('intentOf and holdsIntent', () => {
  const item = {
    [ATTR.key]: 'send_email#intent#x',
    [ATTR.intentHolder]: 'send_email#abc',
    [ATTR.claim]: 'c1',
    [ATTR.callInstance]: 'send_email#abc@i1',
    [ATTR.downstreamKey]: 'dk',
    [ATTR.windowEnd]: 1_900_000_000,
    [ATTR.expiry]: 1_900_086_400,
    [ATTR.intentRunners]: new Set(['send_email#abc@i1']),
  };

  it('reads an intent as every intent write leaves it', () => {
    expect(intentOf(item, ATTR)).toEqual({
      intentKey: 'send_email#intent#x',
      holder: { recordKey: 'send_email#abc', claimId: 'c1', callId: 'send_email#abc@i1' },
      downstreamKey: 'dk',
      windowEndsAtS: 1_900_000_000,
      replaced: undefined,
      runners: ['send_email#abc@i1'],
      runnersKnown: true,
      expiresAtS: 1_900_086_400,
    });
  });

  it('reads its runners, its holder among them, in one order', () => {
    const runners = new Set(['send_email#def@i2', 'send_email#abc@i1']);

    // In one order (sorted), whatever order the set came in: they are read in it.
    expect(intentOf({ ...item, [ATTR.intentRunners]: runners }, ATTR)?.runners).toEqual([
      'send_email#abc@i1',
      'send_email#def@i2',
    ]);
  });

  it('an intent an earlier version wrote (no runners), or one taken over since (the unknown mark): runners unknown, its holder the one it names', () => {
    const { [ATTR.intentRunners]: _none, ...earlier } = item;
    const marked = { ...item, [ATTR.intentRunners]: new Set([UNKNOWN_RUNNERS, 'send_email#def@i2']) };

    expect(intentOf(earlier, ATTR)).toMatchObject({ runners: ['send_email#abc@i1'], runnersKnown: false });
    expect(intentOf(marked, ATTR)).toMatchObject({
      runners: ['send_email#abc@i1', 'send_email#def@i2'],
      runnersKnown: false,
    });
  });

  it.each([
    ATTR.key,
    ATTR.intentHolder,
    ATTR.claim,
    ATTR.callInstance,
    ATTR.downstreamKey,
    ATTR.windowEnd,
    ATTR.expiry,
  ])('refuses an intent without %s', (name) => {
    const { [name]: _gone, ...without } = item;

    expect(intentOf(without, ATTR)).toBeUndefined();
  });

  it('holds an intent while the record is the holder call, whichever attempt', () => {
    const holder = { recordKey: 'refund#abc', claimId: 'c0', callId: 'refund#abc@i1' };

    expect(holdsIntent(undefined, holder)).toBe(false);
    expect(holdsIntent(record({ callId: 'refund#abc@i2' }), holder)).toBe(false);
    expect(holdsIntent(record({ claimId: 'c9' }), holder)).toBe(true);
  });
});

describe('decodeCall and decodeOutcome', () => {
  it.each([
    ['not text', 42],
    ['not JSON', '{"user":'],
    ['no user', '{"key":"k","args":{}}'],
    ['no key', '{"user":"u","args":{}}'],
    ['a numeric user', '{"user":1,"key":"k","args":{}}'],
    ['null arguments', '{"user":"u","key":"k","args":null}'],
    ['text arguments', '{"user":"u","key":"k","args":"a"}'],
    ['list arguments', '{"user":"u","key":"k","args":[1]}'],
    ['a list holding a call text (a list attribute)', ['{"user":"u","key":"k","args":{}}']],
  ])('refuses a call attribute with %s', (_what, text) => {
    expect(decodeCall(text)).toBeUndefined();
  });

  it('reads a call attribute as a claim writes it', () => {
    expect(decodeCall('{"args":{"a":1},"key":"k","user":"u"}')).toEqual({
      user: 'u',
      clientKey: 'k',
      args: { a: 1 },
    });
  });

  it.each([
    ['null', null],
    ['text', 'x'],
    ['a number', 42],
    ['no replayed', { receipt: '{}' }],
    ['replayed as text', { replayed: 'false' }],
    ['replayed as text beside a receipt', { receipt: '{}', replayed: 'false' }],
    ['a key more beside a receipt', { receipt: '{}', replayed: false, at: 1 }],
    ['a key more beside a failure', { replayed: true, failure: 'conflict', at: 1 }],
    ['neither a receipt nor a failure', { replayed: false }],
    ['a failure no error code names', { replayed: true, failure: 'teapot' }],
    ['a failure named after an Object method', { replayed: true, failure: 'toString' }],
    ['a failure whose message is not text', { replayed: true, failure: 'conflict', message: 5 }],
    ['a receipt beside a failure', { receipt: '{}', replayed: false, failure: 'internal' }],
    ['a receipt beside a message', { receipt: '{}', replayed: false, message: 'm' }],
    ['a receipt that is not text', { receipt: { a: 1 }, replayed: false }],
    ['a receipt that is not JSON', { receipt: '{"a":', replayed: false }],
    ['a receipt of null', { receipt: 'null', replayed: false }],
    ['a receipt of a list', { receipt: '[{}]', replayed: false }],
    ['a receipt of a string', { receipt: '"{}"', replayed: false }],
    ['a receipt of a number', { receipt: '1', replayed: false }],
  ])('holds no outcome in %s', (_what, data) => {
    expect(decodeOutcome(data)).toBeUndefined();
  });

  it.each([
    ['a receipt', { receipt: '{}', replayed: false }],
    ['a replayed receipt', { receipt: '{"a":[1]}', replayed: true }],
    ['a failure', { replayed: true, failure: 'conflict' }],
    [
      'a failure with its message',
      { replayed: false, failure: 'internal', message: 'the receipt could not be stored' },
    ],
  ])('reads a stored outcome: %s', (_what, data) => {
    expect(decodeOutcome(data)).toBe(data);
  });
});
