// Rule 2 (docs/state-machine.md): every takeover names the claim it replaces; every lock ends 10 s before its record’s TTL.
// Rule 5 (docs/state-machine.md): exactly one answer per effect says idempotent: false.
import { randomUUID } from 'node:crypto';
import type { InvoiceStore, RefundReceipt } from '../../app/domain/invoices';
import type { RefundRequest } from '../../app/payments/provider';
import { TABLES } from '../../app/tables';
import { refund as refundTool } from '../../app/tools/refund';
import { eraseTenant } from '../../lib/admin/erase-tenant';
import { CLOCK_SKEW_TOLERANCE_MS, LAST_LOOK_BEFORE_TTL_MS } from '../../lib/idempotency/call-state';
import { claim, takeOver } from '../../lib/idempotency/protocol/claim-writes';
import { type IdempotencyTable, readCallRecord } from '../../lib/idempotency/protocol/table';
import type { ToolResult } from '../../lib/idempotency/types';
import { movableClock } from '../helpers/clock';
import { ownIdempotencyTable } from '../helpers/own-table';
import { gate } from '../helpers/tools';
import { createWorld, deadline, identity, type World } from '../helpers/world';

/**
 * Found by the explorer (clock_skew, seeds 1000005 and 1000144): a lock is epoch ms on its claimer's clock
 * and a TTL epoch s on the first claimer's, each read by other workers on their own clocks. A retry whose
 * clock ran 2 s behind took an abandoned refund over in the TTL's last lock-length with a lock ending 2 s
 * before the TTL by its clock, and committed the refund; a worker 2 s ahead counted the record expired and
 * claimed the key anew while that lock still ran — another call instance beside the first, which found
 * the refund stamped by another call (`idempotent: true`) while the first lost its claim (`unavailable`):
 * nobody was told they executed. A takeover's lock now ends the tolerated skew before the TTL.
 */
// A table of its own: it erases a tenant and counts what it finds, and a tenant's erase takes every
// record with no tenant as its own (rule 6) — other suites write such records on the shared table.
ownIdempotencyTable('clock-skew');
let world: World;
let table: IdempotencyTable;
beforeAll(() => {
  world = createWorld();
  table = world.idempotencyTable;
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

describe('a takeover near the TTL, on clocks that disagree (and the last look before it: rule 2)', () => {
  it.each([
    ['1 s before the TTL', 1_000, 'refused'],
    ['the tolerance less 1 ms before it', CLOCK_SKEW_TOLERANCE_MS - 1, 'refused'],
    ['the tolerance before it, past the last look', CLOCK_SKEW_TOLERANCE_MS, 'refused'],
    ['at the last look less 1 ms', CLOCK_SKEW_TOLERANCE_MS + LAST_LOOK_BEFORE_TTL_MS - 1, 'refused'],
    [
      'at the last look, the tolerance and a minute before it',
      CLOCK_SKEW_TOLERANCE_MS + LAST_LOOK_BEFORE_TTL_MS,
      'claimed',
    ],
  ])('a lock ending %s is %s', async (_label, beforeTtlMs, kind) => {
    const now = Date.now();
    const recordKey = `skew#${randomUUID()}`;
    const expiresAtS = Math.round(now / 1000 + 3_600);
    const first = await claim(
      table,
      {
        recordKey,
        tenant: `t-${randomUUID()}`,
        tool: 'skew',
        validation: 'v1',
        expiresAtS,
        lockEndsMs: now + 1_000,
        call: '{"args":{},"key":"k1","user":"ada"}',
      },
      now,
    );
    if (first.kind !== 'claimed') throw new Error('the claim was refused');

    const taken = await takeOver(
      table,
      {
        recordKey,
        fromClaimId: first.claim.claimId,
        validation: 'v1',
        lockEndsMs: expiresAtS * 1000 - beforeTtlMs,
        ttlSeconds: 3_600,
      },
      now + 2_000,
    );

    expect(taken.kind).toBe(kind);
    if (kind === 'refused') expect((await readCallRecord(table, recordKey))?.claimId).toBe(first.claim.claimId);
  });

  it('a retry 2 s behind is pending, and a worker 2 s ahead runs the call once: it is told it executed', async () => {
    // prepare: attempt 1 claims a refund and dies before the provider; a retry's attempt that commits is
    // held right after its commit (the explorer's interleaving)
    const clock = movableClock();
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    const never = gate();
    const committed = gate();
    const releaseCommit = gate();
    let providerCalls = 0;
    const provider = {
      async refund(request: RefundRequest) {
        providerCalls += 1;
        if (providerCalls === 1) await never.opened; // attempt 1 dies before the provider
        return world.provider.refund(request);
      },
    };
    const invoices = Object.create(world.invoices) as InvoiceStore;
    let holdCommit = true; // the worker behind is held right after its commit, if it gets that far
    invoices.recordRefund = async (tenant: string, receipt: RefundReceipt, by: string) => {
      const recorded = await world.invoices.recordRefund(tenant, receipt, by);
      if (holdCommit) {
        committed.open();
        await releaseCommit.opened;
      }
      return recorded;
    };
    const tool = refundTool.bind({ ...world, provider, invoices });
    const call = { idempotency_key: 'r1', invoice_id: invoice.invoice_id, amount: invoice.amount };
    const invoke = (ms: number) => world.runtime.invoke(tool, caller, call, deadline(ms));
    const dead = invoke(1_000);
    while (providerCalls === 0) await new Promise((resolve) => setImmediate(resolve));
    const ttlMs = (await world.runtime.readCall('refund', caller, 'r1'))!.expiresAtS * 1000;

    // act: 30 s before the TTL, a worker whose clock is 2 s behind retries with a 30 s deadline (its lock
    // ends 2 s before the TTL by its clock); 1 s before the TTL, a worker 2 s ahead retries
    clock.advance(ttlMs - 30_000 - 2_000 - Date.now());
    const behind = invoke(30_000);
    await Promise.race([committed.opened, behind]);
    holdCommit = false;
    clock.advance(ttlMs - 1_000 + 2_000 - Date.now());
    const ahead = await invoke(10_000);
    releaseCommit.open();
    const answers: ToolResult[] = [await behind, ahead];
    never.open();
    await dead;

    // assess: one refund, and exactly one answer says it executed
    expect(await world.ledgerRows(caller.tenant)).toHaveLength(1);
    expect(answers.filter((answer) => answer.ok && !answer.idempotent)).toHaveLength(1);
    expect(answers[0]).toMatchObject({ ok: false, status: 'pending' });
  });
});

const TTL_MS = 24 * 60 * 60 * 1000; // refund's default ttlSeconds

/** Answers that claim the effect (`idempotent: false`). */
function executedBy(answers: ToolResult[]): ToolResult[] {
  return answers.filter((answer) => answer.ok && !answer.idempotent);
}

/**
 * Found: a takeover set its lock from its own deadline but kept the first claim's TTL, so near the TTL its
 * lock outlived the record; past the TTL the running call counted as expired — a fresh claim ran beside
 * it (no answer said `idempotent: false`), erase deleted it as expired and took the invoice with it.
 * The rule now holds at every lock write: no lock ends after its record's TTL (a first claim is checked
 * against the TTL; a takeover that would outlive the record is refused, pending until the record expires).
 */
describe('a takeover whose lock would outlive the record’s TTL', () => {
  /** A refund whose first worker claims and dies before the provider; its provider calls counted. */
  async function abandonedRefund() {
    const clock = movableClock();
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    const never = gate();
    const diedBefore = gate();
    let providerCalls = 0;
    const provider = {
      async refund(request: RefundRequest) {
        providerCalls += 1;
        if (providerCalls === 1) {
          diedBefore.open();
          await never.opened; // attempt 1 dies before the provider
        }
        return world.provider.refund(request);
      },
    };
    const tool = refundTool.bind({ ...world, provider });
    const call = { idempotency_key: 'r1', invoice_id: invoice.invoice_id, amount: invoice.amount };
    const dead = world.runtime.invoke(tool, caller, call, deadline(1_000));
    await diedBefore.opened; // attempt 1 holds the claim and hangs
    return {
      clock,
      caller,
      invoke: (ms: number) => world.runtime.invoke(tool, caller, call, deadline(ms)),
      providerCalls: () => providerCalls,
      async end() {
        never.open();
        await dead;
      },
    };
  }

  it('is refused — pending until the record expires — and then a fresh claim runs the call once', async () => {
    const refund = await abandonedRefund();

    refund.clock.advance(TTL_MS - 30_000);
    const refused = await refund.invoke(120_000); // its lock would end ~90 s after the TTL
    const providerCallsBefore = refund.providerCalls();
    refund.clock.advance(60_000); // the record has expired
    const resend = await refund.invoke(10_000);
    await refund.end();

    expect(refused).toMatchObject({ ok: false, status: 'pending' });
    expect(providerCallsBefore).toBe(1); // the refused takeover ran nothing
    expect(await world.ledgerRows(refund.caller.tenant)).toHaveLength(1);
    expect(executedBy([refused, resend])).toHaveLength(1);
  });

  it('leaves nothing running past the TTL: erase then finds no call in flight and no money moved', async () => {
    const refund = await abandonedRefund();

    refund.clock.advance(TTL_MS - 30_000);
    const refused = await refund.invoke(120_000);
    refund.clock.advance(60_000);
    const report = await eraseTenant(
      world.client,
      { tenant: refund.caller.tenant, includeDomain: true },
      process.env,
      TABLES,
    );
    const moved = await world.ledgerRows(refund.caller.tenant);
    await refund.end(); // (the first worker, long past its deadline on Lambda, is let go only now)

    expect(refused).toMatchObject({ ok: false, status: 'pending' });
    expect(report.tables.idempotency).toMatchObject({ inFlight: 0 });
    expect(moved).toHaveLength(0);
  }, 90_000);
});

// Review 3, L1: the runtime accepts a deadline ending the tolerance before the TTL, and the TTL's seconds
// were rounded to the nearest — down by up to 0.5 s — so the first claim's lock ended 9.7 s before it.
describe('a first claim whose deadline ends exactly the tolerance before the TTL', () => {
  it('keeps the tolerance whatever the moment’s milliseconds: a MIN_TTL_SECONDS tool under a 15-min deadline', async () => {
    const { MIN_TTL_SECONDS, MAX_LOCK_SECONDS } = await import('../../lib/idempotency/tool');
    const { noteTool } = await import('../helpers/tools');
    const runtime = world.idempotencyRuntime();
    for (const intoSecondMs of [300, 499, 501, 999]) {
      const started = gate();
      const release = gate();
      const { tool } = noteTool(
        `min_ttl_${intoSecondMs}_${Date.now()}`,
        async (args) => {
          started.open();
          await release.opened;
          return { receipt: { note_id: 'n', text: args.text }, replayed: false };
        },
        { ttlSeconds: MIN_TTL_SECONDS },
      );
      const at = Math.floor(Date.now() / 1000) * 1000 + intoSecondMs;
      jest.spyOn(Date, 'now').mockReturnValue(at);
      const caller = identity();

      const running = runtime.invoke(
        tool,
        caller,
        { idempotency_key: 'k', text: 'x' },
        {
          getRemainingTimeInMillis: () => MAX_LOCK_SECONDS * 1000,
        },
      );
      await started.opened;
      const [claimed] = await world.idempotencyRecordKeys(caller.tenant);
      const record = await readCallRecord(table, claimed!.id);
      release.open();
      await running;
      jest.restoreAllMocks();

      const marginMs = record!.expiresAtS * 1000 - record!.lockEndsMs;
      expect(
        `${intoSecondMs} ms into the second: ${marginMs >= CLOCK_SKEW_TOLERANCE_MS ? 'kept' : `${marginMs} ms`}`,
      ).toBe(`${intoSecondMs} ms into the second: kept`);
    }
  });
});
