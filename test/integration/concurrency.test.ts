// Rule 5 (docs/state-machine.md): exactly one answer per effect says idempotent: false.
import { refund as refundTool } from '../../app/tools/refund';
import { gate, noteTool } from '../helpers/tools';
import { createWorld, deadline, identity, type World } from '../helpers/world';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());

/** The refund tool over the real ledger, counting how often money was asked to move. */
function countedRefund() {
  const refund = jest.fn(world.provider.refund.bind(world.provider));
  const tool = refundTool.bind({ ...world, provider: { refund } });
  return { tool, refund };
}

describe('concurrent calls', () => {
  it('runs 50 concurrent same-key refunds once: the rest are pending or replays', async () => {
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    const { tool, refund } = countedRefund();
    const call = { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: invoice.amount };

    const results = await Promise.all(
      Array.from({ length: 50 }, () => world.runtime.invoke(tool, caller, call, deadline())),
    );

    const first = results.filter((r) => r.ok && !r.idempotent);
    const replays = results.filter((r) => r.ok && r.idempotent);
    const pending = results.filter((r) => !r.ok && 'status' in r);
    expect(first).toHaveLength(1);
    expect(replays.length + pending.length).toBe(49);
    for (const replay of replays) expect(replay).toEqual({ ...first[0], idempotent: true });
    for (const p of pending) {
      expect(p).toEqual({ ok: false, status: 'pending', key: 'k1', retry_after_ms: expect.any(Number) });
    }
    expect(refund).toHaveBeenCalledTimes(1);
    expect(await world.ledgerRows(caller.tenant)).toHaveLength(1);
  });

  it('moves money once when 20 concurrent calls race with 20 different keys', async () => {
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    const { tool } = countedRefund();

    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        world.runtime.invoke(
          tool,
          caller,
          { idempotency_key: `k${i}`, invoice_id: invoice.invoice_id, amount: invoice.amount },
          deadline(),
        ),
      ),
    );

    expect(results.every((r) => r.ok)).toBe(true);
    const receipts = new Set(results.map((r) => (r.ok ? JSON.stringify(r.receipt) : '')));
    expect(receipts.size).toBe(1);
    expect(await world.ledgerRows(caller.tenant)).toHaveLength(1);
    expect((await world.invoices.get(caller.tenant, invoice.invoice_id))?.refund).toEqual(
      results[0]?.ok ? results[0].receipt : undefined,
    );
  });

  it('answers pending while the first call is in flight, then replays its receipt', async () => {
    const caller = identity();
    const hold = gate();
    const { tool, execute } = noteTool('send_note', async (args) => {
      await hold.opened;
      return { receipt: { note_id: 'note_1', text: args.text }, replayed: false };
    });
    const call = { idempotency_key: 'k1', text: 'hi' };

    const inFlight = world.runtime.invoke(tool, caller, call, deadline(5_000));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const whileRunning = await world.runtime.invoke(tool, caller, call, deadline());
    hold.open();
    const firstResult = await inFlight;
    const afterwards = await world.runtime.invoke(tool, caller, call, deadline());

    expect(whileRunning).toEqual({ ok: false, status: 'pending', key: 'k1', retry_after_ms: 1_000 });
    expect(firstResult).toEqual({ ok: true, idempotent: false, key: 'k1', receipt: { note_id: 'note_1', text: 'hi' } });
    expect(afterwards).toEqual({ ...firstResult, idempotent: true });
    expect(execute).toHaveBeenCalledTimes(1);
  });

  it('answers conflict, not pending, when an in-flight key is reused with other arguments', async () => {
    const caller = identity();
    const hold = gate();
    const { tool, execute } = noteTool('send_note', async (args) => {
      await hold.opened;
      return { receipt: { note_id: 'note_1', text: args.text }, replayed: false };
    });

    const inFlight = world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline(5_000));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const other = await world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'bye' }, deadline());
    hold.open();
    await inFlight;

    expect(other).toMatchObject({ ok: false, error: { code: 'conflict' } });
    expect(execute).toHaveBeenCalledTimes(1);
  });

  it('never suggests polling after the running lock has ended', async () => {
    const caller = identity();
    const hold = gate();
    const { tool } = noteTool('send_note', async (args) => {
      await hold.opened;
      return { receipt: { text: args.text }, replayed: false };
    });

    // The duplicate attaches for 100 ms (attach.test.ts holds the rest): its lock-bound hint is then < 400 ms.
    const briefly = world.idempotencyRuntime({ attach: { maxWaitMs: 100 } });
    const inFlight = world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline(600));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const pending = await briefly.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    hold.open();
    await inFlight;

    expect(pending).toMatchObject({ ok: false, status: 'pending' });
    if (pending.ok || !('status' in pending)) throw new Error('unreachable');
    expect(pending.retry_after_ms).toBeGreaterThanOrEqual(100);
    expect(pending.retry_after_ms).toBeLessThanOrEqual(300);
  });
});
