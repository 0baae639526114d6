import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { tableName } from '../../app/tables';
import { ToolRuntime } from '../../lib/idempotency';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import { createDynamoDBClient } from '../../lib/store/client';
import { gate, noteTool } from '../helpers/tools';
import { createWorld, deadline, identity, type World } from '../helpers/world';

/**
 * One runtime serves every call of a process, concurrent ones included: no call's state lives on anything
 * shared (the runtime, its client). Nothing is built per call from the client either — Powertools'
 * persistence layer, which the runtime no longer uses, listed the client's whole middleware stack
 * (`identify()`) in its constructor. What is counted is what the code does with the client; what is
 * checked is what the table holds.
 */
describe('one runtime shared by every call', () => {
  let world: World;
  const client = createDynamoDBClient();
  const runtime = new ToolRuntime({
    client,
    tableName: tableName('idempotency'),
    attributes: DEFAULT_RECORD_ATTRIBUTES,
  });
  const identify = jest.spyOn(client.middlewareStack, 'identify');

  beforeAll(() => {
    world = createWorld();
  });
  afterAll(() => {
    client.destroy();
    world.destroy();
  });
  beforeEach(() => identify.mockClear());

  it('builds nothing from the client per call (its middleware stack is never listed)', async () => {
    const { tool } = noteTool('reuse_sequential');

    for (let call = 0; call < 5; call++) {
      await runtime.invoke(tool, identity(), { idempotency_key: `k${call}`, text: 'hi' }, deadline());
      await runtime.invoke(tool, identity(), { idempotency_key: `k${call}`, text: 'hi' }, deadline());
    }

    expect(identify).not.toHaveBeenCalled();
  });

  it('keeps calls in flight at the same time apart, each writing its own tenant', async () => {
    const held = gate();
    const allIn = gate();
    let inFlight = 0;
    const { tool } = noteTool('reuse_concurrent', async (args) => {
      if (++inFlight === 4) allIn.open();
      await held.opened;
      return { receipt: { text: args.text }, replayed: false };
    });
    const callers = Array.from({ length: 4 }, () => identity());

    const calls = callers.map((caller) =>
      runtime.invoke(tool, caller, { idempotency_key: 'k1', text: caller.tenant }, deadline()),
    );
    await allIn.opened;
    held.open();
    const answers = await Promise.all(calls);
    await runtime.invoke(tool, identity(), { idempotency_key: 'k1', text: 'after' }, deadline());

    expect(answers.map((answer) => answer.ok && answer.receipt)).toEqual(
      callers.map(({ tenant }) => ({ text: tenant })),
    );
    for (const caller of callers) {
      expect(await world.idempotencyRecordKeys(caller.tenant)).toEqual([
        expect.objectContaining({ tenant: caller.tenant, tool: 'reuse_concurrent' }),
      ]);
    }
  });

  it('keeps two definitions that share a name apart (each keeps its own TTL)', async () => {
    const short = noteTool('reuse_ttl', undefined, { ttlSeconds: 3_600 }).tool;
    const long = noteTool('reuse_ttl', undefined, { ttlSeconds: 7_200 }).tool;
    const caller = identity();

    const before = Math.floor(Date.now() / 1000);
    await runtime.invoke(short, caller, { idempotency_key: 'short', text: 'hi' }, deadline());
    await runtime.invoke(long, caller, { idempotency_key: 'long', text: 'hi' }, deadline());
    const expirations = await world.documents.send(
      new ScanCommand({
        TableName: tableName('idempotency'),
        FilterExpression: 'tenant = :tenant',
        ExpressionAttributeValues: { ':tenant': caller.tenant },
        ConsistentRead: true,
      }),
    );

    const ttls = (expirations.Items ?? []).map((item) => Number(item.expiration) - before).sort((a, b) => a - b);
    expect(ttls).toHaveLength(2);
    expect(ttls[0]).toBeGreaterThanOrEqual(3_600);
    expect(ttls[0]).toBeLessThan(3_700);
    expect(ttls[1]).toBeGreaterThanOrEqual(7_200);
  });
});
