// Rule 1 (docs/state-machine.md): a record whose effect may have happened is never deleted.
// Rule 4 (docs/state-machine.md): every `pending` is pollable — but a first attempt's released key polls as never used.
import type { Logger } from '@aws-lambda-powertools/logger';
import { type AttributeValue, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import * as z from 'zod/mini';
import { InFlightError, NotFoundError } from '../../lib/idempotency';
import type { CallOutcome, ToolRuntime } from '../../lib/idempotency/runtime';
import { defineTool } from '../../lib/idempotency/tool';
import { beforeNext, throttled } from '../helpers/intercept';
import { isIntentWriteOf } from '../helpers/no-effect';
import { createProtocolWorld, deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { gate, noteTool } from '../helpers/tools';

/**
 * How an attempt ends after its claim (attempt.ts): a dedupe window's holder answering a fresh key, the
 * pending answer while that holder runs, and a first attempt's business error whose release — of the
 * intent, then of the record — fails in the store.
 */
let world: ProtocolWorld;
let runtime: ToolRuntime;
const outcomes: CallOutcome[] = [];
const logger = { error: jest.fn(), warn: jest.fn() };
beforeAll(() => {
  world = createProtocolWorld();
  runtime = world.idempotencyRuntime({
    onOutcome: (outcome) => void outcomes.push(outcome),
    logger: logger as unknown as Logger,
  });
});
afterAll(() => world.destroy());
beforeEach(() => {
  outcomes.length = 0;
  logger.error.mockClear();
  logger.warn.mockClear();
});
afterEach(() => jest.restoreAllMocks());

const WINDOW_SECONDS = 600;

/** Fails the next release of a window's intent (an UpdateItem that removes its holder) with a throttling error, once. */
function failNextIntentRelease(): void {
  beforeNext(
    world.client,
    'UpdateItemCommand',
    () => {
      throw throttled();
    },
    (input) => isIntentWriteOf('release', 'UpdateItemCommand', input),
  );
}

/** Fails the next DeleteItem whose key matches `key` with a throttling error, once. */
function failNextDelete(key: RegExp): void {
  beforeNext(
    world.client,
    'DeleteItemCommand',
    () => {
      throw throttled();
    },
    (input) => key.test((input as { Key?: { id?: { S?: string } } }).Key?.id?.S ?? ''),
  );
}

async function recordOf(tenant: string): Promise<Record<string, AttributeValue> | undefined> {
  const [record] = (await world.idempotencyRecordKeys(tenant)).filter((item) => !item.id.includes('#intent#'));
  if (!record) return undefined;
  const { Item } = await world.client.send(
    new GetItemCommand({
      TableName: world.idempotencyTable.tableName,
      Key: { id: { S: record.id } },
      ConsistentRead: true,
    }),
  );
  return Item;
}

describe('a dedupe window’s holder', () => {
  it('answers a fresh key with its outcome: a replay the outcome names as the dedupe window’s', async () => {
    const caller = identity();
    const { tool } = noteTool('send_note', undefined, { dedupeWindowSeconds: WINDOW_SECONDS });

    await runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    const fresh = await runtime.invoke(tool, caller, { idempotency_key: 'k2', text: 'hi' }, deadline());

    expect(fresh).toMatchObject({ ok: true, idempotent: true, key: 'k2' });
    expect(outcomes.map((outcome) => [outcome.outcome, outcome.replay])).toEqual([
      ['executed', undefined],
      ['replayed', 'dedupe_window'],
    ]);
  });

  it('still running: pending, asked again no later than the holder’s lock ends', async () => {
    const caller = identity();
    const held = gate();
    const started = gate();
    const { tool } = noteTool(
      'send_note',
      async () => {
        started.open();
        await held.opened;
        return { receipt: { ok: 1 }, replayed: false };
      },
      { dedupeWindowSeconds: WINDOW_SECONDS },
    );
    // The holder's lock ends with its deadline, 700 ms from now: sooner than pending's longest wait (1 s).
    const holder = runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline(700));
    await started.opened; // the first call holds its claim and runs

    const fresh = await runtime.invoke(tool, caller, { idempotency_key: 'k2', text: 'hi' }, deadline());
    held.open();
    await holder;

    expect(fresh).toMatchObject({ ok: false, status: 'pending', key: 'k2' });
    expect((fresh as { retry_after_ms: number }).retry_after_ms).toBeLessThan(700);
  });
});

describe('a dedupe window’s holder whose own outcome was a replay', () => {
  it('answers a fresh key’s call (never a runner of the intent) that replay: nothing run, no key fixed (review 13)', async () => {
    // The holder's tool found its effect already there (replayed): an earlier attempt of one of the intent's
    // runners made it. A fresh key never ran under the intent's key, so the effect is not its own.
    const caller = identity();
    const { tool, execute } = noteTool('send_note', async () => ({ receipt: { note: 'n1' }, replayed: true }), {
      dedupeWindowSeconds: WINDOW_SECONDS,
    });

    const holder = await runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    const fresh = await runtime.invoke(tool, caller, { idempotency_key: 'k2', text: 'hi' }, deadline());

    expect(holder).toMatchObject({ ok: true, idempotent: true });
    expect(fresh).toMatchObject({ ok: true, idempotent: true, key: 'k2', receipt: { note: 'n1' } });
    expect(execute).toHaveBeenCalledTimes(1);
    const records = (await world.idempotencyRecordKeys(caller.tenant)).filter((item) => !item.id.includes('#intent#'));
    const fixed = await Promise.all(
      records.map(async ({ id }) => {
        const { Item } = await world.client.send(
          new GetItemCommand({
            TableName: world.idempotencyTable.tableName,
            Key: { id: { S: id } },
            ConsistentRead: true,
          }),
        );
        return Item?.downstream_key?.S;
      }),
    );
    expect(fixed.filter((key) => key !== undefined)).toEqual([]);
  });
});

describe('a first attempt’s business error', () => {
  it('releases the intent it created, then its record: a corrected call runs', async () => {
    const caller = identity();
    let refuse = true;
    const { tool, execute } = noteTool(
      'send_note',
      async () => {
        if (refuse) throw new NotFoundError('no such recipient');
        return { receipt: { ok: 1 }, replayed: false };
      },
      { dedupeWindowSeconds: WINDOW_SECONDS },
    );

    const refused = await runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    refuse = false;
    const corrected = await runtime.invoke(tool, caller, { idempotency_key: 'k2', text: 'hi' }, deadline());

    expect(refused).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(corrected).toMatchObject({ ok: true, idempotent: false });
    expect(execute).toHaveBeenCalledTimes(2);
  });

  it('whose intent release fails: unavailable, and the record is kept, parked as having made no effect — never released under an intent that names it (review 7, R7-1)', async () => {
    const caller = identity();
    const { tool } = noteTool(
      'send_note',
      async () => {
        throw new NotFoundError('no such recipient');
      },
      { dedupeWindowSeconds: WINDOW_SECONDS },
    );
    failNextIntentRelease();

    const answer = await runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());

    expect(answer).toMatchObject({ ok: false, error: { code: 'unavailable' } });
    expect(await recordOf(caller.tenant)).toMatchObject({
      status: { S: 'INPROGRESS' },
      unrun_attempts: { N: '1' },
      queued_attempts: { N: '0' },
    });
  });

  it('whose record release fails: unavailable (the store), the record left to its lock', async () => {
    const caller = identity();
    const { tool } = noteTool('send_note', async () => {
      throw new NotFoundError('no such recipient');
    });
    failNextDelete(/^send_note#/);

    const answer = await runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());

    expect(answer).toEqual({
      ok: false,
      error: { code: 'unavailable', message: 'the idempotency store is unavailable; retry later' },
    });
    expect(await recordOf(caller.tenant)).toMatchObject({ status: { S: 'INPROGRESS' } });
  });
});

describe('a tool’s own answer', () => {
  it('found its effect already made (replayed): a replay, named by the key that found it', async () => {
    const caller = identity();
    const { tool } = noteTool('send_note', async () => ({ receipt: { note: 'n1' }, replayed: true }));
    const closeTicket = defineTool({
      name: 'close_ticket',
      description: 'Test tool: closes a ticket once.',
      args: z.strictObject({ ticket_id: z.string() }),
      annotations: { destructiveHint: false, openWorldHint: false },
      naturalKey: ['ticket_id'],
      execute: async () => ({ receipt: { closed: true }, replayed: true }),
    });

    await runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    await runtime.invoke(closeTicket, caller, { idempotency_key: 'k2', ticket_id: 'T-1' }, deadline());

    expect(outcomes.map((outcome) => [outcome.outcome, outcome.replay])).toEqual([
      ['replayed', 'client_key'],
      ['replayed', 'natural_key'],
    ]);
  });

  it('a receipt that cannot be stored, after the effect ran: internal, stored as the outcome, logged', async () => {
    const caller = identity();
    const { tool, execute } = noteTool('send_note', async () => ({
      receipt: { at: new Date(0) } as never,
      replayed: false,
    }));

    const answer = await runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    const retry = await runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());

    expect(answer).toEqual({ ok: false, idempotent: false, error: { code: 'internal', message: 'internal error' } });
    expect(retry).toEqual({ ok: false, idempotent: true, error: { code: 'internal', message: 'internal error' } });
    expect(execute).toHaveBeenCalledTimes(1);
    expect(logger.error).toHaveBeenCalledWith('tool call failed', {
      tool: 'send_note',
      code: 'internal',
      error: expect.objectContaining({ message: expect.stringMatching(/not plain JSON/) }),
    });
  });

  it('a receipt that cannot be stored, with no logger: stored as the outcome all the same (never run twice)', async () => {
    const quiet = world.idempotencyRuntime();
    const { tool, execute } = noteTool('send_note', async () => ({
      receipt: { at: new Date(0) } as never,
      replayed: false,
    }));

    await quiet.invoke(tool, identity(), { idempotency_key: 'k1', text: 'hi' }, deadline());
    const caller = identity();
    const first = await quiet.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    const retry = await quiet.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());

    expect(first).toMatchObject({ ok: false, idempotent: false, error: { code: 'internal' } });
    expect(retry).toMatchObject({ ok: false, idempotent: true, error: { code: 'internal' } });
    expect(execute).toHaveBeenCalledTimes(2);
  });

  it('a business error on a later attempt: the call’s stored outcome (an earlier attempt may have made the effect)', async () => {
    const caller = identity();
    let attempt = 0;
    const { tool } = noteTool('send_note', async () => {
      attempt += 1;
      if (attempt === 1) throw Object.assign(new Error('timed out'), { name: 'TimeoutError' });
      throw new NotFoundError('no such recipient');
    });
    const first = await runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    const later = Date.now() + 1_000;
    jest.spyOn(Date, 'now').mockImplementation(() => later);

    const second = await runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    const third = await runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());

    expect(first).toMatchObject({ ok: false, error: { code: 'unavailable' } });
    expect(second).toEqual({
      ok: false,
      idempotent: false,
      error: { code: 'not_found', message: 'no such recipient' },
    });
    expect(third).toEqual({ ok: false, idempotent: true, error: { code: 'not_found', message: 'no such recipient' } });
    expect(attempt).toBe(2);
  });

  it('the provider still running the key: pending for as long as it says, the record parked until then', async () => {
    const caller = identity();
    const { tool } = noteTool('send_note', async () => {
      throw new InFlightError('the provider is still running this key', 300);
    });

    const answer = await runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());

    expect(answer).toEqual({ ok: false, status: 'pending', key: 'k1', retry_after_ms: 300 });
    const record = await recordOf(caller.tenant);
    expect(Number(record?.in_progress_expiration?.N)).toBeGreaterThan(Date.now() + 150);
  });

  it('a transient failure whose park fails in the store: unavailable, the record left to its lock', async () => {
    const caller = identity();
    const { tool } = noteTool('send_note', async () => {
      throw Object.assign(new Error('timed out'), { name: 'TimeoutError' });
    });
    beforeNext(world.client, 'UpdateItemCommand', () => {
      throw throttled();
    });

    const answer = await runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());

    expect(answer).toEqual({
      ok: false,
      error: { code: 'unavailable', message: 'the idempotency store is unavailable; retry later' },
    });
    expect(await recordOf(caller.tenant)).toMatchObject({ status: { S: 'INPROGRESS' } });
  });

  it('a transient failure whose park finds the claim taken over: answered without this attempt’s view of the call', async () => {
    const caller = identity();
    const { tool } = noteTool('send_note', async () => {
      throw Object.assign(new Error('timed out'), { name: 'TimeoutError' });
    });
    beforeNext(world.client, 'UpdateItemCommand', (input) =>
      world.client.send(
        new UpdateItemCommand({
          TableName: world.idempotencyTable.tableName,
          Key: (input as { Key: Record<string, AttributeValue> }).Key,
          UpdateExpression: 'SET claim_id = :retry',
          ExpressionAttributeValues: { ':retry': { S: 'a-retry' } },
        }),
      ),
    );

    const answered = await runtime.invokeForCall(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());

    expect(answered.result).toMatchObject({ ok: false, error: { code: 'unavailable' } });
    // Its state is the retry's now, not this attempt's to tell (an MCP task of this request shows none).
    expect(answered).not.toHaveProperty('call');
  });
});

describe('Rule 1 (docs/state-machine.md): a record whose effect may have happened is never deleted', () => {
  it.each([
    {
      kind: 'a transient error',
      failure: () => Object.assign(new Error('timed out'), { name: 'TimeoutError' }),
      polled: 'abandoned',
    },
    { kind: 'a bug', failure: () => new TypeError('cannot read properties of undefined'), polled: 'abandoned' },
    {
      kind: 'a provider still running the key',
      failure: () => new InFlightError('the provider is still running this key', 60_000),
      polled: 'pending',
    },
  ])('after the effect, $kind keeps the record, polled $polled', async ({ failure, polled }) => {
    const caller = identity();
    let attempts = 0;
    const { tool } = noteTool('send_note', async (args) => {
      attempts += 1;
      if (attempts === 1) throw failure(); // the effect may have happened before it failed
      return { receipt: { text: args.text }, replayed: true }; // the retry finds it
    });

    await runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    const kept = await recordOf(caller.tenant);
    const poll = await runtime.lookup('send_note', caller, 'k1');

    expect(kept).toMatchObject({ status: { S: 'INPROGRESS' }, attempt: { N: '1' } });
    expect(poll).toMatchObject({ status: polled });
  });

  it('only a business error on the first attempt releases the claim: the key polls as never used', async () => {
    const caller = identity();
    const { tool } = noteTool('send_note', async () => {
      throw new NotFoundError('no such recipient');
    });

    const answer = await runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());

    expect(answer).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(await recordOf(caller.tenant)).toBeUndefined();
    expect(await runtime.lookup('send_note', caller, 'k1')).toBeUndefined();
  });
});
