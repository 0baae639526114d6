// Rule 2 (docs/state-machine.md): every takeover names the claim it replaces; every lock ends 10 s before its record’s TTL.
// Rule 5 (docs/state-machine.md): exactly one answer per effect says idempotent: false.
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { tableName } from '../../app/tables';
import { DEFAULT_TTL_SECONDS } from '../../lib/idempotency/tool';
import { noteTool } from '../helpers/tools';
import { createWorld, deadline, identity, type World } from '../helpers/world';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

/** Moves the clock `seconds` ahead for everything that reads Date.now (Powertools, the runtime). */
function travel(seconds: number): void {
  const now = Date.now();
  jest.spyOn(Date, 'now').mockImplementation(() => now + seconds * 1000);
}

describe('TTL', () => {
  it('stores the expiry as epoch seconds, 24 h ahead by default', async () => {
    const caller = identity();
    const { tool } = noteTool();
    const before = Math.floor(Date.now() / 1000);

    await world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());

    const [record] = await world.idempotencyRecordKeys(caller.tenant);
    const { Item } = await world.client.send(
      new GetItemCommand({ TableName: tableName('idempotency'), Key: { id: { S: record!.id } } }),
    );
    const expiration = unmarshall(Item!).expiration as number;
    expect(expiration).toBeGreaterThanOrEqual(before + DEFAULT_TTL_SECONDS);
    expect(expiration).toBeLessThanOrEqual(before + DEFAULT_TTL_SECONDS + 2);
  });

  it('lets a client key past its TTL run again (the documented caveat), decided by the condition', async () => {
    const caller = identity();
    const { tool, execute } = noteTool();
    const call = { idempotency_key: 'k1', text: 'hi' };
    await world.runtime.invoke(tool, caller, call, deadline());

    travel(DEFAULT_TTL_SECONDS + 60);
    // DynamoDB has not deleted the expired item (it may take up to ~48 h): the condition decides.
    expect(await world.idempotencyRecordKeys(caller.tenant)).toHaveLength(1);
    const late = await world.runtime.invoke(tool, caller, call, deadline());

    expect(late).toMatchObject({ ok: true, idempotent: false });
    expect(execute).toHaveBeenCalledTimes(2);
  });

  it('still refunds once when a client key is retried past its TTL: the natural key holds', async () => {
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    const call = { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: invoice.amount };
    const first = await world.runtime.invoke(world.refund, caller, call, deadline());

    travel(DEFAULT_TTL_SECONDS + 60);
    const late = await world.runtime.invoke(world.refund, caller, call, deadline());
    const lateOtherAmount = await world.runtime.invoke(
      world.refund,
      caller,
      { ...call, idempotency_key: 'k2', amount: 1 },
      deadline(),
    );

    if (!first.ok) throw new Error('unreachable');
    expect(late).toEqual({ ok: true, idempotent: true, key: 'k1', receipt: first.receipt });
    expect(lateOtherAmount).toMatchObject({ ok: false, error: { code: 'invalid_args' } });
    expect(await world.ledgerRows(caller.tenant)).toHaveLength(1);
  });

  it('honours a per-tool TTL', async () => {
    const caller = identity();
    const { tool, execute } = noteTool('send_note', undefined, { ttlSeconds: 3_600 });
    const call = { idempotency_key: 'k1', text: 'hi' };
    await world.runtime.invoke(tool, caller, call, deadline());

    travel(1_800);
    const withinTtl = await world.runtime.invoke(tool, caller, call, deadline());
    jest.restoreAllMocks();
    travel(3_700);
    const pastTtl = await world.runtime.invoke(tool, caller, call, deadline());

    expect(withinTtl).toMatchObject({ ok: true, idempotent: true });
    expect(pastTtl).toMatchObject({ ok: true, idempotent: false });
    expect(execute).toHaveBeenCalledTimes(2);
  });
});
