import type { RefundRequest } from '../../app/payments/provider';
import { TABLES } from '../../app/tables';
import { refund as refundTool } from '../../app/tools/refund';
import { eraseTenant } from '../../lib/admin/erase-tenant';
import { gate } from '../helpers/tools';
import { createWorld, deadline, identity, type World } from '../helpers/world';
import { movableClock } from './helpers';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

describe('erase while a refund is in flight', () => {
  it('does not leave money moved with no receipt (the invoice the in-flight refund commits to is kept)', async () => {
    const clock = movableClock();
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    const moved = gate();
    const never = gate();
    let calls = 0;
    const provider = {
      async refund(request: RefundRequest) {
        calls += 1;
        const answer = await world.provider.refund(request);
        if (calls === 1) {
          moved.open();
          await never.opened; // the worker dies after the money moved, before the invoice records it
        }
        return answer;
      },
    };
    const tool = refundTool.bind({ ...world, provider });
    const call = { idempotency_key: 'r1', invoice_id: invoice.invoice_id, amount: invoice.amount };
    const dead = world.runtime.invoke(tool, caller, call, deadline(1_000));
    await moved.opened;

    // The erase keeps the refund's record (in flight) — and deletes the invoice it is about to commit to.
    const report = await eraseTenant(world.client, { tenant: caller.tenant, includeDomain: true }, process.env, TABLES);
    clock.advance(2_000);
    const retried = await world.runtime.invoke(tool, caller, call, deadline()); // or the completer

    never.open();
    await dead;
    expect(report.tables.idempotency).toMatchObject({ inFlight: 1 });
    expect(await world.ledgerRows(caller.tenant)).toHaveLength(1); // the money moved
    // …and the call that moved it is finished with its receipt, not stored as not_found.
    expect(retried).not.toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(retried).toMatchObject({ ok: true });
  });
});
