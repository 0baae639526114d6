import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { TABLES, tableName } from '../../app/tables';
import { eraseTenant } from '../../lib/admin/erase-tenant';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import { ToolRuntime } from '../../lib/idempotency/runtime';
import { createDynamoDBClient } from '../../lib/store/client';
import { noteTool } from '../helpers/tools';
import { createWorld, deadline, identity, type World } from '../helpers/world';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());

describe('erase is final (rule 6)', () => {
  it('is not undone by the SDK resending a store whose answer was lost', async () => {
    const caller = identity();
    const { tool } = noteTool('send_note');
    // The runtime's own client: its store of the outcome (UpdateItem … REMOVE #call) is applied, the
    // answer is lost, the tenant is erased meanwhile, and the SDK resends the same request.
    const client = createDynamoDBClient(process.env);
    let armed = true;
    let erasure: Awaited<ReturnType<typeof eraseTenant>> | undefined;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const answer = await next(args);
        const input = args.input as { UpdateExpression?: string };
        if (armed && context.commandName === 'UpdateItemCommand' && input.UpdateExpression?.includes('REMOVE #call')) {
          armed = false;
          erasure = await eraseTenant(world.client, { tenant: caller.tenant }, process.env, TABLES);
          return next(args); // the resend of the request whose answer was lost
        }
        return answer;
      },
      { step: 'initialize', name: 'lostAnswerThenResend' },
    );
    const runtime = new ToolRuntime({
      client,
      tableName: tableName('idempotency'),
      attributes: DEFAULT_RECORD_ATTRIBUTES,
    });

    const first = await runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    const record = await world.client.send(
      new GetItemCommand({
        TableName: tableName('idempotency'),
        Key: { id: { S: (await world.idempotencyRecordKeys(caller.tenant))[0]!.id } },
        ConsistentRead: true,
      }),
    );
    const again = await world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    client.destroy();

    expect(first.ok || ('error' in first && first.error.code)).not.toBe('internal');
    expect(erasure?.tables.idempotency).toMatchObject({ deleted: 1 }); // the record became a tombstone
    expect({ status: record.Item?.status?.S, data: record.Item?.data !== undefined }).toEqual({
      status: 'ERASED',
      data: false,
    });
    // The erased key answers not_found until its TTL; the erased receipt never comes back.
    expect(again).toMatchObject({ ok: false, error: { code: 'not_found' } });
  });
});
