import { eraseTenantRecords } from '../../lib/admin/erase-tenant';
import { tableName } from '../../lib/store/tables';
import { gate, noteTool } from '../helpers/tools';
import { createWorld, deadline, identity, newTenant, type World } from '../helpers/world';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());

describe('eraseTenantRecords', () => {
  it("deletes every record of one tenant, across users and tools, and nobody else's", async () => {
    const tenant = newTenant();
    const other = identity();
    const note = noteTool('send_note');
    const reminder = noteTool('send_reminder');
    for (let i = 0; i < 30; i++) {
      await world.runtime.invoke(
        note.tool,
        identity(tenant, `user${i % 3}`),
        { idempotency_key: `k${i}`, text: 'hi' },
        deadline(),
      );
    }
    await world.runtime.invoke(reminder.tool, identity(tenant), { idempotency_key: 'k1', text: 'hi' }, deadline());
    await world.runtime.invoke(note.tool, other, { idempotency_key: 'k1', text: 'hi' }, deadline());

    const report = await eraseTenantRecords(world.client, tableName('idempotency'), tenant);

    expect(report).toEqual({ deleted: 31, inFlight: 0 });
    expect(await world.idempotencyRecordKeys(tenant)).toEqual([]);
    expect(await world.idempotencyRecordKeys(other.tenant)).toHaveLength(1);
  });

  it('leaves a record whose call is still running, and that call cannot re-create what was erased', async () => {
    const caller = identity();
    const hold = gate();
    const { tool } = noteTool('send_note', async (args) => {
      await hold.opened;
      return { receipt: { text: args.text }, replayed: false };
    });
    const running = world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'secret' }, deadline());
    await new Promise((resolve) => setTimeout(resolve, 200));

    const whileRunning = await eraseTenantRecords(world.client, tableName('idempotency'), caller.tenant);
    hold.open();
    await running;
    const afterwards = await eraseTenantRecords(world.client, tableName('idempotency'), caller.tenant);

    expect(whileRunning).toEqual({ deleted: 0, inFlight: 1 });
    expect(afterwards).toEqual({ deleted: 1, inFlight: 0 });
    expect(await world.idempotencyRecordKeys(caller.tenant)).toEqual([]);
  });
});
