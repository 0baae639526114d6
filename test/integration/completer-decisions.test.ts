// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
import { randomUUID } from 'node:crypto';
import type { Logger } from '@aws-lambda-powertools/logger';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { dueAfterParkMs, lastLookMs } from '../../lib/idempotency/backoff';
import { Completer, type Recheck, type StreamChange } from '../../lib/idempotency/completer';
import { ConflictError, InvalidArgsError, NotFoundError } from '../../lib/idempotency/errors';
import { DEFAULT_RECORD_ATTRIBUTES, STATUS } from '../../lib/idempotency/protocol/record';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callRecords } from '../helpers/call-records';
import { beforeNext } from '../helpers/intercept';
import { createProtocolWorld, deadline, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool } from '../helpers/tools';

/**
 * The completer's decisions one at a time (completer.ts), where completer.test.ts runs it end to end on
 * the stream: which stream changes become a recheck and when it is due, and what a recheck does with
 * each state of the record it names. The queue here records what is sent.
 */
let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  world = createProtocolWorld();
  runtime = world.idempotencyRuntime();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

/** A completer whose queue records each `send`, and whose logger records what it logs. */
function completerWith(options: { tools?: ReturnType<typeof noteTool>['tool'][]; runtime?: ToolRuntime } = {}) {
  const sends: Recheck[][] = [];
  const logger = { error: jest.fn(), warn: jest.fn() };
  const { tool, execute } = noteTool('send_note');
  const completer = new Completer({
    client: world.client,
    runtime: options.runtime ?? runtime,
    tools: options.tools ?? [tool],
    queue: { send: async (rechecks) => void sends.push([...rechecks]) },
    tableName: world.idempotencyTable.tableName,
    attributes: DEFAULT_RECORD_ATTRIBUTES,
    logger: logger as unknown as Logger,
  });
  return { completer, sends, logger, tool, execute };
}

/** The clock, frozen at `atMs` for everything that reads `Date.now()`. */
function freezeClock(atMs: number): void {
  jest.spyOn(Date, 'now').mockReturnValue(atMs);
}

describe('a stream batch', () => {
  const NOW = 1_800_000_000_000;

  /** A stream change of a call record: its key, its new image (or none: a REMOVE), its sequence number. */
  function change(key: string, image: Record<string, unknown> | undefined, sequence?: string): StreamChange {
    return {
      eventName: image ? 'MODIFY' : 'REMOVE',
      dynamodb: {
        Keys: marshall({ id: key }),
        ...(image ? { NewImage: marshall(image, { removeUndefinedValues: true }) } : {}),
        ...(sequence === undefined ? {} : { SequenceNumber: sequence }),
      },
    };
  }

  /** A call record's image in flight: claimed by `claim`, its lock ending `lockInMs` from NOW. */
  function inFlight(key: string, overrides: Record<string, unknown> = {}, lockInMs = 10_000) {
    return {
      id: key,
      status: STATUS.inProgress,
      claim_id: 'c1',
      call_id: 'c1',
      attempt: 1,
      in_progress_expiration: NOW + lockInMs,
      expiration: NOW / 1000 + 3_600,
      ...overrides,
    };
  }

  beforeEach(() => freezeClock(NOW));

  it('schedules a recheck for a call in flight, due when its lock ends (liveness: the due time is the record’s)', async () => {
    const { completer, sends } = completerWith();

    const report = await completer.onStream([change('send_note#a', inFlight('send_note#a', {}, 10_200), '1')]);

    expect(report).toEqual({ recordsRead: 1, rechecksScheduled: 1 });
    // ceil(10.2 s) to the lock's end.
    expect(sends).toEqual([[{ key: 'send_note#a', claim: 'c1', delaySeconds: 11, dueAtMs: NOW + 10_200 }]]);
  });

  it('waits out a later attempt’s backoff counted from its lock’s end, not from the read, and never more than SQS’s 900 s', async () => {
    const { completer, sends } = completerWith();

    await completer.onStream([
      // Attempt 3, its lock ended 5 s ago: the backoff of attempt 2 (60 s) from the lock's end — 55 s from now.
      // (Counted from the read, a process that reads the stream every minute would never reach it.)
      change('send_note#b', inFlight('send_note#b', { attempt: 3 }, -5_000), '1'),
      // A lock ending in an hour: capped at 900 s.
      change('send_note#c', inFlight('send_note#c', {}, 3_600_000), '2'),
    ]);

    expect(sends).toEqual([
      [
        { key: 'send_note#b', claim: 'c1', delaySeconds: 55, dueAtMs: NOW + 55_000 },
        { key: 'send_note#c', claim: 'c1', delaySeconds: 900, dueAtMs: NOW + 3_600_000 },
      ],
    ]);
  });

  it('folds a batch to each record’s last image by sequence number, whatever order the changes arrive in', async () => {
    const { completer, sends } = completerWith();
    const completed = { ...inFlight('send_note#d'), status: STATUS.completed };

    const report = await completer.onStream([
      // Completed last (sequence 20), delivered first: nothing to recheck.
      change('send_note#d', completed, '20'),
      change('send_note#d', inFlight('send_note#d'), '10'),
      // In flight last (sequence 7 after 5): rechecked, on the claim of its last image.
      change('send_note#e', inFlight('send_note#e', { claim_id: 'old' }), '5'),
      change('send_note#e', inFlight('send_note#e', { claim_id: 'new' }), '7'),
      // Sequence numbers compare as numbers, not as text ("9" < "10").
      change('send_note#f', inFlight('send_note#f'), '10'),
      change('send_note#f', completed, '9'),
    ]);

    expect(report).toEqual({ recordsRead: 6, rechecksScheduled: 2 });
    expect(sends).toEqual([
      [
        { key: 'send_note#e', claim: 'new', delaySeconds: 10, dueAtMs: NOW + 10_000 },
        { key: 'send_note#f', claim: 'c1', delaySeconds: 10, dueAtMs: NOW + 10_000 },
      ],
    ]);
  });

  it('passes over what is not a call record in flight, and sends nothing when nothing is', async () => {
    const { completer, sends } = completerWith();

    const report = await completer.onStream([
      { eventName: 'MODIFY' }, // no keys at all
      { eventName: 'MODIFY', dynamodb: { NewImage: marshall(inFlight('send_note#g')) } }, // no Keys
      change('send_note#intent#abc', inFlight('send_note#intent#abc'), '1'), // a dedupe window's intent
      change('plain', inFlight('plain'), '2'), // not a record key
      { dynamodb: { Keys: { id: { N: '42' } }, NewImage: marshall(inFlight('x#1')), SequenceNumber: '3' } }, // key not a string
      change('send_note#h', undefined, '4'), // removed
      change('send_note#i', { ...inFlight('send_note#i'), status: STATUS.completed }, '5'),
      change('send_note#j', inFlight('send_note#j', { claim_id: undefined }), '6'), // no claim
      change('send_note#k', inFlight('send_note#k', { stalled_claim: 'c1' }), '7'), // the give-up's own image
      change('send_note#l', { id: 'send_note#l', status: STATUS.inProgress }, '8'), // not a record a claim wrote
      change('send_note#o', inFlight('send_note#o', { expiration: NOW / 1000 - 1 }), '9'), // past its TTL: gone
    ]);

    expect(report).toEqual({ recordsRead: 11, rechecksScheduled: 0 });
    expect(sends).toEqual([]);
  });

  it('rechecks a call stalled on an earlier claim, now held by a later one', async () => {
    const { completer, sends } = completerWith();

    await completer.onStream([change('send_note#m', inFlight('send_note#m', { stalled_claim: 'c0' }), '1')]);

    expect(sends).toEqual([[{ key: 'send_note#m', claim: 'c1', delaySeconds: 10, dueAtMs: NOW + 10_000 }]]);
  });

  it('reads a change without a sequence number as the earliest', async () => {
    const { completer, sends } = completerWith();

    await completer.onStream([
      change('send_note#n', inFlight('send_note#n'), '1'),
      change('send_note#n', { ...inFlight('send_note#n'), status: STATUS.completed }),
    ]);

    expect(sends).toEqual([[{ key: 'send_note#n', claim: 'c1', delaySeconds: 10, dueAtMs: NOW + 10_000 }]]);
  });
});

describe('a recheck', () => {
  // The world exists once `beforeAll` ran: the helpers are built on first use.
  const abandonedCall = () => callRecords(world, runtime).abandonedCall();
  const itemOf = (key: string) => callRecords(world, runtime).itemOf(key);
  const setAttributes = (key: string, values: Record<string, unknown>) =>
    callRecords(world, runtime).setAttributes(key, values);

  /** Runs `change` just before the next UpdateItem is sent (between a recheck's read and its write). */
  function beforeNextUpdate(change: () => Promise<unknown>): void {
    beforeNext(world.client, 'UpdateItemCommand', change);
  }

  /** Moves the clock past the re-run of a first attempt parked now: its lock (the park set it to now), and the stream's window after it. */
  function pastTheLock(): void {
    pastItsDue(1);
  }

  /** Moves the clock past the re-run of an attempt `attempt` parked now: its lock, then its backoff, at least the stream's window (liveness). */
  function pastItsDue(attempt: number): void {
    const now = Date.now();
    jest.spyOn(Date, 'now').mockImplementation(() => now + 1_000 + dueAfterParkMs(attempt));
  }

  it('finishes an abandoned call: the same arguments, caller and key, taking over only the claim it names', async () => {
    const { completer, execute, sends } = completerWith();
    const call = await abandonedCall();
    pastTheLock();

    const outcome = await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline());

    expect(outcome).toBe('finished');
    expect(execute).toHaveBeenCalledTimes(1);
    expect(execute.mock.calls[0]![0]).toEqual({ text: 'hi' });
    expect(execute.mock.calls[0]![1]).toMatchObject({ identity: call.caller });
    expect(await itemOf(call.recordKey)).toMatchObject({ status: STATUS.completed, attempt: 2 });
    expect(sends).toEqual([]);
    const replay = await runtime.lookup('send_note', call.caller, call.key);
    expect(replay).toMatchObject({ status: 'completed' });
  });

  it('settles, writing and sending nothing, when the record is gone, completed or held by another claim', async () => {
    const { completer, execute, sends } = completerWith();
    const call = await abandonedCall();
    pastTheLock();

    const otherClaim = await completer.onRecheck({ key: call.recordKey, claim: 'another' }, deadline());
    const gone = await completer.onRecheck({ key: `send_note#${randomUUID()}`, claim: call.claim }, deadline());
    await setAttributes(call.recordKey, { status: STATUS.completed });
    const completed = await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline());

    expect([otherClaim, gone, completed]).toEqual(['settled', 'settled', 'settled']);
    expect(execute).not.toHaveBeenCalled();
    expect(sends).toEqual([]);
  });

  it('looks again when a live lock ends: at least 1 s, at most 900 s, rounded up', async () => {
    const { completer, execute, sends } = completerWith();
    const call = await abandonedCall();
    const now = Date.now();
    freezeClock(now);
    const outcomes: string[] = [];
    for (const lockInMs of [300, 10_500, 3_600_000, 0]) {
      // A claim's lock (a park's is seen the stream's window after its end: `seenAtMs`).
      await setAttributes(call.recordKey, { in_progress_expiration: now + lockInMs, parked_claim: 'an-earlier-claim' });
      outcomes.push(await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline()));
    }

    // A lock ending this very millisecond is still live (`classify`: lock ≥ now).
    expect(outcomes).toEqual(['later', 'later', 'later', 'later']);
    expect(sends.map((sent) => sent.map((recheck) => recheck.delaySeconds))).toEqual([[1], [11], [900], [1]]);
    expect(sends.flat().every((recheck) => recheck.key === call.recordKey && recheck.claim === call.claim)).toBe(true);
    expect(execute).not.toHaveBeenCalled();
  });

  it('re-runs up to maxAttempts (8 by default), then marks the call stalled on the claim read, logged once', async () => {
    const { completer, execute, logger } = completerWith();
    const call = await abandonedCall();
    await setAttributes(call.recordKey, { attempt: 9 });
    pastItsDue(9);

    const givenUp = await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline());

    expect(givenUp).toBe('gave_up');
    expect(execute).not.toHaveBeenCalled();
    expect(await itemOf(call.recordKey)).toMatchObject({ stalled_claim: call.claim, claim_id: call.claim });
    expect(logger.error).toHaveBeenCalledTimes(1);
    expect(logger.error).toHaveBeenCalledWith(expect.stringMatching(/gave up/), {
      tool: 'send_note',
      attempts: 9,
      reason: 'attempts',
    });
    expect(await itemOf(call.recordKey)).toMatchObject({ stalled_reason: 'attempts' });
    // Stalled: a second recheck of the same claim finds nothing to do.
    expect(await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline())).toBe('settled');
  });

  it('gives up on nothing when the call was taken over between its read and the mark: settled, not logged', async () => {
    const { completer, logger } = completerWith();
    const call = await abandonedCall();
    await setAttributes(call.recordKey, { attempt: 9 });
    pastItsDue(9);
    beforeNextUpdate(() =>
      setAttributes(call.recordKey, { claim_id: 'a-retry', in_progress_expiration: Date.now() + 60_000 }),
    );

    const outcome = await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline());

    expect(outcome).toBe('settled');
    expect(logger.error).not.toHaveBeenCalled();
    expect(await itemOf(call.recordKey)).not.toHaveProperty('stalled_claim');
  });

  it('resumes only the claim it read: taken over and abandoned again meanwhile, it runs nothing', async () => {
    const { completer, execute, sends } = completerWith();
    const call = await abandonedCall();
    pastTheLock();
    // Between the read and the takeover, a retry took the call over and was abandoned in turn.
    beforeNextUpdate(() => setAttributes(call.recordKey, { claim_id: 'a-retry', attempt: 2 }));

    const outcome = await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline());

    // Nothing to resume: the retry's own claim has its own recheck (its change is on the stream).
    expect(outcome).toBe('finished');
    expect(execute).not.toHaveBeenCalled();
    expect(sends).toEqual([]);
    expect(await itemOf(call.recordKey)).toMatchObject({ claim_id: 'a-retry', attempt: 2 });
  });

  it('runs its re-run through the runtime as the completer (the outcome’s transport)', async () => {
    const outcomes: Array<{ transport: string | undefined }> = [];
    const observed = world.idempotencyRuntime({
      onOutcome: (_outcome, context) => void outcomes.push({ transport: context.transport }),
    });
    const { completer } = completerWith({ runtime: observed });
    const call = await abandonedCall();
    pastTheLock();

    expect(await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline())).toBe('finished');
    expect(outcomes).toEqual([{ transport: 'completer' }]);
  });

  it('re-runs a call at its 8th attempt (the limit is inclusive)', async () => {
    const { completer, execute } = completerWith();
    const call = await abandonedCall();
    await setAttributes(call.recordKey, { attempt: 8 });
    pastItsDue(8);

    expect(await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline())).toBe('finished');
    expect(execute).toHaveBeenCalledTimes(1);
  });

  it('keeps a re-run that fails transiently, and looks again after the attempt’s backoff', async () => {
    const failing = noteTool('send_note', async () => {
      throw Object.assign(new Error('still down'), { name: 'TimeoutError' });
    }).tool;
    const { completer, sends } = completerWith({ tools: [failing] });
    const call = await abandonedCall();
    pastTheLock();

    const outcome = await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline());

    expect(outcome).toBe('unsettled');
    // The record's attempt as read (1): backoff 30 s — the due time the re-run's own park gives the record.
    const dueAtMs = Date.now() + 30_000;
    expect(sends).toEqual([[{ key: call.recordKey, claim: call.claim, delaySeconds: 30, dueAtMs }]]);
    expect(await itemOf(call.recordKey)).toMatchObject({ status: STATUS.inProgress, attempt: 2 });
  });

  it('keeps a re-run that finds the call live again (its holder parked itself meanwhile): looked at again later', async () => {
    const { completer, execute, sends } = completerWith();
    const call = await abandonedCall();
    pastTheLock();
    // Between the recheck's read and its takeover, the attempt it saw abandoned parks itself to a later lock.
    beforeNextUpdate(() => setAttributes(call.recordKey, { in_progress_expiration: Date.now() + 60_000 }));

    const outcome = await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline());

    expect(outcome).toBe('unsettled');
    expect(execute).not.toHaveBeenCalled();
    expect(sends).toEqual([
      [{ key: call.recordKey, claim: call.claim, delaySeconds: 30, dueAtMs: Date.now() + 30_000 }],
    ]);
    expect(await itemOf(call.recordKey)).toMatchObject({ claim_id: call.claim, attempt: 1 });
  });

  it('counts a re-run that ends in a business error as finished: the error is the call’s stored outcome', async () => {
    const refusing = noteTool('send_note', async () => {
      throw new NotFoundError('no such recipient');
    }).tool;
    const { completer, sends } = completerWith({ tools: [refusing] });
    const call = await abandonedCall();
    pastTheLock();

    expect(await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline())).toBe('finished');
    expect(sends).toEqual([]);
    expect(await itemOf(call.recordKey)).toMatchObject({ status: STATUS.completed });
  });

  it.each([
    ['invalid_args', () => new InvalidArgsError('text: too long for the provider')],
    ['conflict', () => new ConflictError('the note was changed meanwhile')],
  ])(
    'counts a re-run whose own attempt ended in %s as finished (its stored outcome), not as refused before a claim',
    async (_code, error) => {
      const refusing = noteTool('send_note', async () => {
        throw error();
      }).tool;
      const { completer, sends, logger } = completerWith({ tools: [refusing] });
      const call = await abandonedCall();
      pastTheLock();

      expect(await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline())).toBe('finished');
      expect(sends).toEqual([]);
      expect(logger.error).not.toHaveBeenCalled();
      const item = await itemOf(call.recordKey);
      expect(item).toMatchObject({ status: STATUS.completed });
      expect(item).not.toHaveProperty('stalled_claim');
    },
  );

  it('looks again at a live call near its TTL at its last look before it, not at its due time past it (liveness)', async () => {
    const { completer, execute, sends } = completerWith();
    const call = await abandonedCall();
    const now = Date.now();
    freezeClock(now);
    // Attempt 3, its lock ending in 20 s, its TTL 90 s away: due 60 s after the lock (80 s), but the last
    // look is 10 s + 60 s before the TTL (20 s) — so it is looked at when its lock ends.
    await setAttributes(call.recordKey, {
      attempt: 3,
      in_progress_expiration: now + 20_000,
      parked_claim: 'an-earlier-claim', // a claim's lock, not a park's
      expiration: Math.floor(now / 1000) + 90,
    });
    const expiresAtMs = (Math.floor(now / 1000) + 90) * 1000;

    expect(await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline())).toBe('later');
    const lookAtMs = Math.max(now + 20_000, expiresAtMs - 70_000);
    expect(sends).toEqual([
      [{ key: call.recordKey, claim: call.claim, delaySeconds: Math.ceil((lookAtMs - now) / 1000), dueAtMs: lookAtMs }],
    ]);
    expect(execute).not.toHaveBeenCalled();
  });

  it('waits for an abandoned call’s due time when a re-run can still start by then — up to exactly the last start rule 2 allows its lock (130 s) — and gives it up, at its due time, when due one ms past it (liveness)', async () => {
    const { completer, execute, sends, logger } = completerWith();
    const call = await abandonedCall();
    const now = Date.now();
    freezeClock(now);
    const expiresAtS = Math.floor(now / 1000) + 3_600;
    // Attempt 3, due 60 s after its lock's end. With a 130 s lock a re-run must start by the TTL − 140 s
    // (70 s before its last look, TTL − 70 s: the lock is what bounds it, not LATEST_LOOK_AFTER_DUE_MS).
    const lastStartMs = expiresAtS * 1000 - 10_000 - 130_000;
    await setAttributes(call.recordKey, {
      attempt: 3,
      in_progress_expiration: lastStartMs - 60_000,
      expiration: expiresAtS,
    });
    freezeClock(lastStartMs - 50_000); // within its backoff: not due yet

    expect(await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline(130_000))).toBe('later');
    // Due at the last start exactly: looked at then.
    expect(sends).toEqual([[{ key: call.recordKey, claim: call.claim, delaySeconds: 50, dueAtMs: lastStartMs }]]);
    expect(logger.error).not.toHaveBeenCalled();
    // One ms later due, and no re-run can start by then: given up on at its due time (no sooner: review 28, F4).
    await setAttributes(call.recordKey, { in_progress_expiration: lastStartMs - 60_000 + 1 });
    expect(await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline(130_000))).toBe('later');
    freezeClock(lastStartMs + 1);
    expect(await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline(130_000))).toBe('gave_up');
    expect(await itemOf(call.recordKey)).toMatchObject({ stalled_reason: 'expiring' });
    expect(execute).not.toHaveBeenCalled();
  });

  it('gives up, whatever its own lock and at its due time, an abandoned call due at, past or a minute and a re-run’s lock or less before its last look before its TTL (expiresBeforeRerun: what its answers said in advance, reviews 24 F1, 25 F1b, 26 F1, 27 F1, 28 F1, F4 and 32 F3) — and waits for one due two minutes and a ms before it', async () => {
    const { completer, execute, sends } = completerWith();
    const call = await abandonedCall();
    const now = Date.now();
    freezeClock(now);
    const expiresAtS = Math.floor(now / 1000) + 3_600;
    const lastLook = lastLookMs(expiresAtS); // TTL − 70 s
    // Attempt 3, due 60 s after its lock's end: two minutes and a ms before its last look (cron's run, a minute
    // late, still takes a minute's lock that ends before it). A 20 s lock could start later.
    await setAttributes(call.recordKey, {
      attempt: 3,
      in_progress_expiration: lastLook - 180_001,
      expiration: expiresAtS,
    });
    freezeClock(lastLook - 170_000);

    expect(await runtime.lookup('send_note', call.caller, call.key)).not.toHaveProperty('givesUp');
    expect(await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline(20_000))).toBe('later');
    expect(sends).toEqual([
      [{ key: call.recordKey, claim: call.claim, delaySeconds: 50, dueAtMs: lastLook - 120_001 }],
    ]);
    // Due two minutes before its last look (LATEST_LOOK_AFTER_DUE_MS: cron's run may come a minute later, and
    // its minute's lock, RERUN_LOCK_MS, would end past the last look): its answers say the server stops
    // retrying it then; so it does, at that time (not at this early recheck), with a 20 s lock too.
    await setAttributes(call.recordKey, { in_progress_expiration: lastLook - 180_000 });
    expect(await runtime.lookup('send_note', call.caller, call.key)).toMatchObject({ givesUp: 'expiring' });
    expect(await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline(20_000))).toBe('later');
    freezeClock(lastLook - 120_000);
    expect(await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline(20_000))).toBe('gave_up');
    expect(await itemOf(call.recordKey)).toMatchObject({ stalled_reason: 'expiring' });
    expect(execute).not.toHaveBeenCalled();
  });

  it('gives up on a call it cannot finish with no logger all the same', async () => {
    const completer = new Completer({
      client: world.client,
      runtime,
      tools: [],
      queue: { send: async () => undefined },
      tableName: world.idempotencyTable.tableName,
      attributes: DEFAULT_RECORD_ATTRIBUTES,
    });
    const call = await abandonedCall();
    pastTheLock();

    expect(await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline())).toBe('gave_up');
  });

  it('gives up at once on a call it cannot finish — an unknown tool, no stored call, no tenant — stalled with the reason its poll says (liveness)', async () => {
    const { completer, execute, logger } = completerWith({ tools: [noteTool('other_tool').tool] });
    const unknownTool = await abandonedCall();
    pastTheLock();
    const unknown = await completer.onRecheck({ key: unknownTool.recordKey, claim: unknownTool.claim }, deadline());
    jest.restoreAllMocks();

    const known = completerWith();
    const noCall = await abandonedCall();
    await setAttributes(noCall.recordKey, { call: 'not a call' });
    const noTenant = await abandonedCall();
    await world.client.send(
      new UpdateItemCommand({
        TableName: world.idempotencyTable.tableName,
        Key: { id: { S: noTenant.recordKey } },
        UpdateExpression: 'REMOVE tenant',
      }),
    );
    pastTheLock();
    const withoutCall = await known.completer.onRecheck({ key: noCall.recordKey, claim: noCall.claim }, deadline());
    const withoutTenant = await known.completer.onRecheck(
      { key: noTenant.recordKey, claim: noTenant.claim },
      deadline(),
    );

    expect([unknown, withoutCall, withoutTenant]).toEqual(['gave_up', 'gave_up', 'gave_up']);
    expect(execute).not.toHaveBeenCalled();
    expect(known.execute).not.toHaveBeenCalled();
    expect(logger.error).toHaveBeenCalledWith(expect.stringMatching(/gave up/), {
      tool: 'send_note',
      attempts: 1,
      reason: 'unknown_tool',
    });
    expect(known.logger.error).toHaveBeenNthCalledWith(1, expect.stringMatching(/gave up/), {
      tool: 'send_note',
      attempts: 1,
      reason: 'unreadable_call',
    });
    expect(known.logger.error).toHaveBeenCalledTimes(2);
    expect(await itemOf(unknownTool.recordKey)).toMatchObject({
      stalled_claim: unknownTool.claim,
      stalled_reason: 'unknown_tool',
    });
    expect(await itemOf(noCall.recordKey)).toMatchObject({
      status: STATUS.inProgress,
      attempt: 1,
      stalled_reason: 'unreadable_call',
    });
    // The poll tells the caller why, and that only a resend finishes it.
    expect(await runtime.lookup('send_note', unknownTool.caller, unknownTool.key)).toEqual({
      status: 'stalled',
      reason: 'unknown_tool',
    });
  });

  it('re-runs an abandoned call when its record says, not when a recheck comes: one delivered early is sent again for the due time (liveness)', async () => {
    const { completer, execute, sends } = completerWith();
    const call = await abandonedCall();
    // Attempt 3, parked now: due 60 s (attempt 2's backoff) after its lock's end.
    await setAttributes(call.recordKey, { attempt: 3 });
    const parkedAt = (await itemOf(call.recordKey)).in_progress_expiration as number;
    freezeClock(parkedAt + 20_000);

    const early = await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline());

    expect(early).toBe('later');
    expect(execute).not.toHaveBeenCalled();
    expect(sends).toEqual([[{ key: call.recordKey, claim: call.claim, delaySeconds: 40, dueAtMs: parkedAt + 60_000 }]]);
    freezeClock(parkedAt + 60_000);
    expect(await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline())).toBe('finished');
    expect(execute).toHaveBeenCalledTimes(1);
  });
});
