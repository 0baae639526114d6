// Rule 6 (docs/state-machine.md): erase is final and keeps what is in flight.
// Rule 3 (docs/state-machine.md): a dedupe window's intent — what erase leaves of it: a marker of no tenant.
import { randomUUID } from 'node:crypto';
import { DeleteItemCommand, GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { type Claim, claim } from '../../lib/idempotency/protocol/claim-writes';
import { markStalled } from '../../lib/idempotency/protocol/completer';
import {
  deleteOnStampsRead,
  eraseItem,
  eraseRecord,
  isCallInFlight,
  tombstone,
} from '../../lib/idempotency/protocol/erase';
import { createIntent } from '../../lib/idempotency/protocol/intent-writes';
import { DEFAULT_RECORD_ATTRIBUTES, STATUS } from '../../lib/idempotency/protocol/record';
import { store } from '../../lib/idempotency/protocol/settle';
import type { IdempotencyTable } from '../../lib/idempotency/protocol/table';
import { beforeNext as beforeNextCommand } from '../helpers/intercept';
import { createProtocolWorld, type ProtocolWorld } from '../helpers/protocol-world';

/**
 * Erase's decision for each idempotency item it finds (protocol/erase.ts `eraseRecord`, rule 6 of
 * docs/state-machine.md), one state at a time on DynamoDB Local, with and without a dry run and the app's
 * tables (`closeStalled`): what it answers, and what the item is after. erase-example.test.ts runs erase whole.
 */
let world: ProtocolWorld;
let table: IdempotencyTable;
beforeAll(() => {
  world = createProtocolWorld();
  table = world.idempotencyTable;
});
afterAll(() => world.destroy());

const erased = () => ({ client: world.client, tableName: table.tableName, attributes: DEFAULT_RECORD_ATTRIBUTES });

/** A call record claimed now; its lock ends `lockInMs` from now, its TTL `ttlInS` from now. */
async function claimed(lockInMs = 10_000, ttlInS = 3_600): Promise<Claim> {
  const now = Date.now();
  const result = await claim(
    table,
    {
      recordKey: `note#${randomUUID()}`,
      tenant: 't',
      tool: 'note',
      validation: 'v1',
      expiresAtS: Math.floor(now / 1000) + ttlInS,
      lockEndsMs: now + lockInMs,
      call: '{"args":{},"key":"k","user":"ada"}',
    },
    now,
  );
  if (result.kind !== 'claimed') throw new Error('the seed claim was refused');
  return result.claim;
}

async function completed(): Promise<Claim> {
  const call = await claimed();
  await store(table, call, { receipt: '{"n":1}', replayed: false }, { expiresAtS: call.expiresAtS, completedAtMs: 1 });
  return call;
}

async function stalled(): Promise<Claim> {
  const call = await claimed(-1_000);
  expect(await markStalled(table, call.recordKey, call.claimId, Date.now(), 'attempts')).toBe('stalled');
  return call;
}

async function itemOf(key: string): Promise<Record<string, unknown> | undefined> {
  const { Item } = await world.client.send(
    new GetItemCommand({ TableName: table.tableName, Key: { id: { S: key } }, ConsistentRead: true }),
  );
  return Item && unmarshall(Item);
}

/**
 * What an erase leaves of an intent (review 19, R19-1, R19-2): a marker of no tenant — its key, its TTL and
 * the window it remembers (for a call asked in it that erase cannot see), nothing else.
 */
const NO_TENANT_MARKER = ['expiration', 'id', 'replaced_window'];
async function leftOf(key: string): Promise<string[] | undefined> {
  const item = await itemOf(key);
  return item && Object.keys(item).sort();
}

/** Erases the item under `key` as a scan would hand it over (read just before). */
async function erase(key: string, options: { dryRun?: boolean; closeStalled?: boolean } = {}) {
  const item = await itemOf(key);
  if (!item) throw new Error(`no item under ${key}`);
  return eraseRecord(erased(), item, options);
}

/** Runs `change` just before the next command named `command` is sent (between erase's read and its write). */
function beforeNext(command: string, change: () => Promise<unknown>): void {
  beforeNextCommand(world.client, command, change);
}

/** Runs `change` just before erase's write of a held intent (its UpdateItem to a marker of no tenant). */
function beforeIntentErased(change: () => Promise<unknown>): void {
  beforeNextCommand(world.client, 'UpdateItemCommand', change, (input) =>
    String(input.UpdateExpression).includes('REMOVE #holder'),
  );
}

/** The commands sent through the world's client from now until `stop()`, by name. */
function commandsSent(): { stop(): string[] } {
  const name = `commands-sent-${randomUUID()}`;
  const names: string[] = [];
  world.client.middlewareStack.add(
    (next, context) => async (args) => {
      names.push(context.commandName ?? '?');
      return next(args);
    },
    { step: 'initialize', name },
  );
  return {
    stop() {
      world.client.middlewareStack.remove(name);
      return names;
    },
  };
}

describe('a call record', () => {
  it('completed: a tombstone (outcome, arguments and claims gone); a dry run changes nothing', async () => {
    const call = await completed();
    const before = await itemOf(call.recordKey);

    expect(await erase(call.recordKey, { dryRun: true })).toBe('nothing');
    expect(await itemOf(call.recordKey)).toEqual(before);
    expect(await erase(call.recordKey)).toBe('erased');
    const after = await itemOf(call.recordKey);
    expect(after).toMatchObject({ status: STATUS.erased });
    expect(after).not.toHaveProperty('data');
    expect(after).not.toHaveProperty('call');
    // Erased already: a rerun finds nothing to do, and writes nothing (not even a refused tombstone).
    const sent = commandsSent();
    expect(await erase(call.recordKey)).toBe('nothing');
    expect(sent.stop()).toEqual(['GetItemCommand']);
  });

  it.each([
    ['live', () => claimed()],
    ['abandoned', () => claimed(-1_000)],
  ])('%s: kept and reported in flight, dry run or not, with the app’s tables or not', async (_state, seed) => {
    const call = await seed();
    const before = await itemOf(call.recordKey);

    for (const options of [{}, { dryRun: true }, { closeStalled: true }]) {
      expect(await erase(call.recordKey, options)).toBe('in_flight');
    }
    expect(await itemOf(call.recordKey)).toEqual(before);
  });

  it('stalled: kept without the app’s tables; closed with them (a tombstone); counted only on a dry run', async () => {
    const call = await stalled();
    const before = await itemOf(call.recordKey);

    expect(await erase(call.recordKey)).toBe('in_flight');
    expect(await erase(call.recordKey, { closeStalled: true, dryRun: true })).toBe('nothing');
    expect(await itemOf(call.recordKey)).toEqual(before);
    expect(await erase(call.recordKey, { closeStalled: true })).toBe('erased');
    expect(await itemOf(call.recordKey)).toMatchObject({ status: STATUS.erased });
  });

  it('stalled, but taken over by a retry between the read and the close: kept, in flight', async () => {
    const call = await stalled();
    beforeNext('UpdateItemCommand', () =>
      world.client.send(
        new UpdateItemCommand({
          TableName: table.tableName,
          Key: marshall({ id: call.recordKey }),
          UpdateExpression: 'SET claim_id = :retry, in_progress_expiration = :lock',
          ExpressionAttributeValues: marshall({ ':retry': 'a-retry', ':lock': Date.now() + 60_000 }),
        }),
      ),
    );

    expect(await erase(call.recordKey, { closeStalled: true })).toBe('in_flight');
    expect(await itemOf(call.recordKey)).toMatchObject({ status: STATUS.inProgress, claim_id: 'a-retry' });
  });

  it('expired (its TTL passed, not yet swept): deleted; a dry run changes nothing', async () => {
    const call = await claimed(-1_000, -5);

    expect(await erase(call.recordKey, { dryRun: true })).toBe('nothing');
    expect(await itemOf(call.recordKey)).toBeDefined();
    expect(await erase(call.recordKey)).toBe('erased');
    expect(await itemOf(call.recordKey)).toBeUndefined();
  });

  it('changed between the read and the write (claimed anew, completed meanwhile): nothing, left to a rerun', async () => {
    const expired = await claimed(-1_000, -5);
    beforeNext('DeleteItemCommand', () =>
      world.client.send(
        new UpdateItemCommand({
          TableName: table.tableName,
          Key: marshall({ id: expired.recordKey }),
          UpdateExpression: 'SET expiration = :later',
          ExpressionAttributeValues: marshall({ ':later': Math.floor(Date.now() / 1000) + 3_600 }),
        }),
      ),
    );
    expect(await erase(expired.recordKey)).toBe('nothing');
    expect(await itemOf(expired.recordKey)).toBeDefined();

    const done = await completed();
    beforeNext('UpdateItemCommand', () => tombstone(table, done.recordKey));
    expect(await erase(done.recordKey)).toBe('nothing');
  });

  it('left in progress by Powertools’ handler, its lock ended (stalled, naming no claim): kept even with the app’s tables — no close can name its claim', async () => {
    const key = `note#${randomUUID()}`;
    const nowS = Math.floor(Date.now() / 1000);
    const item = {
      id: key,
      status: STATUS.inProgress,
      expiration: nowS + 3_600,
      in_progress_expiration: Date.now() - 1_000,
    };
    await world.client.send(new PutItemCommand({ TableName: table.tableName, Item: marshall(item) }));

    expect(await erase(key, { closeStalled: true })).toBe('in_flight');
    expect(await itemOf(key)).toEqual(item);
  });

  it('not a call record as claims write it: nothing, unchanged', async () => {
    const key = `note#${randomUUID()}`;
    await world.client.send(
      new PutItemCommand({ TableName: table.tableName, Item: marshall({ id: key, status: STATUS.completed }) }),
    );

    expect(await erase(key)).toBe('nothing');
    expect(await itemOf(key)).toEqual({ id: key, status: STATUS.completed });
  });
});

describe('a dedupe window’s intent', () => {
  /** An intent held by `holder`, created under `intentKey` (absent, or a marker it passes). */
  async function intentHeldBy(holder: Claim, intentKey = `note#intent#${randomUUID()}`): Promise<string> {
    const created = await createIntent(table, {
      intentKey,
      tenant: 't',
      tool: 'note',
      holder: { recordKey: holder.recordKey, claimId: holder.claimId, callId: holder.callId },
      downstreamKey: 'dk',
      windowEndsAtS: Math.floor(Date.now() / 1000) + 60,
      expiresAtS: Math.floor(Date.now() / 1000) + 3_660,
    });
    expect(created.kind).toBe('created');
    return intentKey;
  }

  /** An intent item as it is on disk, written as is (a marker, an intent past its TTL). */
  async function intentItemWritten(item: Record<string, unknown>): Promise<string> {
    const intentKey = `note#intent#${randomUUID()}`;
    await world.client.send(
      new PutItemCommand({
        TableName: table.tableName,
        Item: marshall({ id: intentKey, tenant: 't', tool: 'note', ...item }),
      }),
    );
    return intentKey;
  }
  const nowS = () => Math.floor(Date.now() / 1000);
  const pastWindow = (end: number) => ({ end, call: `note#${randomUUID()}@i`, key: 'dk-past' });

  it('held by a settled call: what is left remembers its window, ended at the erase plus the clock skew (not at its end), its holder’s call and key, and the window it replaced as its prior', async () => {
    const holder = await completed();
    const now = nowS(); // one clock read: the item's times and the expectation's must not straddle a second
    const replaced = pastWindow(now - 30);
    const intentKey = await intentItemWritten({
      intent_owner: holder.recordKey,
      claim_id: holder.claimId,
      call_id: holder.callId,
      downstream_key: 'dk',
      window_end: now + 600,
      intent_runners: new Set([holder.callId]),
      expiration: now + 4_200,
      replaced_window: { ...replaced, before: now - 90 },
    });
    const erasedAtS = Date.now() / 1000;

    expect(await erase(intentKey)).toBe('erased');
    const left = await itemOf(intentKey);
    expect(left).toEqual({
      id: intentKey,
      expiration: now + 4_200,
      replaced_window: {
        end: expect.any(Number),
        call: holder.callId,
        key: 'dk',
        before: replaced.end,
        prior: { ...replaced, before: now - 90 },
      },
    });
    const end = Number((left?.replaced_window as { end?: number } | undefined)?.end);
    expect(end - erasedAtS).toBeGreaterThanOrEqual(10);
    expect(end - erasedAtS).toBeLessThanOrEqual(12);
  });

  it('a marker remembering a window (a release’s, its window’s calls in flight maybe): its tenant and tool removed, the rest kept', async () => {
    const expiration = nowS() + 3_600;
    const window = pastWindow(expiration - 3_630);
    const intentKey = await intentItemWritten({ expiration, replaced_window: window });

    expect(await erase(intentKey)).toBe('erased');
    expect(await itemOf(intentKey)).toEqual({ id: intentKey, expiration, replaced_window: window });
  });

  it('a marker remembering no window, and an intent or marker past its TTL: deleted', async () => {
    const holder = await completed();
    const keys = [
      await intentItemWritten({ expiration: nowS() + 3_600 }),
      await intentItemWritten({ expiration: nowS() - 5, replaced_window: pastWindow(nowS() - 3_700) }),
      await intentItemWritten({
        intent_owner: holder.recordKey,
        claim_id: holder.claimId,
        call_id: holder.callId,
        downstream_key: 'dk',
        window_end: nowS() - 3_605,
        intent_runners: new Set([holder.callId]),
        expiration: nowS() - 5,
      }),
    ];

    for (const key of keys) expect(await erase(key)).toBe('erased');
    for (const key of keys) expect(await itemOf(key)).toBeUndefined();
  });

  it('a marker a call created the intent over between the read and the write: read again and kept for it', async () => {
    const window = pastWindow(nowS() - 30);
    const intentKey = await intentItemWritten({ expiration: nowS() + 3_600, replaced_window: window });
    const creator = await claimed();
    beforeNext('UpdateItemCommand', () => intentHeldBy(creator, intentKey));

    expect(await erase(intentKey)).toBe('in_flight');
    expect(await itemOf(intentKey)).toMatchObject({
      tenant: 't',
      intent_owner: creator.recordKey,
      replaced_window: window,
    });
  });

  it('a marker remembering no window a call created the intent over between the read and the delete: read again and kept for it', async () => {
    const intentKey = await intentItemWritten({ expiration: nowS() + 3_600 });
    const creator = await claimed();
    beforeNext('DeleteItemCommand', () => intentHeldBy(creator, intentKey));

    expect(await erase(intentKey)).toBe('in_flight');
    expect(await itemOf(intentKey)).toMatchObject({ tenant: 't', intent_owner: creator.recordKey });
  });

  it.each([
    ['live', () => claimed()],
    ['abandoned', () => claimed(-1_000)],
  ])('held by a call %s: kept, in flight', async (_state, seed) => {
    const intentKey = await intentHeldBy(await seed());

    expect(await erase(intentKey)).toBe('in_flight');
    expect(await erase(intentKey, { closeStalled: true })).toBe('in_flight');
    expect(await itemOf(intentKey)).toBeDefined();
  });

  it('held by a settled call (completed, or gone): erased to a marker of no tenant; a dry run changes nothing', async () => {
    const intentKey = await intentHeldBy(await completed());

    expect(await erase(intentKey, { dryRun: true })).toBe('nothing');
    expect(await itemOf(intentKey)).toBeDefined();
    expect(await erase(intentKey)).toBe('erased');
    expect(await leftOf(intentKey)).toEqual(NO_TENANT_MARKER);
  });

  it('held by a settled call, its runners unknown (an earlier version’s intent): kept until its TTL, when every call asked in its window has expired — what keeps it named (the intent, unreadable, changing at its TTL)', async () => {
    const intentKey = await intentHeldBy(await completed());
    await world.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: { id: { S: intentKey } },
        UpdateExpression: 'REMOVE intent_runners',
      }),
    );
    const before = await itemOf(intentKey);

    expect(await eraseItem(table, before!)).toEqual({
      outcome: 'in_flight',
      kept: { recordKey: intentKey, tool: 'note', state: 'unreadable', changesAtMs: Number(before!.expiration) * 1000 },
    });
    expect(await itemOf(intentKey)).toEqual(before);
  });

  it('held by a call whose record is gone (swept by its TTL): erased to a marker of no tenant', async () => {
    const holder = await completed();
    const intentKey = await intentHeldBy(holder);
    await world.client.send(
      new DeleteItemCommand({ TableName: table.tableName, Key: marshall({ id: holder.recordKey }) }),
    );

    expect(await erase(intentKey, { closeStalled: true })).toBe('erased');
    expect(await leftOf(intentKey)).toEqual(NO_TENANT_MARKER);
  });

  it('held by a call whose record is now another call’s (claimed anew): erased to a marker of no tenant, that call is not its holder', async () => {
    const holder = await claimed(-1_000);
    const intentKey = await intentHeldBy(holder);
    await world.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: marshall({ id: holder.recordKey }),
        UpdateExpression: 'SET call_id = :other, in_progress_expiration = :lock',
        ExpressionAttributeValues: marshall({ ':other': 'another-call', ':lock': Date.now() + 60_000 }),
      }),
    );

    expect(await erase(intentKey)).toBe('erased');
  });

  it('held by a stalled call: kept without the app’s tables or on a dry run; with them, the holder closed and the intent erased to a marker of no tenant', async () => {
    const holder = await stalled();
    const intentKey = await intentHeldBy(holder);

    expect(await erase(intentKey)).toBe('in_flight');
    expect(await erase(intentKey, { closeStalled: true, dryRun: true })).toBe('in_flight');
    expect(await itemOf(holder.recordKey)).toMatchObject({ status: STATUS.inProgress });
    expect(await erase(intentKey, { closeStalled: true })).toBe('erased');
    expect(await leftOf(intentKey)).toEqual(NO_TENANT_MARKER);
    expect(await itemOf(holder.recordKey)).toMatchObject({ status: STATUS.erased });
  });

  it('held by a stalled call closed already (its record came first in the scan): erased to a marker of no tenant', async () => {
    const holder = await stalled();
    const intentKey = await intentHeldBy(holder);
    const item = await itemOf(intentKey);
    expect(await erase(holder.recordKey, { closeStalled: true })).toBe('erased');

    expect(await eraseRecord(erased(), item!, { closeStalled: true })).toBe('erased');
    expect(await leftOf(intentKey)).toEqual(NO_TENANT_MARKER);
  });

  it('held by a stalled call a retry takes over before it is closed: kept, in flight', async () => {
    const holder = await stalled();
    const intentKey = await intentHeldBy(holder);
    const item = await itemOf(intentKey);
    beforeNext('UpdateItemCommand', () =>
      world.client.send(
        new UpdateItemCommand({
          TableName: table.tableName,
          Key: marshall({ id: holder.recordKey }),
          UpdateExpression: 'SET claim_id = :retry, in_progress_expiration = :lock',
          ExpressionAttributeValues: marshall({ ':retry': 'a-retry', ':lock': Date.now() + 60_000 }),
        }),
      ),
    );

    expect(await eraseRecord(erased(), item!, { closeStalled: true })).toBe('in_flight');
    expect(await itemOf(intentKey)).toBeDefined();
  });

  it('moved to another claim between the read and the write: read again and erased as it is now (its holder settled; review 13, R13-6)', async () => {
    const intentKey = await intentHeldBy(await completed());
    beforeIntentErased(() =>
      world.client.send(
        new UpdateItemCommand({
          TableName: table.tableName,
          Key: marshall({ id: intentKey }),
          UpdateExpression: 'SET claim_id = :other',
          ExpressionAttributeValues: marshall({ ':other': 'someone-else' }),
        }),
      ),
    );

    expect(await erase(intentKey)).toBe('erased');
    expect(await leftOf(intentKey)).toEqual(NO_TENANT_MARKER);
  });

  it('taken over by a call in flight between the read and the write: read again and kept for it (review 13, R13-6)', async () => {
    const intentKey = await intentHeldBy(await completed());
    const taker = await claimed();
    beforeIntentErased(() =>
      world.client.send(
        new UpdateItemCommand({
          TableName: table.tableName,
          Key: marshall({ id: intentKey }),
          UpdateExpression: 'SET intent_owner = :to, claim_id = :claim, call_id = :call ADD intent_runners :runner',
          ExpressionAttributeValues: marshall({
            ':to': taker.recordKey,
            ':claim': taker.claimId,
            ':call': taker.callId,
            ':runner': new Set([taker.callId]),
          }),
        }),
      ),
    );

    expect(await eraseItem(table, (await itemOf(intentKey))!)).toMatchObject({
      outcome: 'in_flight',
      kept: { recordKey: taker.recordKey, state: 'live' },
    });
    expect(await itemOf(intentKey)).toBeDefined();
  });

  it('taken over again on every read: the erase fails after three reads (to be run again), the intent kept', async () => {
    const intentKey = await intentHeldBy(await completed());
    const moveOnEveryDelete = () =>
      beforeIntentErased(async () => {
        moveOnEveryDelete();
        await world.client.send(
          new UpdateItemCommand({
            TableName: table.tableName,
            Key: marshall({ id: intentKey }),
            UpdateExpression: 'SET claim_id = :other',
            ExpressionAttributeValues: marshall({ ':other': `someone-${randomUUID()}` }),
          }),
        );
      });
    moveOnEveryDelete();

    await expect(erase(intentKey)).rejects.toThrow('changed 3 times while erased');
    expect(await itemOf(intentKey)).toBeDefined();
  });

  /** `runner`'s call added to the intent's runners, as a takeover or a join leaves it. */
  async function joinedBy(intentKey: string, runner: Claim): Promise<void> {
    await world.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: marshall({ id: intentKey }),
        UpdateExpression: 'ADD intent_runners :runner',
        ExpressionAttributeValues: marshall({ ':runner': new Set([runner.callId]) }),
      }),
    );
  }

  it('held by a settled call, another runner live: kept, in flight — the runner kept, until its lock ends', async () => {
    const intentKey = await intentHeldBy(await completed());
    const runner = await claimed(30_000);
    await joinedBy(intentKey, runner);

    expect(await eraseItem(erased(), (await itemOf(intentKey))!, { closeStalled: true })).toEqual({
      outcome: 'in_flight',
      kept: {
        recordKey: runner.recordKey,
        tool: 'note',
        state: 'live',
        changesAtMs: (await itemOf(runner.recordKey))!.in_progress_expiration,
      },
    });
    expect(await itemOf(intentKey)).toBeDefined();
  });

  it('held by a settled call, another runner stalled: kept without the app’s tables or on a dry run (the runner not closed); with them, the runner closed and the intent erased to a marker of no tenant', async () => {
    const intentKey = await intentHeldBy(await completed());
    const runner = await stalled();
    await joinedBy(intentKey, runner);
    const before = await itemOf(runner.recordKey);

    expect(await erase(intentKey)).toBe('in_flight');
    expect(await erase(intentKey, { closeStalled: true, dryRun: true })).toBe('in_flight');
    expect(await itemOf(runner.recordKey)).toEqual(before);
    expect(await itemOf(intentKey)).toBeDefined();
    expect(await erase(intentKey, { closeStalled: true })).toBe('erased');
    expect(await itemOf(runner.recordKey)).toMatchObject({ status: STATUS.erased });
    expect(await leftOf(intentKey)).toEqual(NO_TENANT_MARKER);
  });

  it('held by a stalled call that completes before its close (a late store): the close refused, the holder settled — erased to a marker of no tenant', async () => {
    const holder = await stalled();
    const intentKey = await intentHeldBy(holder);
    const item = await itemOf(intentKey);
    beforeNext('UpdateItemCommand', () =>
      store(
        table,
        holder,
        { receipt: '{"n":1}', replayed: false },
        { expiresAtS: holder.expiresAtS, completedAtMs: 1 },
      ),
    );

    expect(await eraseRecord(erased(), item!, { closeStalled: true })).toBe('erased');
    expect(await itemOf(holder.recordKey)).toMatchObject({ status: STATUS.completed });
    expect(await leftOf(intentKey)).toEqual(NO_TENANT_MARKER);
  });

  it('held by a call that names no claim (stalled, as Powertools’ handler leaves a record): kept even with the app’s tables, the holder not written', async () => {
    const key = `note#${randomUUID()}`;
    const nowS = Math.floor(Date.now() / 1000);
    const record = {
      id: key,
      status: STATUS.inProgress,
      expiration: nowS + 3_600,
      in_progress_expiration: Date.now() - 1_000,
    };
    await world.client.send(new PutItemCommand({ TableName: table.tableName, Item: marshall(record) }));
    const intentKey = `note#intent#${randomUUID()}`;
    await createIntent(table, {
      intentKey,
      tenant: 't',
      tool: 'note',
      holder: { recordKey: key, claimId: 'c', callId: `${key}@powertools` },
      downstreamKey: 'dk',
      windowEndsAtS: nowS + 60,
      expiresAtS: nowS + 3_660,
    });

    expect(await erase(intentKey, { closeStalled: true })).toBe('in_flight');
    expect(await itemOf(key)).toEqual(record);
    expect(await itemOf(intentKey)).toBeDefined();
  });

  it('not an intent as intent writes leave it: nothing', async () => {
    const key = `note#intent#${randomUUID()}`;
    await world.client.send(
      new PutItemCommand({ TableName: table.tableName, Item: marshall({ id: key, intent_owner: 'note#x' }) }),
    );

    expect(await erase(key)).toBe('nothing');
    expect(await itemOf(key)).toBeDefined();
  });
});

describe('whether the call that stamped an app item is in flight', () => {
  it('is, while its record is live, abandoned or stalled and still that call’s', async () => {
    const live = await claimed();
    const abandoned = await claimed(-1_000);
    const stalledCall = await stalled();

    expect(await isCallInFlight(erased(), live.callId)).toBe(true);
    expect(await isCallInFlight(erased(), abandoned.callId)).toBe(true);
    expect(await isCallInFlight(erased(), stalledCall.callId)).toBe(true);
  });

  it('is not once completed, erased, gone, claimed anew by another call, or when the stamp names no call', async () => {
    const done = await completed();
    const gone = await completed();
    await tombstone(table, gone.recordKey);
    const live = await claimed();

    expect(await isCallInFlight(erased(), done.callId)).toBe(false);
    expect(await isCallInFlight(erased(), gone.callId)).toBe(false);
    expect(await isCallInFlight(erased(), `note#${randomUUID()}@x`)).toBe(false);
    expect(await isCallInFlight(erased(), `${live.recordKey}@another-instance`)).toBe(false);
    expect(await isCallInFlight(erased(), 'no-call-id')).toBe(false);
  });
});

/**
 * What erase reports of an item it keeps (`eraseItem`'s `kept`): the call, its tool — which decides the app
 * tables that wait for it — and when it can next change by itself, when erase should run again (rule 6's
 * "a partial erase says so"; erase-deferral.test.ts runs it through a tenant erase on DynamoDB Local).
 */
describe('what erase keeps, and until when', () => {
  async function eraseKept(item: Record<string, unknown>, options: { closeStalled?: boolean } = {}) {
    return eraseItem(erased(), item, options);
  }

  it('a live call: its tool, until its lock ends', async () => {
    const call = await claimed(30_000);
    const item = (await itemOf(call.recordKey))!;

    expect(await eraseKept(item)).toEqual({
      outcome: 'in_flight',
      kept: { recordKey: call.recordKey, tool: 'note', state: 'live', changesAtMs: item.in_progress_expiration },
    });
  });

  it('an abandoned call: until the completer looks — now, once its first attempt’s lock has ended', async () => {
    const call = await claimed(-60_000);
    const before = Date.now();
    const { kept } = await eraseKept((await itemOf(call.recordKey))!);

    expect(kept).toMatchObject({ recordKey: call.recordKey, tool: 'note', state: 'abandoned' });
    expect(kept?.changesAtMs).toBeGreaterThanOrEqual(before);
    expect(kept?.changesAtMs).toBeLessThanOrEqual(Date.now());
  });

  it('a stalled call kept without the app’s tables: nothing changes it by itself', async () => {
    const call = await stalled();

    expect(await eraseKept((await itemOf(call.recordKey))!)).toEqual({
      outcome: 'in_flight',
      kept: { recordKey: call.recordKey, tool: 'note', state: 'stalled', changesAtMs: undefined },
    });
  });

  it('a stalled call a retry took over before the close: changed, to be erased again at once', async () => {
    const call = await stalled();
    const item = (await itemOf(call.recordKey))!;
    await world.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: marshall({ id: call.recordKey }),
        UpdateExpression: 'SET claim_id = :retry, in_progress_expiration = :lock',
        ExpressionAttributeValues: marshall({ ':retry': 'a-retry', ':lock': Date.now() + 60_000 }),
      }),
    );
    const before = Date.now();
    const { outcome, kept } = await eraseKept(item, { closeStalled: true });

    expect(outcome).toBe('in_flight');
    expect(kept).toMatchObject({ recordKey: call.recordKey, tool: 'note', state: 'changed' });
    expect(kept?.changesAtMs).toBeGreaterThanOrEqual(before);
    expect(kept?.changesAtMs).toBeLessThanOrEqual(Date.now());
  });

  it('a record without its tool attribute: the tool its record key names, or none', async () => {
    const call = await claimed(30_000);
    const { tool: _tool, ...item } = (await itemOf(call.recordKey))!;

    expect((await eraseKept(item)).kept?.tool).toBe('note');
    expect((await eraseKept({ ...item, id: 'no-tool-prefix' })).kept?.tool).toBeUndefined();
    expect((await eraseKept({ ...item, id: '#leading-hash' })).kept?.tool).toBeUndefined();
  });

  it('an intent whose holder is in flight: the holder, kept', async () => {
    const holder = await claimed(30_000);
    const intentKey = `note#intent#${randomUUID()}`;
    await createIntent(table, {
      intentKey,
      tenant: 't',
      tool: 'note',
      holder: { recordKey: holder.recordKey, claimId: holder.claimId, callId: holder.callId },
      downstreamKey: 'dk',
      windowEndsAtS: Math.floor(Date.now() / 1000) + 60,
      expiresAtS: Math.floor(Date.now() / 1000) + 3_660,
    });

    expect((await eraseKept((await itemOf(intentKey))!)).kept).toEqual({
      recordKey: holder.recordKey,
      tool: 'note',
      state: 'live',
      changesAtMs: (await itemOf(holder.recordKey))!.in_progress_expiration,
    });
  });

  it('an in-progress item it cannot read as a call: kept, its tool unknown (every app table waits)', async () => {
    const inProgress = { id: `note#${randomUUID()}`, status: STATUS.inProgress };
    const future = Math.floor(Date.now() / 1000) + 60;

    expect(await eraseKept(inProgress)).toEqual({
      outcome: 'in_flight',
      kept: { recordKey: inProgress.id, tool: undefined, state: 'unreadable', changesAtMs: undefined },
    });
    expect((await eraseKept({ ...inProgress, expiration: future })).outcome).toBe('in_flight');
    expect((await eraseKept({ ...inProgress, id: 7 })).kept?.recordKey).toBe('?');
  });

  it('an unreadable item that is not in progress, or whose TTL passed: nothing', async () => {
    const id = `note#${randomUUID()}`;

    expect(await eraseKept({ id, status: STATUS.completed })).toEqual({ outcome: 'nothing' });
    expect(await eraseKept({ id, status: STATUS.inProgress, expiration: Math.floor(Date.now() / 1000) - 1 })).toEqual({
      outcome: 'nothing',
    });
  });
});

/** Rule 6's delete of an app item (`deleteOnStampsRead`): on the call stamps it was read with, and only then. */
describe('deleting an app item on the stamps it was read with', () => {
  async function put(item: Record<string, string>): Promise<Record<string, { S: string }>> {
    await world.client.send(new PutItemCommand({ TableName: table.tableName, Item: marshall(item) }));
    return { id: { S: item.id! } };
  }

  it('deletes an item whose stamps are as read (one stamped, one absent), and one without stamps', async () => {
    const key = await put({ id: `app#${randomUUID()}`, created_by: 'call-1' });
    const bare = await put({ id: `app#${randomUUID()}` });
    const read = [
      { attribute: 'created_by', callId: 'call-1' },
      { attribute: 'refunded_by', callId: undefined },
    ];

    expect(await deleteOnStampsRead(world.client, table.tableName, key, read)).toBe('deleted');
    expect(await itemOf(key.id!.S)).toBeUndefined();
    expect(await deleteOnStampsRead(world.client, table.tableName, bare, [])).toBe('deleted');
    expect(await itemOf(bare.id!.S)).toBeUndefined();
  });

  it('keeps an item a call stamped since the read, or restamped: changed', async () => {
    const id = `app#${randomUUID()}`;
    const key = await put({ id, created_by: 'call-1', refunded_by: 'call-2' });

    expect(
      await deleteOnStampsRead(world.client, table.tableName, key, [
        { attribute: 'created_by', callId: 'call-1' },
        { attribute: 'refunded_by', callId: undefined },
      ]),
    ).toBe('changed');
    expect(
      await deleteOnStampsRead(world.client, table.tableName, key, [{ attribute: 'created_by', callId: 'call-0' }]),
    ).toBe('changed');
    expect(await itemOf(id)).toMatchObject({ created_by: 'call-1', refunded_by: 'call-2' });
  });
});
