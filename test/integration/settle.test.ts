// Rule 1 (docs/state-machine.md): a record whose effect may have happened is never deleted.
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { fixKeyInput, takeOver } from '../../lib/idempotency/protocol/claim-writes';
import { park, release, store } from '../../lib/idempotency/protocol/settle';
import { conditionally, type IdempotencyTable, readCallRecord } from '../../lib/idempotency/protocol/table';
import { createProtocolWorld, type ProtocolWorld } from '../helpers/protocol-world';
import { recordTransitions, TTL_SECONDS } from '../helpers/record-transitions';

/**
 * Settling a claim (protocol/settle: store, park, release) on DynamoDB Local: each only on its own claim —
 * what it answers and what the table holds after it. The other transitions are in protocol.test.ts.
 */
let world: ProtocolWorld;
let table: IdempotencyTable;
beforeAll(() => {
  world = createProtocolWorld();
  table = world.idempotencyTable;
});
afterAll(() => world.destroy());

const { firstClaim, itemOf, claimed } = recordTransitions(() => table);

describe('settling a claim', () => {
  it('store, park, release and fix the downstream key answer claim_lost once the claim was taken over, and write nothing', async () => {
    const first = firstClaim(1_000);
    const lostClaim = await claimed(first);
    await takeOver(
      table,
      {
        recordKey: first.recordKey,
        fromClaimId: lostClaim.claimId,
        validation: 'v1',
        lockEndsMs: Date.now() + 10_000,
        ttlSeconds: TTL_SECONDS,
      },
      first.lockEndsMs + 1,
    );
    const before = await itemOf(first.recordKey);

    const answers = [
      await store(
        table,
        lostClaim,
        { receipt: '{"n":1}', replayed: false },
        { expiresAtS: first.expiresAtS, completedAtMs: Date.now() },
      ),
      await park(table, lostClaim, Date.now()),
      await release(table, lostClaim),
      (await conditionally(table.client, new UpdateItemCommand(fixKeyInput(table, lostClaim, 'rs1_other')))).passed
        ? 'fixed'
        : 'claim_lost',
    ];

    expect(answers).toEqual(['claim_lost', 'claim_lost', 'claim_lost', 'claim_lost']);
    expect(await itemOf(first.recordKey)).toEqual(before);
  });

  it('store: an outcome whose optional fields are undefined (a failure without a message) is stored without them', async () => {
    const first = firstClaim();
    const own = await claimed(first);

    const stored = await store(
      table,
      own,
      { replayed: true, failure: 'conflict', message: undefined, receipt: undefined },
      { expiresAtS: first.expiresAtS, completedAtMs: Date.now() },
    );

    expect(stored).toBe('stored');
    expect((await itemOf(first.recordKey))?.data).toEqual({ replayed: true, failure: 'conflict' });
  });

  it('store: completes its own claim, keeping the outcome and dropping the call', async () => {
    const first = firstClaim();
    const own = await claimed(first);

    const completedAtMs = Date.now();
    const stored = await store(
      table,
      own,
      { receipt: '{"n":1}', replayed: false },
      { expiresAtS: first.expiresAtS + 10, completedAtMs },
    );

    expect(stored).toBe('stored');
    const record = await readCallRecord(table, first.recordKey);
    expect(record).toMatchObject({
      status: 'COMPLETED',
      outcome: { receipt: '{"n":1}', replayed: false },
      completedAtMs,
    });
    expect(record?.call).toBeUndefined();
    expect(record?.expiresAtS).toBe(first.expiresAtS + 10);
  });

  it('release: deletes its own first claim; park: sets its own lock', async () => {
    const parked = await claimed(firstClaim());
    const released = await claimed(firstClaim());

    expect(await park(table, parked, 42)).toBe('parked');
    expect(await release(table, released)).toBe('released');

    expect(await readCallRecord(table, parked.recordKey)).toMatchObject({ lockEndsMs: 42 });
    expect(await itemOf(released.recordKey)).toBeUndefined();
  });
});
