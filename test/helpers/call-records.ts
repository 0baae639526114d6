import { randomUUID } from 'node:crypto';
import { GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { type Claim, claim } from '../../lib/idempotency/protocol/claim-writes';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { deadline, identity, type ProtocolWorld } from './protocol-world';
import { noteTool } from './tools';

/**
 * Call records as the completer's tests set them up: an abandoned call, a record read as stored, a record's
 * attributes set by hand (a later attempt, a lock, a TTL) — on the world's idempotency table.
 */
export function callRecords(world: ProtocolWorld, runtime: ToolRuntime) {
  async function itemOf(key: string): Promise<Record<string, unknown>> {
    const { Item } = await world.client.send(
      new GetItemCommand({
        TableName: world.idempotencyTable.tableName,
        Key: { id: { S: key } },
        ConsistentRead: true,
      }),
    );
    return Item ? unmarshall(Item) : {};
  }

  async function setAttributes(key: string, values: Record<string, unknown>): Promise<void> {
    const names = Object.keys(values);
    await world.client.send(
      new UpdateItemCommand({
        TableName: world.idempotencyTable.tableName,
        Key: { id: { S: key } },
        UpdateExpression: `SET ${names.map((_, i) => `#n${i} = :v${i}`).join(', ')}`,
        ExpressionAttributeNames: Object.fromEntries(names.map((name, i) => [`#n${i}`, name])),
        ExpressionAttributeValues: marshall(Object.fromEntries(names.map((name, i) => [`:v${i}`, values[name]]))),
      }),
    );
  }

  /** A call of send_note whose attempt failed transiently: its record is abandoned (lock = now), attempt 1. */
  async function abandonedCall(text = 'hi') {
    const caller = identity();
    const key = `k-${randomUUID()}`;
    const failing = noteTool('send_note', async () => {
      throw Object.assign(new Error('provider timed out'), { name: 'TimeoutError' });
    }).tool;
    const answer = await runtime.invoke(failing, caller, { idempotency_key: key, text }, deadline());
    expect(answer).toMatchObject({ ok: false, error: { code: 'unavailable' } });
    const [record] = await world.idempotencyRecordKeys(caller.tenant);
    const item = await itemOf(record!.id);
    return { caller, key, recordKey: record!.id, claim: item.claim_id as string };
  }

  return { abandonedCall, itemOf, setAttributes };
}

/**
 * A call of `tool` for `tenant` claimed now (the protocol's own first claim, no tool run), its lock ending at
 * `lockEndsMs` (default: in a minute): a call in flight for erase to meet.
 */
export async function claimInFlight(
  world: ProtocolWorld,
  tenant: string,
  tool: string,
  lockEndsMs = Date.now() + 60_000,
): Promise<Claim> {
  const now = Date.now();
  const claimed = await claim(
    world.idempotencyTable,
    {
      recordKey: `${tool}#${randomUUID()}`,
      tenant,
      tool,
      validation: 'v1',
      expiresAtS: Math.floor(now / 1000) + 3_600,
      lockEndsMs,
      call: '{"args":{},"key":"k","user":"ada"}',
    },
    now,
  );
  if (claimed.kind !== 'claimed') throw new Error('the seed claim was refused');
  return claimed.claim;
}
