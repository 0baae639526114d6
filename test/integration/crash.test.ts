// Rule 2 (docs/state-machine.md): every takeover names the claim it replaces; every lock ends 10 s before its record’s TTL.
// Rule 5 (docs/state-machine.md): exactly one answer per effect says idempotent: false.
import type { RecordedRefund, RefundReceipt } from '../../app/domain/invoices';
import type { Movement, RefundRequest } from '../../app/payments/provider';
import { refund as refundTool } from '../../app/tools/refund';
import type { Written } from '../../lib/idempotency/protocol/commit';
import { advanceClock } from '../helpers/clock';
import { gate, noteTool } from '../helpers/tools';
import { createWorld, deadline, identity, type World } from '../helpers/world';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

/**
 * The dying worker's time left, so its lock's length: 2 s, so that a busy runner still answers the call made
 * while it is locked before it ends (at 300 ms one did not); the clock is then moved past it.
 */
const LOCK_MS = 2_000;

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
    const tool = refundTool.bind({ ...world, provider: { refund } });
    const call = { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: invoice.amount };

    // Act: the first worker claims, the provider accepts, the worker dies (its lock: LOCK_MS).
    void world.runtime.invoke(tool, caller, call, deadline(LOCK_MS));
    await until(() => refund.mock.results.length === 1);
    // Answered at once (attach.test holds a duplicate that waits for the lock's end and takes over).
    const unattached = world.idempotencyRuntime({ attach: { maxWaitMs: 0 } });
    const whileLocked = await unattached.invoke(tool, caller, call, deadline());
    advanceClock(LOCK_MS + 1_000);
    const retry = await world.runtime.invoke(tool, caller, call, deadline());
    const replay = await world.runtime.invoke(tool, caller, call, deadline());

    // Assess
    expect(whileLocked).toMatchObject({ ok: false, status: 'pending', key: 'k1' });
    // No money moved on the retry: the provider replayed the first movement. The retry is the call
    // that recorded the refund on the invoice — the one that finished it — so it says it executed.
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
    const tool = refundTool.bind({ ...world, provider: { refund } });
    const args = { invoice_id: invoice.invoice_id, amount: invoice.amount };

    void world.runtime.invoke(tool, caller, { idempotency_key: 'k1', ...args }, deadline(LOCK_MS));
    await until(() => refund.mock.results.length === 1);
    const otherKey = await world.runtime.invoke(tool, caller, { idempotency_key: 'k2', ...args }, deadline());
    advanceClock(LOCK_MS + 1_000);
    const firstKeyAgain = await world.runtime.invoke(tool, caller, { idempotency_key: 'k1', ...args }, deadline());

    // k2 found the money moved (a provider replay) and recorded the refund on the invoice: it committed
    // the effect and is the one call told so; k1, finished later, finds k2's commit.
    expect(otherKey).toMatchObject({ ok: true, idempotent: false, key: 'k2' });
    if (!otherKey.ok) throw new Error('unreachable');
    expect(firstKeyAgain).toEqual({ ok: true, idempotent: true, key: 'k1', receipt: otherKey.receipt });
    expect(await world.ledgerRows(caller.tenant)).toHaveLength(1);
  });

  it('dies after the refund was recorded on the invoice: the retry replays the natural key', async () => {
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    const recordRefund = dieAfterFirst(
      (tenant: string, receipt: RefundReceipt, by: string): Promise<Written<RecordedRefund>> =>
        world.invoices.recordRefund(tenant, receipt, by),
    );
    const invoices = Object.assign(Object.create(world.invoices), { recordRefund });
    const tool = refundTool.bind({ ...world, invoices });
    const call = { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: invoice.amount };

    void world.runtime.invoke(tool, caller, call, deadline(LOCK_MS));
    await until(() => recordRefund.mock.results.length === 1);
    advanceClock(LOCK_MS + 1_000);
    const retry = await world.runtime.invoke(tool, caller, call, deadline());

    const stored = (await world.invoices.get(caller.tenant, invoice.invoice_id))?.refund;
    // The refund on the invoice is stamped with this call: its retry is the call that executed it.
    expect(retry).toEqual({ ok: true, idempotent: false, key: 'k1', receipt: stored });
    const rows: Movement[] = await world.ledgerRows(caller.tenant);
    expect(rows).toHaveLength(1);
  });

  it("resumes after its lock expired and another call took over: it cannot overwrite that call's record", async () => {
    // Prepare: the first worker stalls (a GC pause, a frozen container) past its lock.
    const caller = identity();
    const stall = gate();
    let runs = 0;
    const { tool } = noteTool('send_note', async (args) => {
      runs += 1;
      const run = runs;
      if (run === 1) await stall.opened;
      return { receipt: { text: args.text, run }, replayed: false };
    });
    const call = { idempotency_key: 'k1', text: 'hi' };

    // Act
    const stalled = world.runtime.invoke(tool, caller, call, deadline(LOCK_MS));
    await until(() => runs === 1);
    advanceClock(LOCK_MS + 1_000);
    const takeover = await world.runtime.invoke(tool, caller, call, deadline());
    stall.open();
    const late = await stalled;
    const afterwards = await world.runtime.invoke(tool, caller, call, deadline());

    // Assess: the record holds the takeover's receipt; the late worker is told to read it.
    expect(takeover).toEqual({ ok: true, idempotent: false, key: 'k1', receipt: { text: 'hi', run: 2 } });
    expect(late).toEqual({
      ok: false,
      error: {
        code: 'unavailable',
        message: 'the write may have been applied; retry with the same key to read its result',
      },
    });
    expect(afterwards).toEqual({ ...takeover, idempotent: true });
  });

  it('never lets other arguments take over an expired lock under the same key', async () => {
    const caller = identity();
    const stall = gate();
    const { tool, execute } = noteTool('send_note', async (args) => {
      if (args.text === 'hi') await stall.opened;
      return { receipt: { text: args.text }, replayed: false };
    });

    const stalled = world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline(LOCK_MS));
    await until(() => execute.mock.calls.length === 1);
    advanceClock(LOCK_MS + 1_000);
    const other = await world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'bye' }, deadline());
    stall.open();
    const first = await stalled;

    expect(other).toMatchObject({ ok: false, error: { code: 'conflict' } });
    expect(first).toEqual({ ok: true, idempotent: false, key: 'k1', receipt: { text: 'hi' } });
    expect(execute).toHaveBeenCalledTimes(1);
  });

  it('reads the deadline once: a clock that runs out between two readings still leaves a lock that expires', async () => {
    const caller = identity();
    const stall = gate();
    const { tool, execute } = noteTool('send_note', async (args) => {
      await stall.opened;
      return { receipt: { text: args.text }, replayed: false };
    });
    const readings = [200, 0];
    const flaky = { getRemainingTimeInMillis: () => readings.shift() ?? 0 };

    void world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, flaky);
    await until(() => execute.mock.calls.length === 1);
    advanceClock(LOCK_MS + 1_000);
    const retry = world.runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    // The retry took the expired claim over (it runs too) instead of answering pending for 24 h.
    await until(() => execute.mock.calls.length === 2);
    stall.open();

    expect(await retry).toMatchObject({ ok: true, idempotent: false });
  });
});
