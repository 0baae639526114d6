import { randomUUID } from 'node:crypto';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { type Claim, claim, type FirstClaim } from '../../lib/idempotency/protocol/claim-writes';
import type { IdempotencyTable } from '../../lib/idempotency/protocol/table';

/** The TTL of the records these helpers claim. */
export const TTL_SECONDS = 3_600;

/**
 * Call records for the tests of one transition (protocol/): a first claim to make, the claim made, and
 * the item exactly as the table holds it — on the table `table()` gives (set in a test file's beforeAll).
 */
export function recordTransitions(table: () => IdempotencyTable) {
  /** A first claim of a fresh record, its lock ending `lockMs` from now. */
  function firstClaim(lockMs = 10_000): FirstClaim {
    const now = Date.now();
    return {
      recordKey: `proto#${randomUUID()}`,
      tenant: `t-${randomUUID()}`,
      tool: 'proto',
      validation: 'v1',
      expiresAtS: Math.round(now / 1000 + TTL_SECONDS),
      lockEndsMs: now + lockMs,
      call: '{"args":{},"key":"k1","user":"ada"}',
    };
  }

  /** The item under `key` exactly as the table holds it. */
  async function itemOf(key: string): Promise<Record<string, unknown> | undefined> {
    const { Item } = await table().client.send(
      new GetItemCommand({ TableName: table().tableName, Key: { id: { S: key } }, ConsistentRead: true }),
    );
    return Item && unmarshall(Item);
  }

  async function claimed(first: FirstClaim): Promise<Claim> {
    const result = await claim(table(), first, Date.now());
    if (result.kind !== 'claimed') throw new Error('the claim was refused');
    return result.claim;
  }

  return { firstClaim, itemOf, claimed };
}
