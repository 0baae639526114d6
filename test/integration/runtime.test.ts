// Rule 7 (docs/state-machine.md): no time left is unavailable, never internal.
import { randomUUID } from 'node:crypto';
import type { Logger } from '@aws-lambda-powertools/logger';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { NotFoundError } from '../../lib/idempotency';
import { recordKeyOf } from '../../lib/idempotency/derivation';
import { StoredFailureError } from '../../lib/idempotency/errors';
import { type CallContext, type CallOutcome, outcomeOf } from '../../lib/idempotency/runtime';
import { beforeNext, throttled } from '../helpers/intercept';
import { createProtocolWorld, deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { gate, noteTool } from '../helpers/tools';

/**
 * The runtime's edges (runtime.ts): what it refuses before any write (an incomplete identity, no time
 * left, a deadline past the TTL's margin, idempotency disabled), what it tells the outcome hook and the
 * logs, and what a poll (`lookup`) says for each state of a call.
 */
let world: ProtocolWorld;
const logger = { error: jest.fn(), warn: jest.fn() };
const seen: Array<{ outcome: CallOutcome; call: CallContext }> = [];
function runtimeWith(
  options: { onOutcome?: (o: CallOutcome, c: CallContext) => void; storeTimeLeft?: () => number | undefined } = {},
) {
  return world.idempotencyRuntime({
    logger: logger as unknown as Logger,
    onOutcome: options.onOutcome ?? ((outcome, call) => void seen.push({ outcome, call })),
    ...(options.storeTimeLeft ? { storeTimeLeft: options.storeTimeLeft } : {}),
  });
}
beforeAll(() => {
  world = createProtocolWorld();
});
afterAll(() => world.destroy());
beforeEach(() => {
  seen.length = 0;
  logger.error.mockClear();
  logger.warn.mockClear();
});
afterEach(() => {
  jest.restoreAllMocks();
  delete process.env.POWERTOOLS_IDEMPOTENCY_DISABLED;
});

const input = (key = `k-${randomUUID()}`) => ({ idempotency_key: key, text: 'hi' });

describe('refused before anything is written', () => {
  it('an identity without a tenant or a user: internal, naming the field (a wiring mistake)', async () => {
    const { tool, execute } = noteTool();
    const answer = await runtimeWith().invoke(tool, { tenant: 't', user: '' }, input(), deadline());

    expect(answer).toEqual({ ok: false, error: { code: 'internal', message: 'internal error' } });
    expect(execute).not.toHaveBeenCalled();
    expect(logger.error).toHaveBeenCalledWith('tool call failed', {
      tool: 'send_note',
      code: 'internal',
      error: expect.objectContaining({ message: 'incomplete identity: user' }),
    });
  });

  it('no time left: unavailable, retry with the same key', async () => {
    const { tool, execute } = noteTool();
    const answer = await runtimeWith().invoke(tool, identity(), input(), { getRemainingTimeInMillis: () => 0 });

    expect(answer).toEqual({
      ok: false,
      error: { code: 'unavailable', message: 'no time was left for this call; retry with the same key' },
    });
    expect(execute).not.toHaveBeenCalled();
  });

  it('a deadline that cannot say how much time is left (NaN): no time left, nothing claimed', async () => {
    const { tool, execute } = noteTool();
    const caller = identity();

    const answer = await runtimeWith().invoke(tool, caller, input(), { getRemainingTimeInMillis: () => Number.NaN });

    expect(answer).toMatchObject({ ok: false, error: { code: 'unavailable', message: /no time was left/ } });
    expect(execute).not.toHaveBeenCalled();
    expect(await world.idempotencyRecordKeys(caller.tenant)).toEqual([]);
  });

  it('a deadline that does not end 10 s before the TTL: internal (a deployment mistake); one that does runs', async () => {
    const { tool, execute } = noteTool('send_note', undefined, { ttlSeconds: 910 });
    const runtime = runtimeWith();

    const tooLong = await runtime.invoke(tool, identity(), input(), { getRemainingTimeInMillis: () => 900_001 });
    const justRight = await runtime.invoke(tool, identity(), input(), { getRemainingTimeInMillis: () => 899_900 });

    // Exactly 10 s before the TTL is allowed (rule 2: the lock ends 10 s before it).
    const atTheMargin = await runtime.invoke(tool, identity(), input(), { getRemainingTimeInMillis: () => 900_000 });
    expect(atTheMargin).toMatchObject({ ok: true });
    expect(tooLong).toMatchObject({ ok: false, error: { code: 'internal' } });
    expect(logger.error).toHaveBeenCalledWith(
      'tool call failed',
      expect.objectContaining({
        error: expect.objectContaining({
          message: expect.stringMatching(/does not end 10000 ms before the 910 s TTL/),
        }),
      }),
    );
    expect(justRight).toMatchObject({ ok: true });
    expect(execute).toHaveBeenCalledTimes(2);
  });

  it('idempotency disabled (POWERTOOLS_IDEMPOTENCY_DISABLED): internal, never an unguarded write', async () => {
    process.env.POWERTOOLS_IDEMPOTENCY_DISABLED = 'true';
    const { tool, execute } = noteTool();
    const caller = identity();

    const answer = await runtimeWith().invoke(tool, caller, input(), deadline());

    expect(answer).toMatchObject({ ok: false, error: { code: 'internal' } });
    expect(execute).not.toHaveBeenCalled();
    expect(await world.idempotencyRecordKeys(caller.tenant)).toEqual([]);
    expect(logger.error).toHaveBeenCalledWith(
      'tool call failed',
      expect.objectContaining({
        error: expect.objectContaining({ message: 'idempotency is disabled by POWERTOOLS_IDEMPOTENCY_DISABLED' }),
      }),
    );
  });
});

describe('what the outcome hook and the logs are told', () => {
  it('each answer’s outcome and latency, with the tenant, the key and the transport', async () => {
    const { tool } = noteTool();
    const caller = identity();
    const runtime = runtimeWith();

    await runtime.invoke(tool, caller, input('k1'), deadline(), { transport: 'rest' });
    await runtime.invoke(tool, caller, input('k1'), deadline(), { transport: 'mcp' });
    await runtime.invoke(tool, caller, { idempotency_key: 'k2', text: '' }, deadline());

    expect(seen.map(({ outcome, call }) => [outcome.tool, outcome.outcome, outcome.replay, call])).toEqual([
      ['send_note', 'executed', undefined, { tenant: caller.tenant, key: 'k1', transport: 'rest' }],
      ['send_note', 'replayed', 'client_key', { tenant: caller.tenant, key: 'k1', transport: 'mcp' }],
      // Refused before its key was read: no key.
      ['send_note', 'invalid_args', undefined, { tenant: caller.tenant, key: undefined, transport: undefined }],
    ]);
    expect(seen.every(({ outcome }) => outcome.latencyMs >= 0 && outcome.latencyMs < 10_000)).toBe(true);
  });

  it('a pending answer names its key to the hook', async () => {
    const held = gate();
    const started = gate();
    const { tool } = noteTool('send_note', async () => {
      started.open();
      await held.opened;
      return { receipt: {}, replayed: false };
    });
    const caller = identity();
    const runtime = runtimeWith();
    const first = runtime.invoke(tool, caller, input('k1'), deadline());
    await started.opened; // the first call holds its claim and runs

    await runtime.invoke(tool, caller, input('k1'), deadline());
    held.open();
    await first;

    expect(seen[0]).toMatchObject({ outcome: { outcome: 'pending' }, call: { key: 'k1' } });
  });

  it('a hook that throws changes no answer: logged', async () => {
    const { tool } = noteTool();
    const runtime = runtimeWith({
      onOutcome: () => {
        throw new Error('metrics down');
      },
    });

    const answer = await runtime.invoke(tool, identity(), input(), deadline());

    expect(answer).toMatchObject({ ok: true, idempotent: false });
    expect(logger.error).toHaveBeenCalledWith('recording a call outcome failed', {
      tool: 'send_note',
      error: expect.objectContaining({ message: 'metrics down' }),
    });
  });

  it('a hook that throws, with no logger: the answer all the same', async () => {
    const { tool } = noteTool();
    const runtime = world.idempotencyRuntime({
      onOutcome: () => {
        throw new Error('metrics down');
      },
    });

    await expect(runtime.invoke(tool, identity(), input(), deadline())).resolves.toMatchObject({ ok: true });
  });

  it('a call out of its invocation’s time, with no logger: answered all the same', async () => {
    const { tool } = noteTool('send_note', async () => {
      throw Object.assign(new Error('timed out'), { name: 'TimeoutError' });
    });
    const runtime = world.idempotencyRuntime({
      storeTimeLeft: () => 0,
    });

    await expect(runtime.invoke(tool, identity(), input(), deadline())).resolves.toMatchObject({
      ok: false,
      error: { code: 'unavailable' },
    });
  });

  it('a call that ran out of its invocation’s time: warned, not an error; a business error: not logged', async () => {
    const timedOut = noteTool('send_note', async () => {
      throw Object.assign(new Error('timed out'), { name: 'TimeoutError' });
    }).tool;
    const refused = noteTool('send_note', async () => {
      throw new NotFoundError('no such recipient');
    }).tool;

    await runtimeWith({ storeTimeLeft: () => 0 }).invoke(timedOut, identity(), input(), deadline());
    expect(logger.warn).toHaveBeenCalledWith(
      'tool call ran out of time: it stays in flight for a retry with its key or the completer',
      { tool: 'send_note', code: 'unavailable' },
    );
    expect(logger.error).not.toHaveBeenCalled();

    // Out of time, but not the store's answer (a wiring mistake): still an error, with its stack.
    await runtimeWith({ storeTimeLeft: () => 0 }).invoke(timedOut, { tenant: 't', user: '' }, input(), deadline());
    expect(logger.error).toHaveBeenCalledWith('tool call failed', expect.objectContaining({ code: 'internal' }));
    expect(logger.warn).toHaveBeenCalledTimes(1);
    logger.error.mockClear();

    await runtimeWith({ storeTimeLeft: () => 5_000 }).invoke(timedOut, identity(), input(), deadline());
    expect(logger.error).toHaveBeenCalledWith(
      'tool call failed',
      expect.objectContaining({ tool: 'send_note', code: 'unavailable' }),
    );
    logger.error.mockClear();

    const answer = await runtimeWith().invoke(refused, identity(), input(), deadline());
    expect(answer).toEqual({ ok: false, error: { code: 'not_found', message: 'no such recipient' } });
    expect(logger.error).not.toHaveBeenCalled();
  });

  it('outcomeOf: executed, replayed, pending or the error’s code', () => {
    expect(outcomeOf({ ok: true, idempotent: false, key: 'k', receipt: {} })).toBe('executed');
    expect(outcomeOf({ ok: true, idempotent: true, key: 'k', receipt: {} })).toBe('replayed');
    expect(outcomeOf({ ok: false, status: 'pending', key: 'k', retry_after_ms: 100 })).toBe('pending');
    expect(outcomeOf({ ok: false, error: { code: 'conflict', message: 'x' } })).toBe('conflict');
  });
});

describe('invokeForCall', () => {
  it('names the call, whether this request began it, and the key — only what it has', async () => {
    const { tool } = noteTool();
    const caller = identity();
    const runtime = runtimeWith();

    const first = await runtime.invokeForCall(tool, caller, input('k1'), deadline());
    const replay = await runtime.invokeForCall(tool, caller, input('k1'), deadline());
    const refused = await runtime.invokeForCall(tool, caller, { text: 'hi' }, deadline());

    expect(first).toMatchObject({ fresh: true, clientKey: 'k1', call: { status: 'COMPLETED' } });
    expect(replay).not.toHaveProperty('fresh');
    expect(replay).toMatchObject({ clientKey: 'k1', call: { status: 'COMPLETED' } });
    expect(Object.keys(refused)).toEqual(['result']);
  });
});

describe('a poll (lookup)', () => {
  async function setLock(caller: { tenant: string; user: string }, key: string, values: Record<string, unknown>) {
    const names = Object.keys(values);
    await world.client.send(
      new UpdateItemCommand({
        TableName: world.idempotencyTable.tableName,
        Key: marshall({ id: recordKeyOf('send_note', [caller.tenant, caller.user, key]) }),
        UpdateExpression: `SET ${names.map((_, i) => `#n${i} = :v${i}`).join(', ')}`,
        ExpressionAttributeNames: Object.fromEntries(names.map((name, i) => [`#n${i}`, name])),
        ExpressionAttributeValues: marshall(Object.fromEntries(names.map((name, i) => [`:v${i}`, values[name]]))),
      }),
    );
  }

  it('says pending, abandoned, stalled, completed — or nothing for a key never used', async () => {
    const held = gate();
    const started = gate();
    const { tool } = noteTool('send_note', async () => {
      started.open();
      await held.opened;
      return { receipt: { n: 1 }, replayed: false };
    });
    const caller = identity();
    const runtime = runtimeWith();
    const running = runtime.invoke(tool, caller, input('k1'), deadline());
    await started.opened; // the first call holds its claim and runs

    const live = await runtime.lookup('send_note', caller, 'k1');
    await setLock(caller, 'k1', { in_progress_expiration: Date.now() - 1 });
    const abandoned = await runtime.lookup('send_note', caller, 'k1');
    const record = await runtime.readCall('send_note', caller, 'k1');
    await setLock(caller, 'k1', { stalled_claim: record!.claimId });
    const stalled = await runtime.lookup('send_note', caller, 'k1');
    await setLock(caller, 'k1', { in_progress_expiration: Date.now() + 60_000 });
    held.open();
    await running;
    const completed = await runtime.lookup('send_note', caller, 'k1');

    // Each in-flight answer says when to ask again: a live call soon (≤ 1 s), an abandoned one when its
    // re-run is due (its lock just ended, attempt 1: at once, so a second); a stalled one why it stalled.
    expect([live, abandoned, stalled, completed]).toEqual([
      { status: 'pending', retryAfterMs: 1_000 },
      { status: 'abandoned', retryAfterMs: 1_000 },
      { status: 'stalled', reason: 'attempts' },
      { status: 'completed', receipt: { n: 1 } },
    ]);
    expect(await runtime.lookup('send_note', caller, 'never')).toBeUndefined();
  });

  it('a stored failure answers the poll as it answered the call', async () => {
    const caller = identity();
    const runtime = runtimeWith();
    let attempt = 0;
    const { tool } = noteTool('send_note', async () => {
      attempt += 1;
      if (attempt === 1) throw Object.assign(new Error('timed out'), { name: 'TimeoutError' });
      throw new NotFoundError('no such recipient');
    });
    await runtime.invoke(tool, caller, input('k1'), deadline());
    await setLock(caller, 'k1', { in_progress_expiration: Date.now() - 1 });
    await runtime.invoke(tool, caller, input('k1'), deadline());

    const polled = runtime.lookup('send_note', caller, 'k1');

    await expect(polled).rejects.toBeInstanceOf(StoredFailureError);
    await expect(polled).rejects.toMatchObject({ code: 'not_found', message: 'no such recipient', expose: true });
  });

  it('an erased call: nothing', async () => {
    const caller = identity();
    const runtime = runtimeWith();
    const { tool } = noteTool();
    await runtime.invoke(tool, caller, input('k1'), deadline());
    await setLock(caller, 'k1', { status: 'ERASED' });

    expect(await runtime.lookup('send_note', caller, 'k1')).toBeUndefined();
  });

  it('a store that fails the read: its error in the closed set, logged with the tool and code', async () => {
    const runtime = runtimeWith();
    beforeNext(world.client, 'GetItemCommand', () => {
      throw throttled();
    });

    await expect(runtime.lookup('send_note', identity(), 'k1')).rejects.toMatchObject({ code: 'unavailable' });
    expect(logger.error).toHaveBeenCalledWith('operation lookup failed', {
      tool: 'send_note',
      code: 'unavailable',
      error: expect.objectContaining({ name: 'ThrottlingException' }),
    });
  });
});

describe('Rule 7 (docs/state-machine.md): no time left is unavailable, never internal', () => {
  it('answers a call with a couple of milliseconds left unavailable, not internal', async () => {
    const caller = identity();
    const { tool, execute } = noteTool('send_note');
    // A clock that moves one millisecond every time it is read: what a few ms of real work between
    // the runtime's deadline check and Powertools' claim look like, made deterministic.
    const real = Date.now.bind(Date);
    const start = real();
    let ticks = 0;
    jest.spyOn(Date, 'now').mockImplementation(() => start + ticks++);
    // A Lambda invoked with 3 ms of its budget left.
    const end = start + 3;
    const logged: unknown[] = [];
    const errorLog = { error: (_message: string, extra: unknown) => logged.push(extra) } as unknown as Logger;
    const runtime = world.idempotencyRuntime({ logger: errorLog });
    const result = await runtime.invoke(
      tool,
      caller,
      { idempotency_key: 'k1', text: 'hi' },
      { getRemainingTimeInMillis: () => end - Date.now() },
    );
    jest.restoreAllMocks();

    // At 43ce454 the cause is the persistence layer refusing Powertools' lock (now + max(1, time
    // left)) as not in the future: a plain Error, classified `internal`.
    expect(execute).not.toHaveBeenCalled();
    expect(result).toMatchObject({ ok: false, error: { code: 'unavailable' } });
  });
});
