// Rule 6 (docs/state-machine.md): erase is final and keeps what is in flight.
/**
 * Call records as an earlier version wrote them, read by this one (callRecordOf). Found by a review:
 * records written before 88cbe92 carry no `created_at` (the claim's PutItem added it
 * there), and `callRecordOf` now reads an item without it as "not a call record". A table that holds
 * such records when the new version is deployed (every record of the last TTL) loses them: a replay is
 * `internal` instead of its receipt, an abandoned call can no longer be finished (the takeover writes,
 * then throws), and erase neither tombstones a completed one nor counts an abandoned one as in flight.
 */
import { randomUUID } from 'node:crypto';
import { GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { tableName } from '../../app/tables';
import { recordKeyOf } from '../../lib/idempotency/derivation';
import { eraseRecord, isCallInFlight } from '../../lib/idempotency/protocol/erase';
import { createWorld, deadline, identity, type World } from '../helpers/world';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());

const TABLE = () => tableName('idempotency');

/** The item as dcf97a0's claim wrote it: the same attributes, without `created_at`. */
async function asWrittenBeforeTasks(recordKey: string): Promise<Record<string, unknown>> {
  await world.client.send(
    new UpdateItemCommand({ TableName: TABLE(), Key: { id: { S: recordKey } }, UpdateExpression: 'REMOVE created_at' }),
  );
  const { Item } = await world.client.send(
    new GetItemCommand({ TableName: TABLE(), Key: { id: { S: recordKey } }, ConsistentRead: true }),
  );
  return unmarshall(Item!);
}

describe('records written by the version before MCP tasks (no created_at)', () => {
  it('a completed one still replays its receipt, and erase still tombstones it', async () => {
    // prepare
    const caller = identity();
    const args = { idempotency_key: `k-${randomUUID()}`, customer: 'cus_ada', amount: 4200 };
    const first = await world.runtime.invoke(world.tools.create_invoice!, caller, args, deadline());
    const recordKey = recordKeyOf('create_invoice', [caller.tenant, caller.user, args.idempotency_key]);
    const item = await asWrittenBeforeTasks(recordKey);

    // act
    const replay = await world.runtime.invoke(world.tools.create_invoice!, caller, args, deadline());
    const erased = await eraseRecord({ client: world.client, tableName: TABLE() }, item);

    // assess
    expect(first).toMatchObject({ ok: true, idempotent: false });
    expect({ replay, erased }).toEqual({
      replay: { ...first, idempotent: true },
      erased: 'erased',
    });
  });

  it('an abandoned one is still in flight for erase, and a retry with its key finishes it', async () => {
    // prepare: a claim whose worker died (its lock ends at once), as the old version left it
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    const args = { idempotency_key: `r-${randomUUID()}`, invoice_id: invoice.invoice_id, amount: invoice.amount };
    const dying = { getRemainingTimeInMillis: () => 50 };
    const name = 'fresh-crash';
    world.client.middlewareStack.add(
      (next, context) => async (a) => {
        // the worker dies right after its claim: nothing after the PutItem is sent
        if (context.commandName !== 'PutItemCommand' && context.commandName !== 'GetItemCommand') {
          throw Object.assign(new Error('crashed'), { name: 'TimeoutError' });
        }
        return next(a);
      },
      { step: 'initialize', name },
    );
    try {
      await world.runtime.invoke(world.tools.refund!, caller, args, dying);
    } finally {
      world.client.middlewareStack.remove(name);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    const recordKey = recordKeyOf('refund', [caller.tenant, caller.user, args.idempotency_key]);
    const item = await asWrittenBeforeTasks(recordKey);
    const callId = `${recordKey}@${item.call_id as string}`;

    // act
    const inFlight = await isCallInFlight({ client: world.client, tableName: TABLE() }, callId);
    const retry = await world.runtime.invoke(world.tools.refund!, caller, args, deadline());

    const after = await world.client.send(
      new GetItemCommand({ TableName: TABLE(), Key: { id: { S: recordKey } }, ConsistentRead: true }),
    );

    // assess: finished by the retry (attempt 2); today: internal, nothing written, and nobody can finish it
    expect(item.status).toBe('INPROGRESS');
    expect({ inFlight, retry, attemptAfter: unmarshall(after.Item!).attempt }).toEqual({
      inFlight: true,
      retry: expect.objectContaining({ ok: true }),
      attemptAfter: 2,
    });
  });
});
