import type { Outbox } from '../../app/domain/outbox';
import type { RefundRequest } from '../../app/payments/provider';
import { TABLES } from '../../app/tables';
import { refund as refundTool } from '../../app/tools/refund';
import { sendEmail } from '../../app/tools/send-email';
import { eraseTenant } from '../../lib/admin/erase-tenant';
import type { ToolResult } from '../../lib/idempotency/types';
import { gate } from '../helpers/tools';
import { createWorld, deadline, identity, type World } from '../helpers/world';
import { movableClock } from './helpers';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

const TTL_MS = 24 * 60 * 60 * 1000; // refund's default ttlSeconds
const WINDOW_MS = 10 * 60 * 1000; // send_email's dedupe window

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

/**
 * Found: after its window, an intent was replaced by the next identical call even while its holder was
 * abandoned; the holder's retry (asked inside its own window) then took the new intent's answer for its
 * own effect — its own delivered message was never claimed by an `idempotent: false`. The rule now: an
 * ended window's intent is replaced only once its holder has settled; until then the new call is pending.
 */
describe('a dedupe-window intent after its window while its holder is abandoned', () => {
  it('is not replaced until the holder settles: each delivered message is claimed by its own call', async () => {
    // prepare: k1's worker delivers its email and dies before storing the receipt
    const clock = movableClock();
    const caller = identity();
    const never = gate();
    const delivered = gate();
    const outbox = Object.create(world.outbox) as Outbox;
    let deliveries = 0;
    outbox.deliver = async (tenant: string, messageId: string, at: string, by: string) => {
      const deliveredBy = await world.outbox.deliver(tenant, messageId, at, by);
      deliveries += 1;
      if (deliveries === 1) {
        delivered.open();
        await never.opened;
      }
      return deliveredBy;
    };
    const tool = sendEmail.bind({ ...world, outbox });
    const email = { to: 'ada@example.com', subject: 'hi', body: 'the same body' };
    const call = (key: string, ms = 5_000) =>
      world.runtime.invoke(tool, caller, { ...email, idempotency_key: key }, deadline(ms));
    const dead = call('k1', 1_000);
    await delivered.opened;

    // act: just after k1's window, the same email under a fresh key is a new intent (as documented),
    // but k1 is still in flight: k2 waits
    clock.advance(WINDOW_MS + 1_000);
    const k2First = await call('k2');
    // k1 is retried with its own key (or the completer finishes it): it was asked inside its own window
    const k1 = await call('k1');
    clock.advance('retry_after_ms' in k2First ? k2First.retry_after_ms + 1 : 0); // k2 retries when told to
    const k2 = await call('k2');
    never.open();
    await dead;

    expect(k2First).toMatchObject({ ok: false, status: 'pending' });
    // assess: every delivered message is claimed by exactly one answer
    const messages = (await world.outbox.list(caller.tenant)).filter((m) => m.status === 'delivered');
    expect(messages).toHaveLength(2); // k1's (before the window ended) and k2's (after)
    const claimed = executedBy([k1, k2]).map((answer) => (answer.ok ? answer.receipt.message_id : undefined));
    expect(claimed.sort()).toEqual(messages.map((m) => m.message_id).sort());
    // k1's answer names k1's own message, not the one k2 sent ten minutes later
    expect(k1).toMatchObject({ ok: true, idempotent: false });
  });
});
