import { eraseTenantRecords } from '../../lib/idempotency/erase';
import { tableName } from '../../lib/store/tables';
import { noteTool } from '../helpers/tools';
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

    const deleted = await eraseTenantRecords(world.client, tableName('idempotency'), tenant);

    expect(deleted).toBe(31);
    expect(await world.idempotencyRecordKeys(tenant)).toEqual([]);
    expect(await world.idempotencyRecordKeys(other.tenant)).toHaveLength(1);
  });
});
