import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { callsInFlight } from '../../lib/admin/calls-in-flight';
import { createIntent } from '../../lib/idempotency/protocol/intent-writes';
import { park, store } from '../../lib/idempotency/protocol/settle';
import type { IdempotencyTable } from '../../lib/idempotency/protocol/table';
import { createProtocolWorld, newTenant, type ProtocolWorld } from '../helpers/protocol-world';
import { recordTransitions } from '../helpers/record-transitions';

/**
 * An operator's look at a tenant's calls in flight (`retrysafe calls`): a Scan of the idempotency table
 * under the in-flight filter (protocol/table.ts `inFlightFilter`), read back as calls (`inFlightCallOf`).
 */
let world: ProtocolWorld;
let table: IdempotencyTable;
beforeAll(() => {
  world = createProtocolWorld();
  table = world.idempotencyTable;
});
afterAll(() => world.destroy());

const { firstClaim, claimed } = recordTransitions(() => table);

describe('callsInFlight', () => {
  it("lists the tenant's claimed call, and neither its completed call, a dedupe window's intent nor another tenant's call", async () => {
    const tenant = newTenant('in-flight');
    const pending = { ...firstClaim(60_000), tenant };
    const holder = await claimed(pending);
    const done = { ...firstClaim(), tenant };
    await store(
      table,
      await claimed(done),
      { receipt: '{}', replayed: false },
      { expiresAtS: done.expiresAtS, completedAtMs: Date.now() },
    );
    await claimed(firstClaim(60_000)); // another tenant's
    const created = await createIntent(table, {
      intentKey: `proto#intent#${tenant}`,
      tenant,
      tool: 'proto',
      holder: { recordKey: pending.recordKey, claimId: holder.claimId, callId: `${pending.recordKey}@x` },
      downstreamKey: 'dk',
      windowEndsAtS: pending.expiresAtS,
      expiresAtS: pending.expiresAtS,
    });
    expect(created.kind).toBe('created');

    const report = await callsInFlight(table.client, table.tableName, tenant, { segments: 2 });

    expect(report.calls).toEqual([
      expect.objectContaining({ recordKey: pending.recordKey, state: 'pending', tool: 'proto', attempts: 1 }),
    ]);
    expect(report.calls[0]!.lockEndsMs).toBe(pending.lockEndsMs);
  });
});

describe("callsInFlight's queued", () => {
  it('says queued of a call every attempt of which was queued (a hand-off), and not of one that ran', async () => {
    const tenant = newTenant('in-flight-queued');
    const unrun = { ...firstClaim(60_000), tenant };
    await park(table, await claimed(unrun), Date.now() + 10_000, { unrunAttempts: 1, queued: true });
    const ran = { ...firstClaim(60_000), tenant };
    await park(table, await claimed(ran), Date.now() + 10_000, {});

    const report = await callsInFlight(table.client, table.tableName, tenant, { segments: 2 });

    const queuedOf = Object.fromEntries(report.calls.map((call) => [call.recordKey, call.queued]));
    expect(queuedOf).toEqual({ [unrun.recordKey]: true, [ran.recordKey]: false });
  });
});

describe("callsInFlight's givesUp (review 24, F4)", () => {
  it('says of an abandoned call past maxAttempts that its retries are used up (the completer gives it up at its next look), and not of one it re-runs', async () => {
    const tenant = newTenant('in-flight-exhausted');
    const spent = { ...firstClaim(-1_000), tenant };
    await claimed(spent);
    await table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: { id: { S: spent.recordKey } },
        UpdateExpression: 'SET attempt = :nine',
        ExpressionAttributeValues: { ':nine': { N: '9' } },
      }),
    );
    const fresh = { ...firstClaim(-1_000), tenant };
    await claimed(fresh);

    const report = await callsInFlight(table.client, table.tableName, tenant, { segments: 2 });
    const raised = await callsInFlight(table.client, table.tableName, tenant, { segments: 2, maxAttempts: 12 });

    const exhaustedOf = (calls: typeof report.calls) =>
      Object.fromEntries(calls.map((call) => [call.recordKey, [call.state, call.givesUp]]));
    expect(exhaustedOf(report.calls)).toEqual({
      [spent.recordKey]: ['abandoned', 'attempts'],
      [fresh.recordKey]: ['abandoned', undefined],
    });
    expect(exhaustedOf(raised.calls)[spent.recordKey]).toEqual(['abandoned', undefined]);
  });
});
