// Rule 1 (docs/state-machine.md): a record Powertools' handler left in progress is never re-run by retrysafe.
// Rule 2 (docs/state-machine.md): it names no claim, so nothing takes it over.
// Rule 6 (docs/state-machine.md): erase tombstones a completed one and keeps one in flight.
// docs/design.md, "Powertools and retrysafe on one table": Powertools' handler and retrysafe on one table.
import { randomUUID } from 'node:crypto';
import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyValidationError,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { recordKeyOf, validationOf } from '../../lib/idempotency/derivation';
import { fingerprint } from '../../lib/idempotency/fingerprint';
import { powertoolsResponseHook } from '../../lib/idempotency/powertools';
import { claim } from '../../lib/idempotency/protocol/claim';
import { eraseItem } from '../../lib/idempotency/protocol/erase';
import { encodeCall } from '../../lib/idempotency/protocol/record';
import type { JsonObject } from '../../lib/idempotency/types';
import { createProtocolWorld, deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { gate, noteTool } from '../helpers/tools';

/**
 * Powertools 2.35's own `makeIdempotent` and `DynamoDBPersistenceLayer`, and retrysafe's runtime, over ONE
 * DynamoDB Local table, in both directions. Powertools is configured as docs/design.md says (the record key
 * and validation hash of retrysafe's derivation: `scope` and `fingerprint`, sha256, the tool as key prefix),
 * and is handed the event `{ scope: [tenant, user, client key], fingerprint }`.
 */
let world: ProtocolWorld;
beforeAll(() => {
  world = createProtocolWorld();
});
afterAll(() => world.destroy());

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
    expect(poll).toEqual({ status: 'stalled', reason: 'powertools' });
    expect(after).toEqual(before);
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
  it('keeps one whose lock ended, even erasing the app’s tables: stalled, nothing will move it before its TTL', async () => {
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
      kept: { recordKey: call.recordKey, tool: undefined, state: 'stalled', changesAtMs: undefined },
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
    await world.client.send(
      new PutItemCommand({
        TableName: world.idempotencyTable.tableName,
        Item: {
          id: { S: call.recordKey },
          status: { S: 'COMPLETED' },
          call_id: { S: 'c1' },
          attempt: { N: '2' },
          expiration: { N: String(Math.round(Date.now() / 1000) + TTL_SECONDS) },
          in_progress_expiration: { N: String(Date.now()) },
          validation: { S: validationOf(call.event.fingerprint) },
          data: { M: { replayed: { BOOL: false }, failure: { S: 'not_found' }, message: { S: 'no such note' } } },
        },
      }),
    );

    // act
    const replay = handler(call.event, context());

    // assess
    await expect(replay).rejects.toMatchObject({ code: 'not_found', message: 'no such note' });
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
