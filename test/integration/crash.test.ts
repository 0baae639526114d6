import type { RecordedRefund, RefundReceipt } from '../../lib/domain/invoices';
import type { Movement, RefundRequest } from '../../lib/payments/provider';
import { createRefundTool } from '../../lib/tools/refund';
import { createWorld, deadline, identity, type World } from '../helpers/world';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Wraps `step` so that its first call does the real work and then never returns: the worker died
 * right after that step. Later calls behave normally.
 */
function dieAfterFirst<A extends unknown[], R>(step: (...args: A) => Promise<R>) {
  let died = false;
  return jest.fn(async (...args: A): Promise<R> => {
    const result = await step(...args);
    if (died) return result;
    died = true;
    return new Promise<R>(() => {});
  });
}

async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(10);
  }
}

describe('a worker that dies mid-call', () => {
  it('dies after the provider accepted: the retry after the lock expired moves no more money', async () => {
    // Prepare
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    const refund = dieAfterFirst((request: RefundRequest) => world.provider.refund(request));
    const tool = createRefundTool({ invoices: world.invoices, provider: { refund } });
    const call = { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: invoice.amount };

    // Act: the first worker claims, the provider accepts, the worker dies (its lock: 300 ms).
    void world.runtime.invoke(tool, caller, call, deadline(300));
    await until(() => refund.mock.results.length === 1);
    const whileLocked = await world.runtime.invoke(tool, caller, call, deadline());
    await sleep(400);
    const retry = await world.runtime.invoke(tool, caller, call, deadline());
    const replay = await world.runtime.invoke(tool, caller, call, deadline());

    // Assess
    expect(whileLocked).toMatchObject({ ok: false, status: 'pending', key: 'k1' });
    expect(retry).toMatchObject({ ok: true, idempotent: false, key: 'k1' });
    expect(replay).toEqual({ ...retry, idempotent: true });
    const rows = await world.ledgerRows(caller.tenant);
    expect(rows).toHaveLength(1);
    if (!retry.ok) throw new Error('unreachable');
    expect(retry.receipt.refund_id).toBe(rows[0]?.movement_id);
    // Both attempts asked the provider with one and the same derived key.
    expect(refund).toHaveBeenCalledTimes(2);
    const keys = refund.mock.calls.map(([request]) => request.idempotencyKey);
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toMatch(/^rs1_[0-9a-f]{64}$/);
  });

  it('dies after the provider accepted: a new client key, even before the lock expired, moves no more money', async () => {
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    const refund = dieAfterFirst((request: RefundRequest) => world.provider.refund(request));
    const tool = createRefundTool({ invoices: world.invoices, provider: { refund } });
    const args = { invoice_id: invoice.invoice_id, amount: invoice.amount };

    void world.runtime.invoke(tool, caller, { idempotency_key: 'k1', ...args }, deadline(300));
    await until(() => refund.mock.results.length === 1);
    const otherKey = await world.runtime.invoke(tool, caller, { idempotency_key: 'k2', ...args }, deadline());
    await sleep(400);
    const firstKeyAgain = await world.runtime.invoke(tool, caller, { idempotency_key: 'k1', ...args }, deadline());

    expect(otherKey).toMatchObject({ ok: true, key: 'k2' });
    if (!otherKey.ok) throw new Error('unreachable');
    expect(firstKeyAgain).toEqual({ ok: true, idempotent: true, key: 'k1', receipt: otherKey.receipt });
    expect(await world.ledgerRows(caller.tenant)).toHaveLength(1);
  });

  it('dies after the refund was recorded on the invoice: the retry replays the natural key', async () => {
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    const recordRefund = dieAfterFirst(
      (tenant: string, receipt: RefundReceipt): Promise<RecordedRefund> => world.invoices.recordRefund(tenant, receipt),
    );
    const invoices = Object.assign(Object.create(world.invoices), { recordRefund });
    const tool = createRefundTool({ invoices, provider: world.provider });
    const call = { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: invoice.amount };

    void world.runtime.invoke(tool, caller, call, deadline(300));
    await until(() => recordRefund.mock.results.length === 1);
    await sleep(400);
    const retry = await world.runtime.invoke(tool, caller, call, deadline());

    const stored = (await world.invoices.get(caller.tenant, invoice.invoice_id))?.refund;
    expect(retry).toEqual({ ok: true, idempotent: true, key: 'k1', receipt: stored });
    const rows: Movement[] = await world.ledgerRows(caller.tenant);
    expect(rows).toHaveLength(1);
  });
});
