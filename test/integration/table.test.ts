import { randomUUID } from 'node:crypto';
import {
  DeleteItemCommand,
  PutItemCommand,
  ResourceNotFoundException,
  TransactionCanceledException,
  type TransactWriteItem,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import {
  allOrNone,
  conditionally,
  type IdempotencyTable,
  lockEndedOn,
  readCallRecord,
} from '../../lib/idempotency/protocol/table';
import { beforeNext } from '../helpers/intercept';
import { createProtocolWorld, type ProtocolWorld } from '../helpers/protocol-world';
import { recordTransitions } from '../helpers/record-transitions';

/**
 * The idempotency table as the protocol reads and writes it (protocol/table.ts): a consistent read of a call
 * record, one conditional write answered as data, and the one condition for "this attempt is over".
 */
let world: ProtocolWorld;
let table: IdempotencyTable;
beforeAll(() => {
  world = createProtocolWorld();
  table = world.idempotencyTable;
});
afterAll(() => world.destroy());

const { firstClaim, claimed, itemOf } = recordTransitions(() => table);

describe('readCallRecord', () => {
  it('reads the record a claim wrote; nothing for an absent key or an item no claim wrote', async () => {
    const own = await claimed(firstClaim());
    const stranger = `proto#${randomUUID()}`;
    await world.client.send(
      new PutItemCommand({ TableName: table.tableName, Item: marshall({ id: stranger, note: 'not a call' }) }),
    );

    expect(await readCallRecord(table, own.recordKey)).toMatchObject({
      recordKey: own.recordKey,
      claimId: own.claimId,
      status: 'INPROGRESS',
      attempt: 1,
    });
    expect(await readCallRecord(table, `proto#${randomUUID()}`)).toBeUndefined();
    expect(await readCallRecord(table, stranger)).toBeUndefined();
  });
});

describe('conditionally', () => {
  it('answers a write whose condition held as passed, with the item after it when asked', async () => {
    const key = `proto#${randomUUID()}`;

    const written = await conditionally(
      world.client,
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: { id: { S: key } },
        UpdateExpression: 'SET note = :n',
        ConditionExpression: 'attribute_not_exists(id)',
        ExpressionAttributeValues: { ':n': { S: 'one' } },
        ReturnValues: 'ALL_NEW',
      }),
    );

    expect(written).toEqual({ passed: true, item: { id: key, note: 'one' } });
  });

  it('answers a refused condition as failed, with the item as it was, and writes nothing', async () => {
    const key = `proto#${randomUUID()}`;
    await world.client.send(new PutItemCommand({ TableName: table.tableName, Item: marshall({ id: key, n: 1 }) }));

    const refused = await conditionally(
      world.client,
      new DeleteItemCommand({
        TableName: table.tableName,
        Key: { id: { S: key } },
        ConditionExpression: 'n = :two',
        ExpressionAttributeValues: { ':two': { N: '2' } },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );

    expect(refused).toEqual({ passed: false, item: { id: key, n: 1 } });
    expect(await itemOf(key)).toEqual({ id: key, n: 1 });
  });

  it('throws every other failure as it is: the caller decides what an outage means', async () => {
    const write = conditionally(
      world.client,
      new DeleteItemCommand({ TableName: `missing-${randomUUID()}`, Key: { id: { S: 'k' } } }),
    );

    await expect(write).rejects.toBeInstanceOf(ResourceNotFoundException);
  });
});

describe('allOrNone', () => {
  /** A put of `key` on the condition that no item is there yet. */
  function putIfAbsent(key: string): TransactWriteItem {
    return {
      Put: {
        TableName: table.tableName,
        Item: marshall({ id: key, note: 'written' }),
        ConditionExpression: 'attribute_not_exists(id)',
      },
    };
  }

  async function existing(): Promise<string> {
    const key = `proto#${randomUUID()}`;
    await world.client.send(new PutItemCommand({ TableName: table.tableName, Item: marshall({ id: key, n: 1 }) }));
    return key;
  }

  /** The next transaction cancelled by DynamoDB for `codes`, one per item in order (none sent). */
  function cancelledNext(codes: readonly string[]): TransactionCanceledException {
    const cancelled = new TransactionCanceledException({
      message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${codes.join(', ')}]`,
      $metadata: { httpStatusCode: 400 },
      CancellationReasons: codes.map((Code) => ({ Code })),
    });
    beforeNext(world.client, 'TransactWriteItemsCommand', async () => {
      throw cancelled;
    });
    return cancelled;
  }

  it('answers a transaction whose conditions all held as passed: every item written', async () => {
    const [one, two] = [`proto#${randomUUID()}`, `proto#${randomUUID()}`];

    expect(await allOrNone(world.client, [putIfAbsent(one), putIfAbsent(two)])).toEqual({ passed: true });
    expect(await itemOf(one)).toEqual({ id: one, note: 'written' });
    expect(await itemOf(two)).toEqual({ id: two, note: 'written' });
  });

  it('answers a refused condition on one item as failed, naming which item (refused: true) and which not: nothing written', async () => {
    const taken = await existing();
    const free = `proto#${randomUUID()}`;

    expect(await allOrNone(world.client, [putIfAbsent(free), putIfAbsent(taken)])).toEqual({
      passed: false,
      refused: [false, true],
    });
    expect(await itemOf(free)).toBeUndefined();
    expect(await itemOf(taken)).toEqual({ id: taken, n: 1 });
  });

  it('answers a failed condition whatever else cancelled the transaction (a conflict on the other item: review 11, R11-5)', async () => {
    cancelledNext(['ConditionalCheckFailed', 'TransactionConflict']);

    const written = await allOrNone(world.client, [
      putIfAbsent(`proto#${randomUUID()}`),
      putIfAbsent(`proto#${randomUUID()}`),
    ]);

    expect(written).toEqual({ passed: false, refused: [true, false] });
  });

  it('throws a transaction cancelled with no failed condition (a conflict, throttling): transient, nothing was refused', async () => {
    const cancelled = cancelledNext(['None', 'TransactionConflict']);

    const written = allOrNone(world.client, [
      putIfAbsent(`proto#${randomUUID()}`),
      putIfAbsent(`proto#${randomUUID()}`),
    ]);

    await expect(written).rejects.toBe(cancelled);
  });

  it('throws a cancellation whose reasons are not one per item: which item was refused cannot be told', async () => {
    const cancelled = cancelledNext(['ConditionalCheckFailed']);

    const written = allOrNone(world.client, [
      putIfAbsent(`proto#${randomUUID()}`),
      putIfAbsent(`proto#${randomUUID()}`),
    ]);

    await expect(written).rejects.toBe(cancelled);
  });

  it('throws every other failure as it is', async () => {
    const written = allOrNone(world.client, [
      { Put: { TableName: `missing-${randomUUID()}`, Item: marshall({ id: 'k' }) } },
    ]);

    await expect(written).rejects.toBeInstanceOf(ResourceNotFoundException);
  });
});

describe('lockEndedOn', () => {
  /** Whether an UpdateItem conditioned on `lockEndedOn(claimId, at)` passes on the record as it is. */
  async function passes(recordKey: string, claimId: string, at: { nowMs: number; notBeforeAtS: number }) {
    const condition = lockEndedOn(table.attributes, claimId, at);
    const result = await conditionally(
      world.client,
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: { id: { S: recordKey } },
        UpdateExpression: 'SET probe = :probe',
        ConditionExpression: condition.expression,
        ExpressionAttributeNames: condition.names,
        ExpressionAttributeValues: { ...condition.values, ':probe': { S: 'x' } },
      }),
    );
    return result.passed;
  }

  it('holds only for the claim read, once its lock ended before now, while its TTL is not before the bound', async () => {
    const first = firstClaim(1_000);
    const own = await claimed(first);
    const lockEndsMs = first.lockEndsMs;
    const ttlS = first.expiresAtS;

    expect(await passes(first.recordKey, own.claimId, { nowMs: lockEndsMs, notBeforeAtS: ttlS })).toBe(false); // not ended yet
    expect(await passes(first.recordKey, 'another-claim', { nowMs: lockEndsMs + 1, notBeforeAtS: ttlS })).toBe(false);
    expect(await passes(first.recordKey, own.claimId, { nowMs: lockEndsMs + 1, notBeforeAtS: ttlS + 1 })).toBe(false); // the TTL comes first
    expect(await passes(first.recordKey, own.claimId, { nowMs: lockEndsMs + 1, notBeforeAtS: ttlS })).toBe(true);
  });
});
