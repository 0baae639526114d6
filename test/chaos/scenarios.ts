import { setTimeout as sleep } from 'node:timers/promises';
import type { JsonObject } from '../../lib/client';
import { loseShare, startLossyProxy } from '../faults/lossy-proxy';
import { claimsInFlight } from './audit';
import { type ChaosContext, finishScenario, type ScenarioResult } from './scenario';
import { ChaosCaller, inBatches } from './tally';

/** One intent: a tool, the key every call of it carries, and its arguments. */
interface Intent {
  readonly tool: string;
  readonly key: string;
  readonly args: JsonObject;
}

/** What a scenario's set-up made for it to act on. */
interface Invoiced {
  readonly invoice_id: string;
  readonly amount: number;
}

/** Intents that create `count` invoices, each for its own customer (so a second invoice of one intent shows). */
function invoiceIntents(prefix: string, count: number): Intent[] {
  return Array.from({ length: count }, (_, i) => ({
    tool: 'create_invoice',
    key: `${prefix}-inv-${i}`,
    args: { customer: `cus_${prefix}_${i}`, amount: 1_000 + 7 * i },
  }));
}

function ticketIntents(prefix: string, count: number): Intent[] {
  return Array.from({ length: count }, (_, i) => ({
    tool: 'create_ticket',
    key: `${prefix}-tck-${i}`,
    args: { title: `${prefix} ticket ${i}`, body: 'The export fails on Mondays.' },
  }));
}

function emailIntent(prefix: string, i: number): Intent {
  return {
    tool: 'send_email',
    key: `${prefix}-mail-${i}`,
    args: {
      to: `agent+${prefix}-${i}@example.com`,
      subject: `Refund ${prefix} ${i}`,
      body: 'Your refund is on its way.',
    },
  };
}

function refundIntent(key: string, invoice: Invoiced): Intent {
  return { tool: 'refund', key, args: { invoice_id: invoice.invoice_id, amount: invoice.amount } };
}

function closeIntent(key: string, ticketKey: string): Intent {
  return { tool: 'close_ticket', key, args: { ticket_key: ticketKey, resolution: 'Fixed in the nightly build.' } };
}

/** Runs the set-up intents and returns the invoices (or tickets) they made; a failed one is left out and reported. */
async function invoicesFor(caller: ChaosCaller, intents: readonly Intent[], limit = 16): Promise<Invoiced[]> {
  const records = await inBatches(intents, limit, (intent) => caller.call(intent.tool, intent.key, intent.args));
  return records.flatMap((record) =>
    record.receipt ? [{ invoice_id: String(record.receipt.invoice_id), amount: Number(record.receipt.amount) }] : [],
  );
}

async function ticketsFor(caller: ChaosCaller, intents: readonly Intent[], limit = 16): Promise<string[]> {
  const records = await inBatches(intents, limit, (intent) => caller.call(intent.tool, intent.key, intent.args));
  return records.flatMap((record) => (record.receipt ? [String(record.receipt.ticket_key)] : []));
}

/**
 * 1. Lost responses: every refund on its own invoice, created first, through a proxy that loses a
 * share of all answers after the server ran the request. The client retries with the same key.
 */
export async function lostResponses(
  context: ChaosContext,
  { refunds = 120, lossShare = 0.3, concurrency = 16 } = {},
): Promise<ScenarioResult> {
  const name = `1 lost responses (${Math.round(lossShare * 100)} %)`;
  const tenant = `chaos-${context.runId}-lost`;
  const proxy = await startLossyProxy(context.server.url, loseShare(lossShare, 'chaos-lost'));
  try {
    const caller = new ChaosCaller(proxy.url, await context.mintToken(tenant));
    const startedAt = Date.now();
    await inBatches(invoiceIntents('s1', refunds), concurrency, async function invoiceThenRefund(intent) {
      const created = await caller.call(intent.tool, intent.key, intent.args);
      if (!created.receipt) return;
      const invoice = { invoice_id: String(created.receipt.invoice_id), amount: Number(created.receipt.amount) };
      const refund = refundIntent(`${intent.key}-refund`, invoice);
      await caller.call(refund.tool, refund.key, refund.args);
    });
    return await finishScenario(context, { name, tenant, caller, startedAt, proxy });
  } finally {
    await proxy.close();
  }
}

/**
 * 2. Same-key bursts: each intent sent `duplicates` times at once with one key, as a retrying client,
 * a second worker and an impatient agent would, across every tool; `pending` answers are retried.
 */
export async function sameKeyBursts(
  context: ChaosContext,
  { intents = 50, duplicates = 20, concurrentIntents = 10, lossShare = 0.1 } = {},
): Promise<ScenarioResult> {
  const name = `2 same-key bursts (${intents}×${duplicates})`;
  const tenant = `chaos-${context.runId}-same-key`;
  const proxy = await startLossyProxy(context.server.url, loseShare(lossShare, 'chaos-same-key'));
  try {
    const caller = new ChaosCaller(proxy.url, await context.mintToken(tenant));
    const startedAt = Date.now();
    const perKind = Math.ceil(intents / 5);
    const invoices = await invoicesFor(caller, invoiceIntents('s2-setup', perKind));
    const tickets = await ticketsFor(caller, ticketIntents('s2-setup', perKind));
    // Every tool in turn: create an invoice, refund one, open a ticket, close one, send an email.
    const creates = invoiceIntents('s2', perKind);
    const opens = ticketIntents('s2', perKind);
    const burst = Array.from({ length: perKind }, (_, i) => {
      const invoice = invoices[i];
      const ticket = tickets[i];
      return [
        creates[i],
        invoice && refundIntent(`s2-refund-${i}`, invoice),
        opens[i],
        ticket && closeIntent(`s2-close-${i}`, ticket),
        emailIntent('s2', i),
      ].filter((intent): intent is Intent => intent !== undefined);
    })
      .flat()
      .slice(0, intents);
    await inBatches(burst, concurrentIntents, function duplicated(intent) {
      return Promise.all(Array.from({ length: duplicates }, () => caller.call(intent.tool, intent.key, intent.args)));
    });
    return await finishScenario(context, {
      name,
      tenant,
      caller,
      startedAt,
      proxy,
      notes: [
        `${burst.length} intents × ${duplicates} concurrent calls with one key, ${concurrentIntents} intents at a time`,
      ],
    });
  } finally {
    await proxy.close();
  }
}

/**
 * 3. New-key bursts: many fresh keys at once for one effect — refunding one invoice and closing one
 * ticket (natural keys), sending one email (the dedupe window) — as agents that forgot their key do.
 */
export async function newKeyBursts(
  context: ChaosContext,
  { targets = 15, keysPerTarget = 12, concurrentTargets = 5, lossShare = 0.1 } = {},
): Promise<ScenarioResult> {
  const name = `3 new-key bursts (${keysPerTarget} keys/target)`;
  const tenant = `chaos-${context.runId}-new-key`;
  const proxy = await startLossyProxy(context.server.url, loseShare(lossShare, 'chaos-new-key'));
  try {
    const caller = new ChaosCaller(proxy.url, await context.mintToken(tenant));
    const startedAt = Date.now();
    const invoices = await invoicesFor(caller, invoiceIntents('s3', targets));
    const tickets = await ticketsFor(caller, ticketIntents('s3', targets));
    const groups: Intent[][] = [
      ...invoices.map((invoice, i) =>
        Array.from({ length: keysPerTarget }, (_, j) => refundIntent(`s3-refund-${i}-${j}`, invoice)),
      ),
      ...tickets.map((ticket, i) =>
        Array.from({ length: keysPerTarget }, (_, j) => closeIntent(`s3-close-${i}-${j}`, ticket)),
      ),
      ...Array.from({ length: Math.ceil(targets / 2) }, (_, i) =>
        Array.from({ length: keysPerTarget }, (_, j) => ({ ...emailIntent('s3', i), key: `s3-mail-${i}-${j}` })),
      ),
    ];
    await inBatches(groups, concurrentTargets, function freshKeys(group) {
      return Promise.all(group.map((intent) => caller.call(intent.tool, intent.key, intent.args)));
    });
    return await finishScenario(context, {
      name,
      tenant,
      caller,
      startedAt,
      proxy,
      notes: [
        `${groups.length} targets (${invoices.length} refunds, ${tickets.length} closes, ` +
          `${groups.length - invoices.length - tickets.length} emails) × ${keysPerTarget} fresh keys at once`,
      ],
    });
  } finally {
    await proxy.close();
  }
}

/**
 * 4. Store outage: calls start at a steady pace while the store first refuses every connection, then
 * black-holes every byte; then it comes back. Answers meanwhile must be 503 (retried by the client).
 */
export async function storeOutage(
  context: ChaosContext,
  { refuseMs = 1_500, blackholeMs = 1_500, leadMs = 1_000, intents = 120, paceMs = 40 } = {},
): Promise<ScenarioResult> {
  const outageMs = refuseMs + blackholeMs;
  const name = `4 store outage (${(outageMs / 1000).toFixed(1)} s)`;
  const tenant = `chaos-${context.runId}-outage`;
  const caller = new ChaosCaller(context.server.url, await context.mintToken(tenant));
  const startedAt = Date.now();
  const share = Math.floor(intents / 4);
  const invoices = await invoicesFor(caller, invoiceIntents('s4-setup', share));
  const tickets = await ticketsFor(caller, ticketIntents('s4-setup', Math.floor(share / 2)));
  // Refunds, emails, new invoices and closes, interleaved, so every kind of write meets the outage.
  const creates = invoiceIntents('s4', intents);
  const stream = Array.from({ length: intents }, (_, i) => {
    const invoice = invoices[i];
    const ticket = tickets[i];
    return [
      invoice && refundIntent(`s4-refund-${i}`, invoice),
      emailIntent('s4', i),
      creates[i],
      ticket && closeIntent(`s4-close-${i}`, ticket),
    ].filter((intent): intent is Intent => intent !== undefined);
  })
    .flat()
    .slice(0, intents);

  const window = { from: 0, to: 0 };
  const counts = context.store.counts;
  const before = { refused: counts.refused, blackholed: counts.blackholed };
  async function outage(): Promise<void> {
    await sleep(leadMs);
    window.from = Date.now();
    context.store.fail('refuse');
    await sleep(refuseMs);
    context.store.fail('blackhole');
    await sleep(blackholeMs);
    context.store.restore();
    window.to = Date.now();
  }
  const running: Promise<unknown>[] = [outage()];
  for (const intent of stream) {
    running.push(caller.call(intent.tool, intent.key, intent.args));
    await sleep(paceMs);
  }
  await Promise.all(running);

  const { tally } = caller;
  const during = tally.answeredAt.filter((at) => at >= window.from && at <= window.to).length;
  const unavailable = tally.serverErrors.filter((error) => error.status === 503);
  const unavailableDuring = unavailable.filter((error) => error.at >= window.from && error.at <= window.to).length;
  const lastUnavailableMs = Math.max(0, ...unavailable.map((error) => error.at - window.to));
  return finishScenario(context, {
    name,
    tenant,
    caller,
    startedAt,
    notes: [
      `outage ${window.to - window.from} ms: ${refuseMs} ms refused (${counts.refused - before.refused} connections reset), ` +
        `${blackholeMs} ms black-holed (${counts.blackholed - before.blackholed} connections); ` +
        `${stream.length} calls, one every ${paceMs} ms, the outage from ${leadMs} ms in`,
      `${during} answers arrived during the outage, ${unavailableDuring} of them 503; ` +
        `${unavailable.length - unavailableDuring} more 503 after it, the last ${(lastUnavailableMs / 1000).toFixed(1)} s after ` +
        `the store came back (the recovery lag)`,
    ],
  });
}

/** What the server's completer logged since `since`: its passes that scheduled or delivered rechecks, added up. */
function completerPasses(log: string, since: number): { rechecksScheduled: number; callsFinished: number } {
  const total = { rechecksScheduled: 0, callsFinished: 0 };
  for (const line of log.split('\n')) {
    if (!line.includes('"completer pass"')) continue;
    try {
      const entry = JSON.parse(line) as { timestamp?: string; rechecksScheduled?: number; callsFinished?: number };
      if (Date.parse(entry.timestamp ?? '') < since) continue;
      total.rechecksScheduled += entry.rechecksScheduled ?? 0;
      total.callsFinished += entry.callsFinished ?? 0;
    } catch {
      // a line cut by the kill
    }
  }
  return total;
}

/**
 * 5. SIGKILL of the server mid-burst, then a restart on the same port: DynamoDB Local runs on as its
 * own process; the clients keep their keys and retry across the restart. Claims the dead server held
 * answer `pending` until their lock expires, then the retry (or the server's completer) finishes the
 * call with the same downstream key: the ledger must still show one movement per invoice.
 */
export async function killAndRestart(
  context: ChaosContext,
  { refunds = 60, others = 20, killAtMovements = 15, downMs = 1_000, killWithinMs = 20_000 } = {},
): Promise<ScenarioResult> {
  const name = '5 SIGKILL mid-burst + restart';
  const tenant = `chaos-${context.runId}-kill`;
  const caller = new ChaosCaller(context.server.url, await context.mintToken(tenant));
  const startedAt = Date.now();
  const invoices = await invoicesFor(caller, invoiceIntents('s5-setup', refunds));
  const burst: Intent[] = [
    ...invoices.map((invoice, i) => refundIntent(`s5-refund-${i}`, invoice)),
    ...Array.from({ length: others }, (_, i) => emailIntent('s5', i)),
    ...invoiceIntents('s5', others),
  ];
  const running = Promise.all(burst.map((intent) => caller.call(intent.tool, intent.key, intent.args)));

  // Kill once money has started to move, while the rest of the burst is still running.
  const violations: string[] = [];
  const killBy = Date.now() + killWithinMs;
  let moved = 0;
  while (Date.now() < killBy) {
    moved = (await context.services.ledger.movements(tenant)).length;
    if (moved >= killAtMovements || caller.tally.inFlight === 0) break;
    await sleep(10);
  }
  await context.server.kill();
  const killedAt = Date.now();
  const inFlightAtKill = caller.tally.inFlight;
  const [movements, refunded, claimsAtKill] = await Promise.all([
    context.services.ledger.movements(tenant),
    context.services.invoices.list(tenant).then((rows) => rows.filter((invoice) => invoice.refund).length),
    claimsInFlight(context.services, tenant),
  ]);
  if (inFlightAtKill === 0) violations.push('kill: the burst had ended before the kill; nothing was killed mid-call');
  context.log(
    `  killed the server: ${inFlightAtKill} calls in flight, ${claimsAtKill} claims held, ` +
      `${movements.length - refunded} refunds with money moved and no receipt stored`,
  );

  await sleep(downMs);
  const restartAt = Date.now();
  await context.server.start();
  const restartedAt = Date.now();
  await running;
  const settledAt = Date.now();
  const passes = completerPasses(context.server.output(), killedAt);
  return finishScenario(context, {
    name,
    tenant,
    caller,
    startedAt,
    violations,
    notes: [
      `killed once ${moved} of ${invoices.length} refunds had moved money; at the kill ${inFlightAtKill} of ${burst.length} calls ` +
        `were in flight, the dead server held ${claimsAtKill} claims, and ${movements.length - refunded} refunds had moved ` +
        `money with no receipt stored`,
      `down ${restartAt - killedAt} ms, restart took ${restartedAt - restartAt} ms, ` +
        `every call settled ${settledAt - restartedAt} ms after the restart; ` +
        `the completer scheduled ${passes.rechecksScheduled} rechecks and finished ${passes.callsFinished} calls, the clients' retries the rest`,
    ],
  });
}
