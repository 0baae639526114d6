// Rule 1 (docs/state-machine.md): a record whose effect may have happened is never deleted.
// Rule 4 (docs/state-machine.md): every pending is pollable.
import { tableName } from '../../app/tables';
import { refund as refundTool } from '../../app/tools/refund';
import { InFlightError } from '../../lib/idempotency/errors';
import { MAX_RECEIPT_BYTES } from '../../lib/idempotency/receipt';
import { ToolRuntime } from '../../lib/idempotency/runtime';
import { freePort } from '../../lib/local/free-port';
import { createDynamoDBClient } from '../../lib/store/client';
import { advanceClock } from '../helpers/clock';
import { noteTool } from '../helpers/tools';
import { createWorld, deadline, identity, type World } from '../helpers/world';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());

describe('when the store cannot be reached', () => {
  it('answers unavailable and never calls the provider', async () => {
    // Prepare: a runtime whose store is a port nobody listens on.
    const port = await freePort();
    const client = createDynamoDBClient(
      { ...process.env, DYNAMODB_ENDPOINT: `http://127.0.0.1:${port}` },
      { maxAttempts: 1 },
    );
    const runtime = new ToolRuntime({ client, tableName: tableName('idempotency') });
    const refund = jest.fn();
    const tool = refundTool.bind({ ...world, provider: { refund } });

    // Act
    const result = await runtime.invoke(
      tool,
      identity(),
      { idempotency_key: 'k1', invoice_id: 'inv_1', amount: 100 },
      deadline(),
    );
    client.destroy();

    // Assess
    expect(result).toEqual({
      ok: false,
      error: { code: 'unavailable', message: 'the idempotency store is unavailable; retry later' },
    });
    expect(refund).not.toHaveBeenCalled();
  });
});

describe('deployment mistakes are not "retry later"', () => {
  it('answers internal (500), not unavailable, when the idempotency table does not exist; nothing runs', async () => {
    const runtime = new ToolRuntime({ client: world.client, tableName: 'retrysafe-no-such-table' });
    const { tool, execute } = noteTool();

    const result = await runtime.invoke(tool, identity(), { idempotency_key: 'k1', text: 'hi' }, deadline());
    const poll = runtime.lookup('send_note', identity(), 'k1');

    expect(result).toEqual({ ok: false, error: { code: 'internal', message: 'internal error' } });
    expect(execute).not.toHaveBeenCalled();
    await expect(poll).rejects.toMatchObject({ code: 'internal' });
  });

  it('answers unavailable for the poll too when the store cannot be reached', async () => {
    const client = createDynamoDBClient(
      { ...process.env, DYNAMODB_ENDPOINT: `http://127.0.0.1:${await freePort()}` },
      { maxAttempts: 1 },
    );
    const runtime = new ToolRuntime({ client, tableName: tableName('idempotency') });

    const poll = runtime.lookup('send_note', identity(), 'k1');

    await expect(poll).rejects.toMatchObject({ code: 'unavailable' });
    client.destroy();
  });
});

describe('receipts that break the contract', () => {
  it.each([
    ['a Date', { at: new Date(0) }],
    ['NaN', { n: Number.NaN }],
    ['Infinity', { n: Number.POSITIVE_INFINITY }],
    ['undefined', { u: undefined }],
    ['a Map', { m: new Map() }],
    ['a BigInt', { b: BigInt(1) }],
    ['an array at the top', ['a']],
    [`more than ${MAX_RECEIPT_BYTES} bytes`, { blob: 'x'.repeat(MAX_RECEIPT_BYTES) }],
  ])(
    'a receipt holding %s is an internal error stored as the outcome: the retry gets it without a second run',
    async (_label, receipt) => {
      const caller = identity();
      const { tool, execute } = noteTool('send_note', async () => ({ receipt: receipt as never, replayed: false }));

      const result = await world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
      const again = await world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
      const poll = world.runtime.lookup('send_note', caller, 'k1');

      // The call's stored outcome (idempotent: false when stored, true on its replays), not a refusal.
      expect(result).toEqual({ ok: false, idempotent: false, error: { code: 'internal', message: 'internal error' } });
      // The side effect ran once; releasing the claim would have let the retry run it again.
      expect(again).toEqual({ ...result, idempotent: true });
      expect(execute).toHaveBeenCalledTimes(1);
      await expect(poll).rejects.toMatchObject({ code: 'internal' });
      expect(await world.idempotencyRecordKeys(caller.tenant)).toHaveLength(1);
    },
  );

  it('never leaks an unexpected error to the caller', async () => {
    const { tool } = noteTool('send_note', async () => {
      throw new Error('connect ECONNREFUSED 10.1.2.3:5432 password=hunter2');
    });

    const result = await world.runtime.invoke(tool, identity(), { idempotency_key: 'k1', text: 'hi' }, deadline());

    expect(result).toEqual({ ok: false, error: { code: 'internal', message: 'internal error' } });
  });
});

describe('guards against a runtime that would not be idempotent', () => {
  afterEach(() => {
    delete process.env.POWERTOOLS_IDEMPOTENCY_DISABLED;
  });

  it('refuses to run writes when POWERTOOLS_IDEMPOTENCY_DISABLED is set', async () => {
    process.env.POWERTOOLS_IDEMPOTENCY_DISABLED = 'true';
    const { tool, execute } = noteTool();

    const result = await world.runtime.invoke(tool, identity(), { idempotency_key: 'k1', text: 'hi' }, deadline());

    expect(result).toMatchObject({ ok: false, error: { code: 'internal' } });
    expect(execute).not.toHaveBeenCalled();
  });

  it.each([
    ['no time left', 0, 'unavailable'],
    ['a negative deadline', -5, 'unavailable'],
    ['a deadline beyond the TTL', 25 * 60 * 60 * 1000, 'internal'],
  ])('refuses a call with %s, so no lock can outlive its record or never expire', async (_label, remaining, code) => {
    const { tool, execute } = noteTool();

    const result = await world.runtime.invoke(
      tool,
      identity(),
      { idempotency_key: 'k1', text: 'hi' },
      { getRemainingTimeInMillis: () => remaining },
    );

    // No time left is the caller's to retry (`unavailable`); a deadline past the TTL is a deployment mistake.
    expect(result).toMatchObject({ ok: false, error: { code } });
    expect(execute).not.toHaveBeenCalled();
  });
});

describe('a provider that says the same key is still in use', () => {
  it('answers pending (not an error), keeps the claim pollable, and the retry after retry_after_ms runs', async () => {
    const caller = identity();
    let busy = true;
    const { tool, execute } = noteTool('send_note', async (args) => {
      if (busy) throw new InFlightError('the provider is still processing this key', 400);
      return { receipt: { text: args.text }, replayed: true };
    });

    const first = await world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    const polled = await world.runtime.lookup('send_note', caller, 'k1');
    // Asked at once, without attaching: an attached call would wait out the park (400 ms) and run it then.
    const unattached = world.idempotencyRuntime({ attach: { maxWaitMs: 0 } });
    const tooSoon = await unattached.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    busy = false;
    advanceClock(500);
    const retry = await world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());

    expect(first).toEqual({ ok: false, status: 'pending', key: 'k1', retry_after_ms: expect.any(Number) });
    expect(first.ok === false && 'status' in first && first.retry_after_ms).toBeGreaterThanOrEqual(100);
    expect(polled).toEqual({ status: 'pending', retryAfterMs: expect.any(Number) });
    expect(tooSoon).toMatchObject({ ok: false, status: 'pending' });
    expect(retry).toEqual({ ok: true, idempotent: true, key: 'k1', receipt: { text: 'hi' } });
    expect(execute).toHaveBeenCalledTimes(2);
  });
});
