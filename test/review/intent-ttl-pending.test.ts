import { DeleteItemCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { tableName } from '../../app/tables';
import { gate, noteTool } from '../helpers/tools';
import { createWorld, deadline, identity, type World } from '../helpers/world';
import { movableClock } from './helpers';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

const WINDOW_SECONDS = 600;

describe('a call answered pending inside a dedupe window, retried after the window', () => {
  it('gets the running call’s receipt even once DynamoDB’s TTL has removed the expired intent item', async () => {
    const clock = movableClock();
    const caller = identity();
    const hold = gate();
    const started = gate();
    let first = true;
    const { tool, execute } = noteTool(
      'send_note',
      async (args) => {
        if (first) {
          first = false;
          started.open();
          await hold.opened;
        }
        return { receipt: { note_id: `note_${execute.mock.calls.length}`, text: args.text }, replayed: false };
      },
      { dedupeWindowSeconds: WINDOW_SECONDS },
    );
    const call = (key: string) => world.runtime.invoke(tool, caller, { idempotency_key: key, text: 'hi' }, deadline());

    // k1 runs; k2 (fresh key, same arguments, same window) is answered pending: one intent.
    const running = call('k1');
    await started.opened;
    const k2 = await call('k2');
    expect(k2).toMatchObject({ ok: false, status: 'pending' });
    hold.open();
    const k1 = await running;
    expect(k1).toMatchObject({ ok: true, idempotent: false });

    // The agent retries k2 later, after the window (it was asked inside it). Meanwhile DynamoDB's TTL
    // process removed the intent item, whose `expiration` (the window's end) has passed.
    clock.advance((WINDOW_SECONDS + 60) * 1000);
    const { Items = [] } = await world.client.send(
      new ScanCommand({
        TableName: tableName('idempotency'),
        FilterExpression: 'tenant = :t AND attribute_exists(intent_owner)',
        ExpressionAttributeValues: { ':t': { S: caller.tenant } },
        ConsistentRead: true,
      }),
    );
    expect(Items).toHaveLength(1);
    if (Number(Items[0]!.expiration!.N) * 1000 < Date.now()) {
      // Its TTL has passed: DynamoDB may delete it at any moment. It does so now.
      await world.client.send(
        new DeleteItemCommand({ TableName: tableName('idempotency'), Key: { id: Items[0]!.id! } }),
      );
    }

    const retried = await call('k2');

    expect(execute).toHaveBeenCalledTimes(1); // k2 was a duplicate of k1: one note
    expect(retried).toEqual({ ...k1, idempotent: true, key: 'k2' });
  });
});
