// Rule 3 (docs/state-machine.md): an intent’s downstream key is fixed once.
import { randomUUID } from 'node:crypto';
import { DeleteItemCommand, GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { CLOCK_SKEW_TOLERANCE_MS, MAX_WINDOWED_TTL_SECONDS } from '../../lib/idempotency/call-state';
import { type Claim, claim, takeOver } from '../../lib/idempotency/protocol/claim-writes';
import { markStalled } from '../../lib/idempotency/protocol/completer';
import { tombstone } from '../../lib/idempotency/protocol/erase';
import { claimIntent, type IntentRequest, intentKeyOf, outcomeOf } from '../../lib/idempotency/protocol/intent';
import { type IntentHolder, intentOf } from '../../lib/idempotency/protocol/intent-record';
import { takeOverIntent } from '../../lib/idempotency/protocol/intent-writes';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import { store } from '../../lib/idempotency/protocol/settle';
import type { IdempotencyTable } from '../../lib/idempotency/protocol/table';
import { beforeNext } from '../helpers/intercept';
import { isIntentWriteOf } from '../helpers/no-effect';
import { createProtocolWorld, identity, type ProtocolWorld } from '../helpers/protocol-world';

/**
 * A dedupe window's intent, decided (protocol/intent.ts `claimIntent`) for each state of the call that holds it,
 * on DynamoDB Local: which answer, which key the effect runs under, and what the intent item holds after.
 */
let world: ProtocolWorld;
let table: IdempotencyTable;
beforeAll(() => {
  world = createProtocolWorld();
  table = world.idempotencyTable;
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

const WINDOW_S = 60;
const TTL_S = 3_600;

/** A call's first claim of a record of its own; its lock ends `lockInMs` from now (in the past: abandoned). */
async function callClaimed(lockInMs = 10_000, recordKey = `note#${randomUUID()}`): Promise<Claim> {
  const now = Date.now();
  const result = await claim(
    table,
    {
      recordKey,
      tenant: 't',
      tool: 'note',
      validation: 'v1',
      expiresAtS: Math.ceil(now / 1000) + TTL_S,
      lockEndsMs: now + lockInMs,
      call: '{"args":{},"key":"k","user":"ada"}',
    },
    now,
  );
  if (result.kind !== 'claimed') throw new Error('the seed claim was refused');
  return result.claim;
}

function holderOf(call: Claim): IntentHolder {
  return { recordKey: call.recordKey, claimId: call.claimId, callId: call.callId };
}

/** A request to claim the intent of `scope` for `call`, under its own downstream key. */
function requestFor(call: Claim, scope: IntentRequest['scope'], overrides: Partial<IntentRequest> = {}): IntentRequest {
  return {
    scope,
    holder: holderOf(call),
    downstreamKey: `dk-${call.claimId}`,
    windowSeconds: WINDOW_S,
    ttlSeconds: TTL_S,
    askedAtMs: Date.now(),
    ...overrides,
  };
}

/** The downstream key fixed on `call`'s record (undefined: none). */
async function fixedKeyOf(call: Claim): Promise<unknown> {
  const { Item } = await world.client.send(
    new GetItemCommand({ TableName: table.tableName, Key: { id: { S: call.recordKey } }, ConsistentRead: true }),
  );
  return Item && unmarshall(Item).downstream_key;
}

function newScope(): IntentRequest['scope'] {
  return { tool: 'note', identity: identity(), fingerprint: `fp-${randomUUID()}` };
}

async function intentItem(scope: IntentRequest['scope']): Promise<Record<string, unknown> | undefined> {
  const { Item } = await world.client.send(
    new GetItemCommand({
      TableName: table.tableName,
      Key: { id: { S: intentKeyOf(scope) } },
      ConsistentRead: true,
    }),
  );
  return Item && unmarshall(Item);
}

/** The intent of `scope`, created by `holder` (asked `askedAgoS` seconds ago). */
async function heldBy(holder: Claim, scope: IntentRequest['scope'], askedAgoS = 0): Promise<Record<string, unknown>> {
  const created = await claimIntent(table, requestFor(holder, scope, { askedAtMs: Date.now() - askedAgoS * 1000 }));
  expect(created).toMatchObject({ kind: 'holds', created: true });
  return (await intentItem(scope))!;
}

/** The intent of `scope`, moved to another holder's claim (someone else took it meanwhile). */
async function movedToSomeoneElse(scope: IntentRequest['scope']): Promise<void> {
  await world.client.send(
    new UpdateItemCommand({
      TableName: table.tableName,
      Key: marshall({ id: intentKeyOf(scope) }),
      UpdateExpression: 'SET claim_id = :other',
      ExpressionAttributeValues: marshall({ ':other': 'someone-else' }),
    }),
  );
}

/** The record under `recordKey`, deleted and claimed anew by another call, whose lock is live. */
async function reclaimedLive(recordKey: string): Promise<Claim> {
  await world.client.send(new DeleteItemCommand({ TableName: table.tableName, Key: marshall({ id: recordKey }) }));
  const anew = await callClaimed(10_000, recordKey);
  return anew;
}

async function completedCall(): Promise<Claim> {
  const call = await callClaimed();
  await store(
    table,
    call,
    { receipt: '{"sent":1}', replayed: false },
    { expiresAtS: call.expiresAtS, completedAtMs: 1 },
  );
  return call;
}

describe('claiming a dedupe window’s intent', () => {
  it('creates a free one: held by this call, under its own downstream key, its window from when it was asked, living past it the longest TTL a windowed tool may have (review 22, R22-1)', async () => {
    const scope = newScope();
    const call = await callClaimed();
    const askedAtMs = 1_800_000_000_500;

    const result = await claimIntent(table, requestFor(call, scope, { askedAtMs }));

    expect(result).toEqual({ kind: 'holds', downstreamKey: `dk-${call.claimId}`, created: true });
    expect(await intentItem(scope)).toEqual({
      id: intentKeyOf(scope),
      tenant: scope.identity.tenant,
      tool: 'note',
      intent_owner: call.recordKey,
      claim_id: call.claimId,
      call_id: call.callId,
      downstream_key: `dk-${call.claimId}`,
      window_end: 1_800_000_000 + WINDOW_S,
      intent_runners: new Set([call.callId]),
      expiration: 1_800_000_000 + WINDOW_S + MAX_WINDOWED_TTL_SECONDS,
    });
  });

  it('held by another call, live: running until its lock ends, naming the call it waits on; nothing written', async () => {
    const scope = newScope();
    const holder = await callClaimed(7_000);
    const before = await heldBy(holder, scope);
    const record = await world.client.send(
      new GetItemCommand({ TableName: table.tableName, Key: { id: { S: holder.recordKey } }, ConsistentRead: true }),
    );

    const result = await claimIntent(table, requestFor(await callClaimed(), scope));

    expect(result).toEqual({
      kind: 'running',
      lockEndsMs: Number(record.Item?.in_progress_expiration?.N),
      waitedOn: holder.callId,
    });
    expect(await intentItem(scope)).toEqual(before);
  });

  it('held by another call, completed: done, its outcome', async () => {
    const scope = newScope();
    const holder = await callClaimed();
    await heldBy(holder, scope);
    await store(
      table,
      holder,
      { receipt: '{"sent":1}', replayed: false },
      { expiresAtS: holder.expiresAtS, completedAtMs: 1 },
    );
    const asker = await callClaimed();

    const result = await claimIntent(table, requestFor(asker, scope));

    expect(result).toEqual({
      kind: 'done',
      outcome: expect.objectContaining({ receipt: '{"sent":1}' }),
    });
  });

  // Review 19, R19-4: an erased holder's intent was held afresh under the asker's own key — a call asked in the
  // window before the erase (none of whose attempts reached the intent) then made a second effect.
  it('held by another call, erased, no runner in flight: the window ends at this claim (a marker of no tenant, as erase leaves it), and this call, asked in it, runs under its key with the key fixed on its record — created by no call', async () => {
    const scope = newScope();
    const holder = await completedCall();
    const intent = await heldBy(holder, scope);
    expect(await tombstone(table, holder.recordKey)).toBe('erased');
    const asker = await callClaimed();

    const claimedAtMs = Date.now();
    const result = await claimIntent(table, requestFor(asker, scope));

    expect(result).toEqual({ kind: 'holds', downstreamKey: intent.downstream_key, created: false });
    expect(await fixedKeyOf(asker)).toBe(intent.downstream_key);
    const marker = await intentItem(scope);
    expect(marker).toEqual({
      id: intentKeyOf(scope),
      expiration: intent.expiration,
      replaced_window: { end: expect.any(Number), call: holder.callId, key: intent.downstream_key },
    });
    // Ended at the claim plus the clock skew rule 2 tolerates (a call asked before it on any worker's clock is
    // in it: review 20, R20-3), not at the window's end.
    const end = Number((marker?.replaced_window as { end?: number } | undefined)?.end);
    expect(end).toBeGreaterThanOrEqual((claimedAtMs + CLOCK_SKEW_TOLERANCE_MS) / 1000);
    expect(end).toBeLessThanOrEqual((Date.now() + CLOCK_SKEW_TOLERANCE_MS) / 1000 + 1);
    expect(end).toBeLessThan(Number(intent.window_end));
  });

  // Review 21, R21-2: an intent written under a shorter TTL than a window it remembers expired first. Since
  // review 22 every intent lives MAX_WINDOWED_TTL_SECONDS past its window; a marker an earlier version wrote
  // may outlive that (its window asked under a longer TTL, which no version before review 22 refused).
  it('a marker that outlives the intent a call would create (a window it remembers asked under a longer TTL): created over it all the same, living as long, in a second write', async () => {
    const scope = newScope();
    const longer = Math.floor(Date.now() / 1000) + WINDOW_S + MAX_WINDOWED_TTL_SECONDS + TTL_S;
    const window = { end: Math.floor(Date.now() / 1000) - 5, call: `note#${randomUUID()}@i`, key: 'dk-past' };
    await world.client.send(
      new PutItemCommand({
        TableName: table.tableName,
        Item: marshall({
          id: intentKeyOf(scope),
          tenant: 't',
          tool: 'note',
          expiration: longer,
          replaced_window: window,
        }),
      }),
    );
    const asker = await callClaimed();
    const writes = countIntentWrites();

    const result = await claimIntent(table, requestFor(asker, scope));

    expect(result).toEqual({ kind: 'holds', downstreamKey: `dk-${asker.claimId}`, created: true });
    expect(await intentItem(scope)).toMatchObject({
      claim_id: asker.claimId,
      expiration: longer,
      replaced_window: window,
    });
    expect(writes()).toBe(2);
  });

  it('window ended, holder settled: the new intent never expires before the one it replaces (its calls asked under a longer TTL)', async () => {
    const scope = newScope();
    const holder = await completedCall();
    const before = await heldBy(holder, scope, WINDOW_S + 5);
    await world.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: marshall({ id: intentKeyOf(scope) }),
        UpdateExpression: 'SET expiration = :longer',
        ExpressionAttributeValues: marshall({ ':longer': Number(before.expiration) + 10 * TTL_S }),
      }),
    );

    const result = await claimIntent(table, requestFor(await callClaimed(), scope));

    expect(result).toMatchObject({ kind: 'holds', created: true });
    expect(await intentItem(scope)).toMatchObject({ expiration: Number(before.expiration) + 10 * TTL_S });
  });

  it('held by another call, erased: a call asked after this window ended at its erase (plus the clock skew) creates the intent anew over its marker, under its own key, the erased window kept on it', async () => {
    const scope = newScope();
    const holder = await completedCall();
    const intent = await heldBy(holder, scope);
    expect(await tombstone(table, holder.recordKey)).toBe('erased');
    expect(await claimIntent(table, requestFor(await callClaimed(), scope))).toMatchObject({ created: false });
    const later = await callClaimed();

    // Asked after the window's end: the erase's time plus the clock skew rule 2 tolerates (review 20, R20-3).
    const askedAtMs = Date.now() + CLOCK_SKEW_TOLERANCE_MS + 2_000;
    const result = await claimIntent(table, requestFor(later, scope, { askedAtMs }));

    expect(result).toEqual({ kind: 'holds', downstreamKey: `dk-${later.claimId}`, created: true });
    expect(await intentItem(scope)).toMatchObject({
      claim_id: later.claimId,
      downstream_key: `dk-${later.claimId}`,
      replaced_window: { call: holder.callId, key: intent.downstream_key },
    });
  });

  it.each([
    ['abandoned', () => callClaimed(-1_000)],
    ['gone (its record deleted)', () => callClaimed(-1_000)],
  ])(
    'held by another call, %s: taken over under the intent’s key, fixed on this call’s record in the same transaction',
    async (how, seed) => {
      const scope = newScope();
      const holder = await seed();
      await heldBy(holder, scope);
      if (how.startsWith('gone')) {
        await world.client.send(
          new DeleteItemCommand({ TableName: table.tableName, Key: marshall({ id: holder.recordKey }) }),
        );
      }
      const asker = await callClaimed();
      const request = requestFor(asker, scope);

      const result = await claimIntent(table, request);

      expect(result).toEqual({ kind: 'holds', downstreamKey: `dk-${holder.claimId}`, created: false });
      expect(await fixedKeyOf(asker)).toBe(`dk-${holder.claimId}`);
      expect(await intentItem(scope)).toMatchObject({
        intent_owner: asker.recordKey,
        claim_id: asker.claimId,
        downstream_key: `dk-${holder.claimId}`,
      });
    },
  );

  it('held by a call whose record was claimed anew by another call (live): the holder is gone, taken over', async () => {
    const scope = newScope();
    const holder = await callClaimed(-1_000);
    await heldBy(holder, scope);
    await reclaimedLive(holder.recordKey);
    const asker = await callClaimed();
    const request = requestFor(asker, scope);

    const result = await claimIntent(table, request);

    expect(result).toEqual({ kind: 'holds', downstreamKey: `dk-${holder.claimId}`, created: false });
    expect(await fixedKeyOf(asker)).toBe(`dk-${holder.claimId}`);
  });

  it('held by a completed call whose outcome cannot be read: taken over under the intent’s key (found, not repeated)', async () => {
    const scope = newScope();
    const holder = await callClaimed();
    await heldBy(holder, scope);
    await store(
      table,
      holder,
      { receipt: '{"sent":1}', replayed: false },
      { expiresAtS: holder.expiresAtS, completedAtMs: 1 },
    );
    await world.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: marshall({ id: holder.recordKey }),
        UpdateExpression: 'REMOVE #data',
        ExpressionAttributeNames: { '#data': 'data' },
      }),
    );
    const request = requestFor(await callClaimed(), scope);

    const result = await claimIntent(table, request);

    expect(result).toEqual({ kind: 'holds', downstreamKey: `dk-${holder.claimId}`, created: false });
  });

  it('held by an abandoned call, but this call lost its own claim (taken over, erased) before taking it: claim_lost, the intent not touched (both writes or neither: review 10, R10-1)', async () => {
    const scope = newScope();
    const holder = await callClaimed(-1_000);
    const before = await heldBy(holder, scope);
    const taker = await callClaimed();
    await world.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: marshall({ id: taker.recordKey }),
        UpdateExpression: 'SET claim_id = :other',
        ExpressionAttributeValues: marshall({ ':other': `other-${randomUUID()}` }),
      }),
    );

    const result = await claimIntent(table, requestFor(taker, scope));

    expect(result).toEqual({ kind: 'claim_lost' });
    expect(await intentItem(scope)).toEqual(before);
    expect(await fixedKeyOf(taker)).toBeUndefined();
  });

  it('held by an abandoned call that another taker moved first: running, no key fixed on this call', async () => {
    const scope = newScope();
    const holder = await callClaimed(-1_000);
    await heldBy(holder, scope);
    const taker = await callClaimed();
    // Moved between this call's read of the intent and its takeover.
    beforeNext(world.client, 'TransactWriteItemsCommand', () => movedToSomeoneElse(scope));

    const result = await claimIntent(table, requestFor(taker, scope));

    expect(result).toMatchObject({ kind: 'running' });
    expect(await intentItem(scope)).toMatchObject({ claim_id: 'someone-else' });
    expect(await fixedKeyOf(taker)).toBeUndefined();
  });

  it('held by this very call (an earlier attempt): held, swapped to this attempt’s claim, created only if under its own key', async () => {
    const scope = newScope();
    const first = await callClaimed(-1_000);
    await heldBy(first, scope);
    const retry: Claim = { ...first, claimId: `retry-${randomUUID()}` };

    const sameKey = await claimIntent(table, requestFor(retry, scope, { downstreamKey: `dk-${first.claimId}` }));
    const later: Claim = { ...first, claimId: `later-${randomUUID()}` };
    const otherKey = await claimIntent(table, requestFor(later, scope));

    expect(sameKey).toEqual({ kind: 'holds', downstreamKey: `dk-${first.claimId}`, created: true });
    expect(otherKey).toEqual({ kind: 'holds', downstreamKey: `dk-${first.claimId}`, created: false });
    expect(await intentItem(scope)).toMatchObject({ claim_id: later.claimId, downstream_key: `dk-${first.claimId}` });
  });

  it('held by this very call again, after another call was among its runners: held under its own key, not created (review 12, R12-2: that runner may have run under it)', async () => {
    const scope = newScope();
    const first = await callClaimed(-1_000);
    await heldBy(first, scope);
    await world.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: marshall({ id: intentKeyOf(scope) }),
        UpdateExpression: 'ADD intent_runners :taker',
        ExpressionAttributeValues: marshall({ ':taker': new Set([`note#taker@${randomUUID()}`]) }),
      }),
    );
    const retry: Claim = { ...first, claimId: `retry-${randomUUID()}` };

    const result = await claimIntent(table, requestFor(retry, scope, { downstreamKey: `dk-${first.claimId}` }));

    expect(result).toEqual({ kind: 'holds', downstreamKey: `dk-${first.claimId}`, created: false });
  });

  it('held under this record by another call of it (the record claimed anew): taken over, the key fixed on its record, not created (review 11, R11-4)', async () => {
    const scope = newScope();
    const first = await callClaimed(-1_000);
    await heldBy(first, scope);
    const anew = await reclaimedLive(first.recordKey);

    const result = await claimIntent(table, requestFor(anew, scope));

    expect(result).toEqual({ kind: 'holds', downstreamKey: `dk-${first.claimId}`, created: false });
    expect(await fixedKeyOf(anew)).toBe(`dk-${first.claimId}`);
    expect(await intentItem(scope)).toMatchObject({
      claim_id: anew.claimId,
      intent_runners: new Set([first.callId, anew.callId]),
    });
  });

  it('moved by someone else between its read and the swap: running, not taken', async () => {
    const scope = newScope();
    const first = await callClaimed(-1_000);
    await heldBy(first, scope);
    beforeNext(
      world.client,
      'UpdateItemCommand',
      () => movedToSomeoneElse(scope),
      (input) => !isIntentWriteOf('create', 'UpdateItemCommand', input),
    );

    const own = await claimIntent(table, requestFor({ ...first, claimId: 'retry' }, scope));

    expect(own).toEqual({ kind: 'running', lockEndsMs: undefined });
    expect(await intentItem(scope)).toMatchObject({ claim_id: 'someone-else' });
  });

  it('refuses an item under the intent’s key that is not an intent', async () => {
    const scope = newScope();
    await world.client.send(
      new PutItemCommand({ TableName: table.tableName, Item: marshall({ id: intentKeyOf(scope), status: 'X' }) }),
    );

    await expect(claimIntent(table, requestFor(await callClaimed(), scope))).rejects.toThrow(
      `the item under ${intentKeyOf(scope)} is not an intent`,
    );
  });
});

describe('an intent whose window ended before this call was asked', () => {
  it('holder settled (completed): replaced, held afresh by this call under its own key', async () => {
    const scope = newScope();
    const holder = await callClaimed();
    await heldBy(holder, scope, WINDOW_S + 5);
    await store(
      table,
      holder,
      { receipt: '{"sent":1}', replayed: false },
      { expiresAtS: holder.expiresAtS, completedAtMs: 1 },
    );
    const asker = await callClaimed();

    const result = await claimIntent(table, requestFor(asker, scope));

    expect(result).toEqual({ kind: 'holds', downstreamKey: `dk-${asker.claimId}`, created: true });
    expect(await intentItem(scope)).toMatchObject({ claim_id: asker.claimId, downstream_key: `dk-${asker.claimId}` });
  });

  it('holder gone and its record claimed anew by another call (live): replaced (the live call is not the holder)', async () => {
    const scope = newScope();
    const holder = await callClaimed(-1_000);
    await heldBy(holder, scope, WINDOW_S + 5);
    await reclaimedLive(holder.recordKey);
    const asker = await callClaimed();

    const result = await claimIntent(table, requestFor(asker, scope));

    expect(result).toEqual({ kind: 'holds', downstreamKey: `dk-${asker.claimId}`, created: true });
  });

  it('holder still live: running until its lock ends, nothing replaced', async () => {
    const scope = newScope();
    const holder = await callClaimed(9_000);
    const before = await heldBy(holder, scope, WINDOW_S + 5);

    const result = await claimIntent(table, requestFor(await callClaimed(), scope));

    expect(result).toMatchObject({ kind: 'running', lockEndsMs: expect.any(Number) });
    expect((result as { lockEndsMs: number }).lockEndsMs).toBeGreaterThan(Date.now() + 5_000);
    expect(await intentItem(scope)).toEqual(before);
  });

  it('holder abandoned: running, parked until the completer looks at the holder (its own retry or the completer must find its intent), nothing replaced', async () => {
    const scope = newScope();
    const holder = await callClaimed(-1_000);
    const before = await heldBy(holder, scope, WINDOW_S + 5);

    const result = await claimIntent(table, requestFor(await callClaimed(), scope));

    // Its first attempt's lock ended a second ago: the completer re-runs it at once — a second from now at least.
    expect(result).toMatchObject({ kind: 'running', parked: true });
    const untilMs = (result as { lockEndsMs: number }).lockEndsMs;
    expect(untilMs - Date.now()).toBeGreaterThan(0);
    expect(untilMs - Date.now()).toBeLessThanOrEqual(1_000);
    expect(await intentItem(scope)).toEqual(before);
  });

  it('holder abandoned at a later attempt: parked until its backoff ends, not a second from now', async () => {
    const scope = newScope();
    const first = await callClaimed(-1_000);
    const now = Date.now();
    const again = await takeOver(
      table,
      {
        recordKey: first.recordKey,
        fromClaimId: first.claimId,
        validation: 'v1',
        lockEndsMs: now - 500,
        ttlSeconds: TTL_S,
      },
      now,
    );
    if (again.kind !== 'claimed') throw new Error('the takeover was refused');
    await heldBy(again.claim, scope, WINDOW_S + 5);

    const result = await claimIntent(table, requestFor(await callClaimed(), scope));

    // Attempt 2 ended 0.5 s ago: the completer re-runs it 30 s after (backoff), and no sooner (to the ms: the
    // wait is rounded up).
    expect(result).toMatchObject({ kind: 'running', parked: true });
    expect((result as { lockEndsMs: number }).lockEndsMs - (now - 500 + 30_000)).toBeGreaterThanOrEqual(0);
    expect((result as { lockEndsMs: number }).lockEndsMs - (now - 500 + 30_000)).toBeLessThan(50);
  });

  it('window over, holder settled, runners unknown (an earlier version’s intent): parked until the intent’s TTL, when every call asked in its window has expired (review 13, R13-2) — not replaced', async () => {
    const scope = newScope();
    const holder = await completedCall();
    await heldBy(holder, scope, WINDOW_S + 5);
    await world.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: { id: { S: intentKeyOf(scope) } },
        UpdateExpression: 'REMOVE intent_runners',
      }),
    );
    const before = await intentItem(scope);

    const result = await claimIntent(table, requestFor(await callClaimed(), scope));

    expect(result).toEqual({ kind: 'running', lockEndsMs: Number(before!.expiration) * 1000, parked: true });
    expect(await intentItem(scope)).toEqual(before);
  });

  it('holder stalled (given up): parked until a second past its TTL, when every reader counts it expired (review 36, F4) — nothing scheduled moves it sooner, only its own resend', async () => {
    const scope = newScope();
    const holder = await callClaimed(-1_000);
    expect(await markStalled(table, holder.recordKey, holder.claimId, Date.now(), 'attempts')).toBe('stalled');
    const before = await heldBy(holder, scope, WINDOW_S + 5);

    const result = await claimIntent(table, requestFor(await callClaimed(), scope));

    // Its resend may move it sooner (`movable`): a call parked behind it is looked at by its wait look.
    expect(result).toEqual({
      kind: 'running',
      lockEndsMs: holder.expiresAtS * 1000 + 1_000,
      parked: true,
      movable: true,
    });
    expect(await intentItem(scope)).toEqual(before);
  });

  it('a window ending the very second the call was asked is still that window', async () => {
    const scope = newScope();
    const holder = await completedCall();
    const askedAtMs = Math.floor(Date.now() / 1000) * 1000;
    await claimIntent(table, requestFor(holder, scope, { askedAtMs: askedAtMs - WINDOW_S * 1000 }));

    const atTheEnd = await claimIntent(table, requestFor(await callClaimed(), scope, { askedAtMs }));

    expect(atTheEnd).toMatchObject({ kind: 'done' });
  });

  it('replaced by someone else between its read and its write: running', async () => {
    const scope = newScope();
    const holder = await completedCall();
    await heldBy(holder, scope, WINDOW_S + 5);
    const asker = await callClaimed();
    let puts = 0;
    // The first PutItem is the replace (the create that found the intent is an UpdateItem).
    beforeNext(
      world.client,
      'PutItemCommand',
      () => movedToSomeoneElse(scope),
      () => ++puts === 1,
    );

    const result = await claimIntent(table, requestFor(asker, scope));

    expect(result).toEqual({ kind: 'running', lockEndsMs: undefined });
    expect(await intentItem(scope)).toMatchObject({ claim_id: 'someone-else' });
  });
});

describe('an intent’s runners (the calls that ran or may run under its key), as claimIntent reads them', () => {
  /** `runner`'s call added to the runners of `scope`'s intent, as a takeover leaves it. */
  async function joinedBy(scope: IntentRequest['scope'], runner: Claim): Promise<void> {
    await world.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: marshall({ id: intentKeyOf(scope) }),
        UpdateExpression: 'ADD intent_runners :runner',
        ExpressionAttributeValues: marshall({ ':runner': new Set([runner.callId]) }),
      }),
    );
  }

  /** A completed call whose outcome was itself a replay (the effect another call's, under the intent's key). */
  async function completedAsReplay(): Promise<Claim> {
    const call = await callClaimed();
    await store(
      table,
      call,
      { receipt: '{"sent":1}', replayed: true },
      { expiresAtS: call.expiresAtS, completedAtMs: 1 },
    );
    return call;
  }

  it('holder erased, its only other runner settled (completed): the window ends at this claim, and this call runs under its key, created by no call — a settled runner is not in flight', async () => {
    const scope = newScope();
    const holder = await completedCall();
    const intent = await heldBy(holder, scope);
    await joinedBy(scope, await completedCall());
    expect(await tombstone(table, holder.recordKey)).toBe('erased');
    const asker = await callClaimed();

    const result = await claimIntent(table, requestFor(asker, scope));

    expect(result).toEqual({ kind: 'holds', downstreamKey: intent.downstream_key, created: false });
    expect(await intentItem(scope)).toEqual({
      id: intentKeyOf(scope),
      expiration: intent.expiration,
      replaced_window: expect.objectContaining({ call: holder.callId, key: intent.downstream_key }),
    });
  });

  it('holder erased, the asker itself among the runners (live): not taken over — its own place among the runners is no other runner in flight — the window ends at this claim and it runs under its key', async () => {
    const scope = newScope();
    const holder = await completedCall();
    const intent = await heldBy(holder, scope);
    const asker = await callClaimed();
    await joinedBy(scope, asker);
    expect(await tombstone(table, holder.recordKey)).toBe('erased');

    const result = await claimIntent(table, requestFor(asker, scope));

    expect(result).toEqual({ kind: 'holds', downstreamKey: intent.downstream_key, created: false });
    expect(await intentItem(scope)).not.toHaveProperty('intent_runners');
  });

  it('window ended, holder settled, another runner live: running until that runner’s lock ends, nothing replaced', async () => {
    const scope = newScope();
    const holder = await completedCall();
    const before = await heldBy(holder, scope, WINDOW_S + 5);
    const runner = await callClaimed(8_000);
    await joinedBy(scope, runner);
    const { Item } = await world.client.send(
      new GetItemCommand({ TableName: table.tableName, Key: { id: { S: runner.recordKey } }, ConsistentRead: true }),
    );

    const result = await claimIntent(table, requestFor(await callClaimed(), scope));

    expect(result).toEqual({ kind: 'running', lockEndsMs: Number(Item?.in_progress_expiration?.N) });
    expect(await intentItem(scope)).toMatchObject({ claim_id: before.claim_id, downstream_key: before.downstream_key });
  });

  it('window ended, holder settled, another runner abandoned: parked until the completer looks at that runner, nothing replaced', async () => {
    const scope = newScope();
    const holder = await completedCall();
    const before = await heldBy(holder, scope, WINDOW_S + 5);
    await joinedBy(scope, await callClaimed(-1_000));

    const result = await claimIntent(table, requestFor(await callClaimed(), scope));

    // Its first attempt's lock ended a second ago: re-run at once by the completer — a second from now at least.
    expect(result).toMatchObject({ kind: 'running', parked: true });
    expect((result as { lockEndsMs: number }).lockEndsMs - Date.now()).toBeLessThanOrEqual(1_000);
    expect(await intentItem(scope)).toMatchObject({ claim_id: before.claim_id, downstream_key: before.downstream_key });
  });

  it('holder completed with a business failure that was itself a replay: done, its failure (only a replayed receipt makes a runner run again)', async () => {
    const scope = newScope();
    const holder = await callClaimed();
    await heldBy(holder, scope);
    await store(
      table,
      holder,
      { failure: 'not_found', message: 'no such note', replayed: true },
      { expiresAtS: holder.expiresAtS, completedAtMs: 1 },
    );
    const asker = await callClaimed();

    const result = await claimIntent(table, requestFor(asker, scope));

    expect(result).toEqual({
      kind: 'done',
      outcome: expect.objectContaining({ failure: 'not_found', replayed: true }),
    });
    expect(await fixedKeyOf(asker)).toBeUndefined();
  });

  it('holder completed as a replay, the asker not among its runners: done, the holder’s replay — no runner added, no key fixed, nothing written (review 13: it never ran under the key)', async () => {
    const scope = newScope();
    const holder = await completedAsReplay();
    const before = await heldBy(holder, scope);
    const asker = await callClaimed();

    const result = await claimIntent(table, requestFor(asker, scope));

    expect(result).toEqual({
      kind: 'done',
      outcome: expect.objectContaining({ receipt: '{"sent":1}', replayed: true }),
    });
    expect(await fixedKeyOf(asker)).toBeUndefined();
    expect(await intentItem(scope)).toEqual(before);
  });

  it('holder completed as a replay, the asker among its runners already (an earlier attempt took it over): held, not created, nothing written', async () => {
    const scope = newScope();
    const holder = await completedAsReplay();
    await heldBy(holder, scope);
    const asker = await callClaimed();
    await joinedBy(scope, asker);
    // Its claim moved since (a later attempt of it): a write on it would be refused, and none is made.
    await world.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: marshall({ id: asker.recordKey }),
        UpdateExpression: 'SET claim_id = :later',
        ExpressionAttributeValues: marshall({ ':later': `later-${randomUUID()}` }),
      }),
    );

    const result = await claimIntent(table, requestFor(asker, scope));

    expect(result).toEqual({ kind: 'holds', downstreamKey: `dk-${holder.claimId}`, created: false });
    expect(await fixedKeyOf(asker)).toBeUndefined();
  });

  it('takeOverIntent answers what it wrote: taken (its caller acts on each answer)', async () => {
    const taken = newScope();
    const abandoned = await callClaimed(-1_000);
    await heldBy(abandoned, taken);
    const taker = await callClaimed();

    const read = intentOf((await intentItem(taken)) ?? {}, DEFAULT_RECORD_ATTRIBUTES);
    expect(read && (await takeOverIntent(table, read, holderOf(taker)))).toBe('taken');
  });
});

describe('outcomeOf: the outcome of the window holder a call waited on (waited_on, review 13 R13-8)', () => {
  it('a completed call: its stored outcome', async () => {
    const call = await completedCall();

    expect(await outcomeOf(table, call.callId)).toEqual({ receipt: '{"sent":1}', replayed: false });
  });

  it('in flight, erased, a record claimed anew by another call, or no record: none', async () => {
    const live = await callClaimed();
    const erased = await completedCall();
    expect(await tombstone(table, erased.recordKey)).toBe('erased');
    const reclaimed = await completedCall();
    const other = `${reclaimed.recordKey}@another-instance`;

    expect([
      await outcomeOf(table, live.callId),
      await outcomeOf(table, erased.callId),
      await outcomeOf(table, other),
      await outcomeOf(table, `note#${randomUUID()}@i`),
      await outcomeOf(table, 'no-call-id'),
    ]).toEqual([undefined, undefined, undefined, undefined, undefined]);
  });
});

/** Counts the intent writes (UpdateItem, PutItem, transactions naming an intent) sent from now on. */
function countIntentWrites(): () => number {
  let count = 0;
  const name = `count-intent-writes-${randomUUID()}`;
  world.client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Record<string, unknown>;
      const write = ['UpdateItemCommand', 'PutItemCommand', 'TransactWriteItemsCommand'].includes(
        context.commandName ?? '',
      );
      if (write && JSON.stringify(input).includes('#intent#')) count += 1;
      return next(args);
    },
    { step: 'initialize', name },
  );
  return () => {
    world.client.middlewareStack.remove(name);
    return count;
  };
}
