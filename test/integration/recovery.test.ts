// Rule 5 (docs/state-machine.md): exactly one answer per effect says idempotent: false.
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Outbox } from '../../app/domain/outbox';
import { tableName } from '../../app/tables';
import { sendEmail } from '../../app/tools/send-email';
import type { ToolResult } from '../../lib/idempotency/types';
import { advanceClock, movableClock } from '../helpers/clock';
import { gate } from '../helpers/tools';
import { createWorld, deadline, identity, type World } from '../helpers/world';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

/**
 * Fails the next UpdateItem on the idempotency table — the one that stores a result — with a
 * throttling error, as DynamoDB would: the side effect has run, its receipt is not stored.
 */
function failNextResultWrite(client: DynamoDBClient): { restore: () => void } {
  const name = `failResultWrite-${randomUUID()}`;
  let armed = true;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { TableName?: string };
      if (armed && context.commandName === 'UpdateItemCommand' && input.TableName === tableName('idempotency')) {
        armed = false;
        throw Object.assign(new Error('Rate exceeded'), {
          name: 'ThrottlingException',
          $fault: 'client',
          $metadata: { httpStatusCode: 400 },
        });
      }
      return next(args);
    },
    { step: 'initialize', name },
  );
  return { restore: () => client.middlewareStack.remove(name) };
}

describe('a result write that fails after the side effect ran', () => {
  it('answers unavailable, then the retry finds the refund it made and finishes it: one movement, one executed answer', async () => {
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    const call = { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: invoice.amount };
    const failure = failNextResultWrite(world.client);

    // A lock of 5 s: a call read right after the first is still inside it, on a loaded machine too (with 1 s,
    // a CI run that shared the cores with a mutation run read it past the lock and took it over).
    const first = await world.runtime.invoke(world.refund, caller, call, deadline(5_000));
    failure.restore();
    // Answered at once (attach.test holds a duplicate that waits for the lock's end and takes over).
    const unattached = world.idempotencyRuntime({ attach: { maxWaitMs: 0 } });
    const whileLocked = await unattached.invoke(world.refund, caller, call, deadline());
    advanceClock(6_000); // past the first call's lock
    const retry = await world.runtime.invoke(world.refund, caller, call, deadline());

    expect(first).toEqual({
      ok: false,
      error: { code: 'unavailable', message: expect.stringMatching(/may have been applied; retry with the same key/) },
    });
    expect(whileLocked).toMatchObject({ ok: false, status: 'pending' });
    // The first answer never said it executed; the refund on the invoice is this call's: the retry says so.
    expect(retry).toMatchObject({ ok: true, idempotent: false, key: 'k1' });
    const stored = await world.invoices.get(caller.tenant, invoice.invoice_id);
    expect(retry.ok && retry.receipt).toEqual(stored?.refund);
    expect(await world.ledgerRows(caller.tenant)).toHaveLength(1);
  });

  it('answers unavailable, then the retry finds the invoice it created (its id is derived from the key)', async () => {
    const caller = identity();
    const call = { idempotency_key: 'k1', customer: 'cus_ada', amount: 700 };
    const failure = failNextResultWrite(world.client);

    const first = await world.runtime.invoke(world.tools.create_invoice!, caller, call, deadline(1_000));
    failure.restore();
    advanceClock(2_000);
    const retry = await world.runtime.invoke(world.tools.create_invoice!, caller, call, deadline());

    expect(first).toMatchObject({ ok: false, error: { code: 'unavailable' } });
    expect(retry).toMatchObject({ ok: true, idempotent: false, receipt: { customer: 'cus_ada', amount: 700 } });
    expect(await world.invoices.list(caller.tenant)).toHaveLength(1);
  });
});

describe('creates after the record expired', () => {
  it('a create_invoice retried after the 24 h TTL finds the invoice it made instead of making a second', async () => {
    const caller = identity();
    const call = { idempotency_key: 'k1', customer: 'cus_ada', amount: 900 };
    const first = await world.runtime.invoke(world.tools.create_invoice!, caller, call, deadline());

    advanceClock(25 * 60 * 60 * 1000);
    const afterTtl = await world.runtime.invoke(world.tools.create_invoice!, caller, call, deadline());

    expect(afterTtl).toEqual({ ...first, idempotent: true });
    expect(await world.invoices.list(caller.tenant)).toHaveLength(1);
  });
});

describe('natural keys under races', () => {
  it('closes a ticket once under 10 concurrent calls with 10 fresh keys', async () => {
    const caller = identity();
    await world.tickets.create({
      tenant: caller.tenant,
      ticket_key: 'tck_1',
      title: 't',
      status: 'open',
      created_at: new Date().toISOString(),
    });

    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        world.runtime.invoke(
          world.tools.close_ticket!,
          caller,
          { idempotency_key: `k${i}`, ticket_key: 'tck_1', resolution: 'fixed' },
          deadline(),
        ),
      ),
    );

    const executed = results.filter((result) => result.ok && !result.idempotent);
    expect(executed).toHaveLength(1);
    for (const result of results) expect(result).toMatchObject({ ok: true, receipt: { status: 'closed' } });
    expect(await world.tickets.get(caller.tenant, 'tck_1')).toMatchObject({ status: 'closed', resolution: 'fixed' });
  });
});

describe("the outbox's deliver-once guard", () => {
  it('a worker that dies between queueing and delivering: the retry delivers, once', async () => {
    const caller = identity();
    const never = gate();
    const queued = gate();
    const deliveries: boolean[] = [];
    const outbox = Object.assign(Object.create(world.outbox), {
      async deliver(tenant: string, messageId: string, at: string, by: string) {
        if (deliveries.length === 0) {
          deliveries.push(false);
          queued.open();
          await never.opened; // the worker dies after queueing, before delivering
        }
        // Delivered by this deliver: the message was still queued before it.
        const before = await world.outbox.get(tenant, messageId);
        const deliveredBy = await world.outbox.deliver(tenant, messageId, at, by);
        deliveries.push(before?.status === 'queued');
        return deliveredBy;
      },
    });
    const tool = sendEmail.bind({ ...world, outbox });
    const call = { idempotency_key: 'k1', to: 'a@example.com', subject: 's', body: 'b' };

    void world.runtime.invoke(tool, caller, call, deadline(1_000));
    await queued.opened;
    advanceClock(2_000);
    const retry = await world.runtime.invoke(tool, caller, call, deadline());
    never.open();

    expect(retry).toMatchObject({ ok: true, idempotent: false, key: 'k1' });
    const messages = await world.outbox.list(caller.tenant);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ status: 'delivered' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(deliveries.filter((delivered) => delivered)).toHaveLength(1);
  });
});

const WINDOW_MS = 10 * 60 * 1000; // send_email's dedupe window

/** Answers that claim the effect (`idempotent: false`). */
function executedBy(answers: ToolResult[]): ToolResult[] {
  return answers.filter((answer) => answer.ok && !answer.idempotent);
}

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
