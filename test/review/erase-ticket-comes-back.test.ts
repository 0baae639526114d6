import type { Ticket } from '../../app/domain/tickets';
import { TABLES } from '../../app/tables';
import { createTicket } from '../../app/tools/create-ticket';
import { eraseTenant } from '../../lib/admin/erase-tenant';
import { gate } from '../helpers/tools';
import { createWorld, deadline, identity, type World } from '../helpers/world';
import { movableClock, runGates } from './helpers';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

describe('erase of a ticket whose dedupe-window intent another call still holds a key to', () => {
  it('never brings the erased ticket back', async () => {
    const clock = movableClock();
    const caller = identity();
    const never = gate();
    const runs = runGates(4);
    // The real create_ticket; its first two workers die before the ticket is written.
    const tickets = Object.create(world.tickets) as typeof world.tickets;
    tickets.create = async (item: Ticket) => {
      if (runs.started() <= 2) await never.opened;
      return world.tickets.create(item);
    };
    const tool = createTicket.bind({ ...world, tickets });
    const call = (key: string, ms = 1_000) =>
      world.runtime.invoke(tool, caller, { idempotency_key: key, title: 'printer on fire' }, deadline(ms));

    const hung = [call('k1')]; // k1 creates the intent (its key D1) and dies
    await runs.reached(1);
    clock.advance(2_000);
    hung.push(call('k2')); // k2: fresh key, same ticket, in the window — takes the intent over (D1) and dies
    await runs.reached(2);
    clock.advance(2_000);
    const k1 = await call('k1', 5_000); // k1's retry takes the intent back and creates the ticket under D1
    expect(k1).toMatchObject({ ok: true, idempotent: false });
    const ticketKey = k1.ok ? (k1.receipt.ticket_key as string) : '';

    // The tenant is erased: k1 settled (tombstone, its ticket deleted); k2 in flight (kept, reported).
    const report = await eraseTenant(world.client, { tenant: caller.tenant, includeDomain: true }, process.env, TABLES);
    const erased = (await world.tickets.get(caller.tenant, ticketKey)) === undefined;
    expect(erased).toBe(report.tables.tickets?.deleted === 1); // the report tells the truth either way

    // k2's retry (or the completer) finishes k2, under the downstream key fixed on its record.
    const k2 = await call('k2', 5_000);

    // (The dead workers are still parked on their gate: nothing else wrote to the tickets table.)
    const after = await world.tickets.get(caller.tenant, ticketKey);
    never.open();
    await Promise.allSettled(hung);
    // The erased ticket is back, with k1's ticket_key, and a second answer says it was created.
    expect({ erased, back: erased && after !== undefined }).not.toEqual({ erased: true, back: true });
    expect(k2).not.toMatchObject({ ok: true, idempotent: false });
  });
});
