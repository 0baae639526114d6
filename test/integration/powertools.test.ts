// Rule 1 (docs/state-machine.md): a record Powertools' handler left in progress is never re-run by retrysafe.
// Rule 2 (docs/state-machine.md): it names no claim, so nothing takes it over.
// Rule 6 (docs/state-machine.md): erase tombstones a completed one and keeps one in flight; a tenant's erase
// cannot tell whose a Powertools record is (no tenant), writes none, and is not complete while one is there.
// docs/design.md, "Powertools and retrysafe on one table": Powertools' handler and retrysafe on one table.
import { randomUUID } from 'node:crypto';
import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyValidationError,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { Logger } from '@aws-lambda-powertools/logger';
import {
  type AttributeValue,
  CreateTableCommand,
  DeleteTableCommand,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { eraseTenant } from '../../lib/admin/erase-tenant';
import { nextAfterRead } from '../../lib/api/next-step';
import { Completer, type Recheck } from '../../lib/idempotency/completer';
import { recordKeyOf, validationOf } from '../../lib/idempotency/derivation';
import { INTERNAL_MESSAGE } from '../../lib/idempotency/errors';
import { fingerprint } from '../../lib/idempotency/fingerprint';
import { powertoolsResponseHook } from '../../lib/idempotency/powertools';
import { claim } from '../../lib/idempotency/protocol/claim-writes';
import { eraseItem } from '../../lib/idempotency/protocol/erase';
import { encodeCall } from '../../lib/idempotency/protocol/record';
import type { JsonObject } from '../../lib/idempotency/types';
import { createToolRuntime } from '../../lib/lambda/runtime';
import { readOperation } from '../../lib/reads/operation';
import { createTableInput } from '../../lib/store/create-tables';
import { IDEMPOTENCY_TABLE } from '../../lib/store/tables';
import { capturedLogger } from '../helpers/captured-logger';
import { createProtocolWorld, deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { gate, noteTool } from '../helpers/tools';

/**
 * Powertools 2.35's own `makeIdempotent` and `DynamoDBPersistenceLayer`, and retrysafe's runtime, over ONE
 * DynamoDB Local table, in both directions. Powertools is configured as docs/design.md says (the record key
 * and validation hash of retrysafe's derivation: `scope` and `fingerprint`, sha256, the tool as key prefix),
 * and is handed the event `{ scope: [tenant, user, client key], fingerprint }`. On an idempotency table of
 * its own: Powertools' records carry no tenant, and every tenant's erase on a shared table would find them
 * (rule 6) — another suite's erase would wait on this one's calls.
 */
const TABLE = `powertools-${randomUUID().slice(0, 8)}`;
let world: ProtocolWorld;
beforeAll(async () => {
  process.env[IDEMPOTENCY_TABLE.envVar] = TABLE;
  world = createProtocolWorld();
  await world.client.send(new CreateTableCommand(createTableInput(IDEMPOTENCY_TABLE, TABLE)));
});
afterAll(async () => {
  await world.client.send(new DeleteTableCommand({ TableName: TABLE }));
  world.destroy();
});

const TTL_SECONDS = 3_600;
const TOOL = 'send_note';

/** A call as both sides see it: retrysafe's input, Powertools' event, and the record key they share. */
function callOf(text = 'hello') {
  const caller = identity();
  const key = `k-${randomUUID()}`;
  const args = { text };
  return {
    caller,
    key,
    args,
    input: { idempotency_key: key, ...args },
    event: { scope: [caller.tenant, caller.user, key], fingerprint: fingerprint(args) },
    recordKey: recordKeyOf(TOOL, [caller.tenant, caller.user, key]),
  };
}

/** Powertools' handler around `fn`, on retrysafe's table, configured with retrysafe's derivation. */
function powertools<R>(fn: (event: unknown) => Promise<R>, options: { responseHook?: boolean } = {}) {
  const persistenceStore = new DynamoDBPersistenceLayer({
    tableName: world.idempotencyTable.tableName,
    awsSdkV3Client: world.client,
  });
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'scope',
    payloadValidationJmesPath: 'fingerprint',
    hashFunction: 'sha256',
    throwOnNoIdempotencyKey: true,
    expiresAfterSeconds: TTL_SECONDS,
    ...(options.responseHook ? { responseHook: powertoolsResponseHook } : {}),
  });
  const run = jest.fn(async (event: unknown, _context: { getRemainingTimeInMillis(): number }) => fn(event));
  const handler = makeIdempotent(run, { persistenceStore, config, keyPrefix: TOOL });
  return { handler, run };
}

/** A Lambda context whose invocation has `ms` left: Powertools' lock (`in_progress_expiration`) ends then. */
function context(ms = 10_000) {
  return deadline(ms);
}

async function itemOf(recordKey: string): Promise<Record<string, unknown> | undefined> {
  const { Item } = await world.client.send(
    new GetItemCommand({
      TableName: world.idempotencyTable.tableName,
      Key: { id: { S: recordKey } },
      ConsistentRead: true,
    }),
  );
  return Item && unmarshall(Item);
}

const waitMs = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('retrysafe reads a record Powertools’ handler wrote', () => {
  it('completed: replays its result as the receipt, idempotent, without running the tool', async () => {
    // prepare
    const call = callOf();
    const { tool, execute } = noteTool(TOOL, undefined, { ttlSeconds: TTL_SECONDS });
    const { handler } = powertools(async () => ({ note_id: 'note_by_powertools', text: 'hello' }));
    await handler(call.event, context());

    // act
    const replay = await world.runtime.invoke(tool, call.caller, call.input, deadline());
    const poll = await world.runtime.lookup(TOOL, call.caller, call.key);

    // assess
    expect(replay).toEqual({
      ok: true,
      idempotent: true,
      key: call.key,
      receipt: { note_id: 'note_by_powertools', text: 'hello' },
    });
    expect(poll).toEqual({ status: 'completed', receipt: { note_id: 'note_by_powertools', text: 'hello' } });
    expect(execute).not.toHaveBeenCalled();
  });

  it('completed with a result that is not a JSON object: `internal`, never a second run', async () => {
    // prepare
    const call = callOf();
    const { tool, execute } = noteTool(TOOL, undefined, { ttlSeconds: TTL_SECONDS });
    const { handler } = powertools(async () => 'sent');
    await handler(call.event, context());

    // act
    const replay = await world.runtime.invoke(tool, call.caller, call.input, deadline());

    // assess
    expect(replay).toMatchObject({ ok: false, idempotent: true, error: { code: 'internal' } });
    expect(execute).not.toHaveBeenCalled();
  });

  it('completed, asked with other arguments under its key: `conflict`', async () => {
    // prepare
    const call = callOf('hello');
    const { tool, execute } = noteTool(TOOL, undefined, { ttlSeconds: TTL_SECONDS });
    const { handler } = powertools(async () => ({ note_id: 'note_by_powertools' }));
    await handler(call.event, context());

    // act
    const other = await world.runtime.invoke(tool, call.caller, { ...call.input, text: 'other' }, deadline());

    // assess
    expect(other).toMatchObject({ ok: false, error: { code: 'conflict' } });
    expect(execute).not.toHaveBeenCalled();
  });

  it('in flight: `pending` until its lock ends, and its poll says pending', async () => {
    // prepare: Powertools' handler runs (held open) with 5 s left
    const call = callOf();
    const { tool, execute } = noteTool(TOOL, undefined, { ttlSeconds: TTL_SECONDS });
    const held = gate();
    const { handler, run } = powertools(async () => {
      await held.opened;
      return { note_id: 'note_by_powertools' };
    });
    const running = handler(call.event, context(5_000));
    while (run.mock.calls.length === 0) await waitMs(10);
    const lockEndsMs = (await itemOf(call.recordKey))?.in_progress_expiration as number;

    // act
    const { result: duplicate, call: pendingOn } = await world
      .idempotencyRuntime({ attach: { maxWaitMs: 0 } })
      .invokeForCall(tool, call.caller, call.input, deadline());
    const poll = await world.runtime.lookup(TOOL, call.caller, call.key);
    held.open();
    await running;

    // assess
    expect(lockEndsMs).toBeGreaterThan(Date.now());
    expect(duplicate).toMatchObject({ ok: false, status: 'pending', key: call.key });
    expect(pendingOn).toMatchObject({ lockEndsMs, writtenBy: 'powertools' });
    expect(poll).toMatchObject({ status: 'pending' });
    expect(execute).not.toHaveBeenCalled();
  });

  it('in flight after its lock ended (its worker died): never run by retrysafe; `pending` until its TTL, polled `stalled`', async () => {
    // prepare: Powertools' handler claims with 100 ms left, and its worker never comes back
    const call = callOf();
    const { tool, execute } = noteTool(TOOL, undefined, { ttlSeconds: TTL_SECONDS });
    const dead = gate();
    const { handler, run } = powertools(async () => {
      await dead.opened;
      return { note_id: 'late' };
    });
    const dying = handler(call.event, context(100));
    while (run.mock.calls.length === 0) await waitMs(10);
    await waitMs(200);
    const before = await itemOf(call.recordKey);

    // act
    const resend = await world.runtime.invoke(tool, call.caller, call.input, deadline());
    const poll = await world.runtime.lookup(TOOL, call.caller, call.key);
    const after = await itemOf(call.recordKey);
    dead.open();
    await dying;

    // assess
    const untilTtlMs = (before?.expiration as number) * 1000 - Date.now();
    expect(resend).toMatchObject({ ok: false, status: 'pending', key: call.key });
    expect((resend as { retry_after_ms: number }).retry_after_ms).toBeGreaterThan(untilTtlMs - 5_000);
    // Polled with the same wait as the resend (`stalledChangesAtMs`): nothing moves it before its TTL.
    expect(poll).toEqual({
      status: 'stalled',
      reason: 'powertools',
      retryAfterMs: expect.any(Number),
      runsAnew: true,
    });
    expect((poll as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(untilTtlMs - 5_000);
    expect(after).toEqual(before);
    expect(execute).not.toHaveBeenCalled();
  });
});

/**
 * What Powertools' handler stores, put as it is: its attributes only (no call instance, attempt or claim),
 * and `extra`'s (retrysafe's own, for a record one of its calls wrote).
 */
async function putPowertoolsItem(
  call: ReturnType<typeof callOf>,
  {
    status,
    expiresAtS,
    lockEndsMs,
    data,
    extra = {},
  }: {
    status: string;
    expiresAtS?: number;
    lockEndsMs?: number;
    data?: AttributeValue;
    extra?: Record<string, AttributeValue>;
  },
) {
  await world.client.send(
    new PutItemCommand({
      TableName: world.idempotencyTable.tableName,
      Item: {
        id: { S: call.recordKey },
        status: { S: status },
        expiration: { N: String(expiresAtS ?? Math.round(Date.now() / 1000) + TTL_SECONDS) },
        ...(lockEndsMs === undefined ? {} : { in_progress_expiration: { N: String(lockEndsMs) } }),
        validation: { S: validationOf(call.event.fingerprint) },
        ...(data === undefined ? {} : { data }),
        ...extra,
      },
    }),
  );
}

/** Text that must reach no answer and no log line: what a stored result held. */
const SECRET = 'secret-held-by-the-result';

describe('a Powertools record with odd content: a closed-set answer, nothing run, nothing of it shown', () => {
  /** The runtime as an entry point builds it (its logger and call log), its log lines captured. */
  async function invokeLogged(call: ReturnType<typeof callOf>, tool: ReturnType<typeof noteTool>['tool']) {
    const { logger, lines, restore } = capturedLogger();
    try {
      const runtime = createToolRuntime({ client: world.client, logger });
      const answer = await runtime.invoke(tool, call.caller, call.input, deadline());
      const poll = await runtime.lookup(TOOL, call.caller, call.key).then(
        (operation) => operation,
        (error: unknown) => error,
      );
      return { answer, poll, lines };
    } finally {
      restore();
    }
  }

  it.each<[string, AttributeValue | undefined]>([
    ['no result (its handler returned nothing)', undefined],
    ['a string', { S: SECRET }],
    ['a list', { L: [{ S: SECRET }] }],
    ['a string set', { SS: [SECRET] }],
    ['bytes', { B: new TextEncoder().encode(SECRET) }],
    ['a map holding a set', { M: { note: { SS: [SECRET] } } }],
    ['a map holding a number beyond a double', { M: { note: { S: SECRET }, amount: { N: '1'.repeat(30) } } }],
    ['a map of more than 32 KB', { M: { note: { S: SECRET.repeat(2_000) } } }],
  ])('completed with %s: `internal` replayed, never a second run', async (_what, data) => {
    // prepare
    const call = callOf();
    const { tool, execute } = noteTool(TOOL, undefined, { ttlSeconds: TTL_SECONDS });
    await putPowertoolsItem(call, { status: 'COMPLETED', lockEndsMs: Date.now(), data });
    const before = await itemOf(call.recordKey);

    // act
    const { answer, poll, lines } = await invokeLogged(call, tool);

    // assess
    expect(answer).toEqual({
      ok: false,
      idempotent: true,
      error: { code: 'internal', message: INTERNAL_MESSAGE },
    });
    expect(poll).toMatchObject({ code: 'internal', message: INTERNAL_MESSAGE });
    expect(execute).not.toHaveBeenCalled();
    expect(await itemOf(call.recordKey)).toEqual(before);
    expect(lines.length).toBeGreaterThan(0); // the call's line, at least
    expect(JSON.stringify(lines)).not.toContain(SECRET);
  });

  it('completed by Powertools’ own handler with no result: `internal` replayed, never a second run', async () => {
    // prepare
    const call = callOf();
    const { tool, execute } = noteTool(TOOL, undefined, { ttlSeconds: TTL_SECONDS });
    const { handler } = powertools(async () => undefined);
    await handler(call.event, context());

    // act
    const { answer } = await invokeLogged(call, tool);

    // assess
    expect((await itemOf(call.recordKey))?.status).toBe('COMPLETED');
    expect(answer).toMatchObject({
      ok: false,
      idempotent: true,
      error: { code: 'internal', message: INTERNAL_MESSAGE },
    });
    expect(execute).not.toHaveBeenCalled();
  });

  it.each(['EXPIRED', 'DONE', ''])(
    'with a status neither writes (%j): `internal`, not a call record; polled as none; nothing run or changed',
    async (status) => {
      // prepare
      const call = callOf();
      const { tool, execute } = noteTool(TOOL, undefined, { ttlSeconds: TTL_SECONDS });
      await putPowertoolsItem(call, { status, lockEndsMs: Date.now() + 60_000, data: { M: { note: { S: SECRET } } } });
      const before = await itemOf(call.recordKey);

      // act
      const { answer, poll, lines } = await invokeLogged(call, tool);

      // assess
      expect(answer).toEqual({
        ok: false,
        error: { code: 'internal', message: INTERNAL_MESSAGE },
      });
      expect(poll).toBeUndefined();
      expect(execute).not.toHaveBeenCalled();
      expect(await itemOf(call.recordKey)).toEqual(before);
      expect(lines.length).toBeGreaterThan(0); // the call's line, at least
      expect(JSON.stringify(lines)).not.toContain(SECRET);
    },
  );

  it.each(['COMPLETED', 'INPROGRESS'])(
    '%s past its TTL: gone — polled as none, and the call claims the key anew and runs',
    async (status) => {
      // prepare
      const call = callOf();
      const { tool, execute } = noteTool(TOOL, undefined, { ttlSeconds: TTL_SECONDS });
      const expiresAtS = Math.floor(Date.now() / 1000) - 1;
      await putPowertoolsItem(call, {
        status,
        expiresAtS,
        lockEndsMs: Date.now() - 5_000,
        data: { M: { n: { S: 'x' } } },
      });

      // act
      const poll = await world.runtime.lookup(TOOL, call.caller, call.key);
      const answer = await world.runtime.invoke(tool, call.caller, call.input, deadline());

      // assess
      expect(poll).toBeUndefined();
      expect(answer).toMatchObject({ ok: true, idempotent: false, key: call.key });
      expect(execute).toHaveBeenCalledTimes(1);
      expect(await itemOf(call.recordKey)).toMatchObject({ status: 'COMPLETED', attempt: 1 });
    },
  );

  it('in progress with no lock (Powertools’ handler without a Lambda context): live until its TTL, `pending`', async () => {
    // prepare
    const call = callOf();
    const { tool, execute } = noteTool(TOOL, undefined, { ttlSeconds: TTL_SECONDS });
    await putPowertoolsItem(call, { status: 'INPROGRESS' });

    // act
    const { result: answer, call: pendingOn } = await world
      .idempotencyRuntime({ attach: { maxWaitMs: 0 } })
      .invokeForCall(tool, call.caller, call.input, deadline());
    const poll = await world.runtime.lookup(TOOL, call.caller, call.key);

    // assess
    const item = await itemOf(call.recordKey);
    expect(answer).toMatchObject({ ok: false, status: 'pending', key: call.key });
    expect(pendingOn).toMatchObject({ lockEndsMs: (item?.expiration as number) * 1000, writtenBy: 'powertools' });
    expect(poll).toMatchObject({ status: 'pending' });
    expect(execute).not.toHaveBeenCalled();
  });
});

describe('the completer, on a record Powertools’ handler wrote', () => {
  it.each([
    ['in flight', 5_000],
    ['whose worker died (its lock ended)', 100],
  ])('%s: schedules no recheck and logs nothing — it has no claim to resume', async (_what, lockMs) => {
    // prepare: its stream image, as the table's stream carries it
    const call = callOf();
    const { tool, execute } = noteTool(TOOL, undefined, { ttlSeconds: TTL_SECONDS });
    const held = gate();
    const { handler, run } = powertools(async () => {
      await held.opened;
      return { note_id: 'note_by_powertools' };
    });
    const running = handler(call.event, context(lockMs));
    while (run.mock.calls.length === 0) await waitMs(10);
    await waitMs(lockMs === 100 ? 200 : 0);
    const item = (await itemOf(call.recordKey))!;
    const sends: Recheck[][] = [];
    const logger = { error: jest.fn(), warn: jest.fn(), info: jest.fn() };
    const completer = new Completer({
      client: world.client,
      runtime: world.idempotencyRuntime(),
      tools: [tool],
      queue: { send: async (rechecks) => void sends.push([...rechecks]) },
      tableName: world.idempotencyTable.tableName,
      logger: logger as unknown as Logger,
    });

    // act
    const report = await completer.onStream([
      {
        eventName: 'INSERT',
        dynamodb: { Keys: marshall({ id: call.recordKey }), NewImage: marshall(item), SequenceNumber: '1' },
      },
    ]);
    const after = await itemOf(call.recordKey);
    held.open();
    await running;

    // assess
    expect(report).toEqual({ recordsRead: 1, rechecksScheduled: 0 });
    expect(sends).toEqual([]);
    expect(logger.error).not.toHaveBeenCalled();
    expect(logger.warn).not.toHaveBeenCalled();
    expect(after).toEqual(item);
    expect(execute).not.toHaveBeenCalled();
  });
});

describe('erase, on a record Powertools’ handler wrote', () => {
  it('tombstones a completed one: retrysafe then answers `not_found`, and Powertools’ handler refuses it', async () => {
    // prepare
    const call = callOf();
    const { tool, execute } = noteTool(TOOL, undefined, { ttlSeconds: TTL_SECONDS });
    const { handler, run } = powertools(async () => ({ note_id: 'note_by_powertools' }));
    await handler(call.event, context());
    const item = (await itemOf(call.recordKey))!;

    // act
    const erased = await eraseItem(world.idempotencyTable, item);
    const resend = await world.runtime.invoke(tool, call.caller, call.input, deadline());
    // A tombstone has no validation hash: Powertools' handler reads it as other arguments, and runs nothing.
    const powertoolsResend = await handler(call.event, context()).then(
      () => 'ran',
      (error: unknown) => error,
    );

    // assess
    expect(erased).toEqual({ outcome: 'erased' });
    expect((await itemOf(call.recordKey))?.data).toBeUndefined();
    expect(resend).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(powertoolsResend).toBeInstanceOf(IdempotencyValidationError);
    expect(run).toHaveBeenCalledTimes(1);
    expect(execute).not.toHaveBeenCalled();
  });

  it('keeps one in flight and reports it with its lock’s end, its tool unknown (every app table waits)', async () => {
    // prepare
    const call = callOf();
    const held = gate();
    const { handler, run } = powertools(async () => {
      await held.opened;
      return { note_id: 'note_by_powertools' };
    });
    const running = handler(call.event, context(5_000));
    while (run.mock.calls.length === 0) await waitMs(10);
    const item = (await itemOf(call.recordKey))!;

    // act
    const kept = await eraseItem(world.idempotencyTable, item);
    const after = await itemOf(call.recordKey);
    held.open();
    await running;

    // assess
    expect(kept).toEqual({
      outcome: 'in_flight',
      kept: { recordKey: call.recordKey, tool: undefined, state: 'live', changesAtMs: item.in_progress_expiration },
    });
    expect(after).toEqual(item);
  });
  it('keeps one whose lock ended, even erasing the app’s tables: stalled, nothing will move it before its TTL (erase again then)', async () => {
    // prepare: Powertools' handler claims with 100 ms left, and its worker never comes back
    const call = callOf();
    const dead = gate();
    const { handler, run } = powertools(async () => {
      await dead.opened;
      return { note_id: 'late' };
    });
    const dying = handler(call.event, context(100));
    while (run.mock.calls.length === 0) await waitMs(10);
    await waitMs(200);
    const item = (await itemOf(call.recordKey))!;

    // act
    const kept = await eraseItem(world.idempotencyTable, item, { closeStalled: true });
    const after = await itemOf(call.recordKey);
    dead.open();
    await dying;

    // assess
    expect(kept).toEqual({
      outcome: 'in_flight',
      kept: {
        recordKey: call.recordKey,
        tool: undefined,
        state: 'stalled',
        // The first instant every reader counts it expired: a second past its TTL (review 33, F4).
        changesAtMs: (item.expiration as number) * 1000 + 1_000,
      },
    });
    expect(after).toEqual(item);
  });
});

describe('Powertools’ handler reads a record retrysafe wrote', () => {
  it('completed: with `powertoolsResponseHook`, replays the receipt itself, without running', async () => {
    // prepare
    const call = callOf();
    const { tool } = noteTool(TOOL, undefined, { ttlSeconds: TTL_SECONDS });
    const first = await world.runtime.invoke(tool, call.caller, call.input, deadline());
    const hooked = powertools(async () => ({ note_id: 'ran again' }), { responseHook: true });
    const bare = powertools(async () => ({ note_id: 'ran again' }));

    // act
    const replay = await hooked.handler(call.event, context());
    const envelope = await bare.handler(call.event, context());

    // assess
    expect(first).toMatchObject({ ok: true, idempotent: false });
    expect(replay).toEqual((first as { receipt: JsonObject }).receipt);
    expect(envelope).toEqual({ receipt: JSON.stringify((first as { receipt: JsonObject }).receipt), replayed: false });
    expect(hooked.run).not.toHaveBeenCalled();
    expect(bare.run).not.toHaveBeenCalled();
  });

  it('completed with a stored failure: the hook throws it, with its code', async () => {
    // prepare: a later attempt's business error is stored as the call's outcome
    const call = callOf();
    const { handler, run } = powertools(async () => ({ note_id: 'ran again' }), { responseHook: true });
    await putPowertoolsItem(call, {
      status: 'COMPLETED',
      lockEndsMs: Date.now(),
      data: { M: { replayed: { BOOL: false }, failure: { S: 'not_found' }, message: { S: 'no such note' } } },
      extra: { call_id: { S: 'c1' }, attempt: { N: '2' } },
    });

    // act
    const replay = handler(call.event, context());

    // assess
    await expect(replay).rejects.toMatchObject({ code: 'not_found', message: 'no such note' });
    expect(run).not.toHaveBeenCalled();
  });

  it('completed with a receipt that is not an object’s JSON text: not retrysafe’s outcome (`decodeOutcome`), the hook returns it as stored, nothing run', async () => {
    // prepare: a record whose receipt no retrysafe store wrote (canonical JSON text is all it writes). The
    // hook sees the result only, not who wrote it: by the one rule, this is a handler's own result.
    const call = callOf();
    const { handler, run } = powertools(async () => ({ note_id: 'ran again' }), { responseHook: true });
    await putPowertoolsItem(call, {
      status: 'COMPLETED',
      lockEndsMs: Date.now(),
      data: { M: { replayed: { BOOL: false }, receipt: { S: `{${SECRET}` } } },
      extra: { call_id: { S: 'c1' }, attempt: { N: '1' } },
    });

    // act
    const replay = await handler(call.event, context());

    // assess
    expect(replay).toEqual({ replayed: false, receipt: `{${SECRET}` });
    expect(run).not.toHaveBeenCalled();
  });

  it('with other arguments under its key: `IdempotencyValidationError`', async () => {
    // prepare
    const call = callOf('hello');
    const { tool } = noteTool(TOOL, undefined, { ttlSeconds: TTL_SECONDS });
    await world.runtime.invoke(tool, call.caller, call.input, deadline());
    const { handler, run } = powertools(async () => ({ note_id: 'ran again' }), { responseHook: true });

    // act
    const other = handler({ ...call.event, fingerprint: fingerprint({ text: 'other' }) }, context());

    // assess
    await expect(other).rejects.toBeInstanceOf(IdempotencyValidationError);
    expect(run).not.toHaveBeenCalled();
  });

  it('in flight: `IdempotencyAlreadyInProgressError`, without running', async () => {
    // prepare: retrysafe's call runs, held open
    const call = callOf();
    const held = gate();
    const started = gate();
    const { tool } = noteTool(
      TOOL,
      async (args) => {
        started.open();
        await held.opened;
        return { receipt: { note_id: 'note_by_retrysafe', text: args.text }, replayed: false };
      },
      { ttlSeconds: TTL_SECONDS },
    );
    const running = world.runtime.invoke(tool, call.caller, call.input, deadline());
    await started.opened;
    const { handler, run } = powertools(async () => ({ note_id: 'ran again' }), { responseHook: true });

    // act
    const duplicate = handler(call.event, context());

    // assess
    await expect(duplicate).rejects.toBeInstanceOf(IdempotencyAlreadyInProgressError);
    held.open();
    await expect(running).resolves.toMatchObject({ ok: true, idempotent: false });
    expect(run).not.toHaveBeenCalled();
  });

  it('abandoned (its worker died): Powertools’ handler runs it again — the one thing not safe (docs/design.md)', async () => {
    // prepare: a retrysafe claim whose lock ended, its effect maybe made under its downstream key
    const call = callOf();
    const nowMs = Date.now();
    await claim(
      world.idempotencyTable,
      {
        recordKey: call.recordKey,
        tenant: call.caller.tenant,
        tool: TOOL,
        validation: validationOf(call.event.fingerprint),
        expiresAtS: Math.round(nowMs / 1000) + TTL_SECONDS,
        lockEndsMs: nowMs + 50,
        call: encodeCall({ user: call.caller.user, clientKey: call.key, args: call.args }),
      },
      nowMs,
    );
    await waitMs(100);
    const { handler, run } = powertools(async () => ({ note_id: 'ran again' }), { responseHook: true });

    // act
    const rerun = await handler(call.event, context());

    // assess: it ran, and the record is Powertools' now (no call instance, no claim)
    expect(rerun).toEqual({ note_id: 'ran again' });
    expect(run).toHaveBeenCalledTimes(1);
    expect(await itemOf(call.recordKey)).not.toHaveProperty('call_id');
  });
});

describe('Powertools’ handler replays a record it wrote itself, with `powertoolsResponseHook`', () => {
  // The hook sees a stored result, not who stored it: one decoder (`decodeOutcome`) tells retrysafe's
  // outcome from a handler's own result, exactly. A payment function's natural result — a string `receipt`,
  // a boolean `replayed`, more fields — is its own, and replays as it returned it.
  it.each([
    ['a receipt number', { receipt: 'rcpt_42', replayed: false, amount: 100 }],
    ['a receipt that is JSON text', { receipt: '{"id":"r1"}', replayed: false, amount: 100 }],
    ['a failure field of its own', { failure: 'card_declined', replayed: false, retry: true }],
  ])('replays the handler’s own result as it returned it (%s)', async (_case, result) => {
    // prepare
    const call = callOf();
    const { handler, run } = powertools(async () => result, { responseHook: true });
    const first = await handler(call.event, context());

    // act
    const replay = await handler(call.event, context()).catch((error: unknown) => error);

    // assess
    expect(first).toEqual(result);
    expect(replay).toEqual(result);
    expect(run).toHaveBeenCalledTimes(1);
  });

  it('gives the same receipt on both sides: retrysafe’s replay of that record and Powertools’ own', async () => {
    // prepare
    const call = callOf();
    const result = { receipt: '{"id":"r1"}', replayed: false, amount: 100 };
    const { handler } = powertools(async () => result, { responseHook: true });
    await handler(call.event, context());
    const { tool } = noteTool(TOOL, undefined, { ttlSeconds: TTL_SECONDS });

    // act
    const viaRetrysafe = await world.runtime.invoke(tool, call.caller, call.input, deadline());
    const viaPowertools = await handler(call.event, context());

    // assess
    expect(viaRetrysafe).toMatchObject({ ok: true, idempotent: true, receipt: result });
    expect(viaPowertools).toEqual((viaRetrysafe as { receipt: unknown }).receipt);
  });
});

describe('the poll of a call Powertools’ handler left in flight (stalled, reason powertools)', () => {
  // A resend is `pending` for the rest of the TTL, and past it the call runs under retrysafe's downstream
  // key, not the one Powertools' function used — it can act twice: the poll's `next` waits for the TTL
  // (`stalledChangesAtMs`) and never says "it cannot act twice".
  it('tells the agent when asking again can change anything (the TTL), and promises no single effect', async () => {
    // prepare: Powertools' handler claims with 100 ms left, and its worker never comes back
    const call = callOf();
    noteTool(TOOL, undefined, { ttlSeconds: TTL_SECONDS });
    const dead = gate();
    const { handler, run } = powertools(
      async () => {
        await dead.opened;
        return { note_id: 'late' };
      },
      { responseHook: true },
    );
    const dying = handler(call.event, context(100));
    while (run.mock.calls.length === 0) await waitMs(10);
    await waitMs(200);

    // act: the poll as GET /tools/{tool}/operations/{key} and get_operation answer it
    const answer = await readOperation({ runtime: world.runtime, toolNames: [TOOL] }, call.caller, TOOL, call.key);
    const next = nextAfterRead(answer as Parameters<typeof nextAfterRead>[0]);
    dead.open();
    await dying;

    // assess
    expect(answer).toMatchObject({ ok: true, status: 'stalled' });
    expect(next.message).not.toMatch(/cannot act twice/);
    expect(next.after_ms).toBeGreaterThan((TTL_SECONDS - 60) * 1000);
  });
});

describe('a tenant’s erase, on the records Powertools’ handler wrote (no tenant: it cannot tell whose)', () => {
  // Powertools' layer writes no tenant and its key (`<function>#<hash>`) names none: the erase's Scan finds
  // the records with no tenant too, writes none of them, and takes each as the tenant's — one in flight
  // holds back every app table (its tool unknown), and the erase is not complete.
  it('reports a Powertools call still in flight, whoever’s it is, and every app table waits for it', async () => {
    // prepare: Powertools' handler holds the key for the tenant's call
    const call = callOf();
    const held = gate();
    const { handler, run } = powertools(
      async () => {
        await held.opened;
        return { note_id: 'n' };
      },
      { responseHook: true },
    );
    const running = handler(call.event, context(5_000));
    while (run.mock.calls.length === 0) await waitMs(10);
    const before = await itemOf(call.recordKey);

    // act: an app table no tool's `access` names (it waits before any read: DynamoDB Local has none)
    const report = await eraseTenant(
      world.client,
      { tenant: call.caller.tenant, includeDomain: true },
      { IDEMPOTENCY_TABLE: world.idempotencyTable.tableName },
      { notes: { partitionKey: { name: 'tenant', type: 'S' }, tenantAttribute: 'tenant' } },
      [{ name: TOOL, access: { invoices: ['dynamodb:PutItem'] } }],
    );
    const after = await itemOf(call.recordKey);
    held.open();
    await running;

    // assess
    expect(report.unattributed.inFlight).toBeGreaterThanOrEqual(1);
    expect(report.callsInFlight.live).toBeGreaterThanOrEqual(1);
    expect(report.complete).toBe(false);
    expect(report.deferred).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ table: 'idempotency', reason: 'items_kept' }),
        expect.objectContaining({ table: 'notes', reason: 'calls_in_flight' }),
      ]),
    );
    expect(report.tables.notes).toBeUndefined();
    expect(after).toEqual(before);
  });
});
