import { IdempotencyRecordStatus } from '@aws-lambda-powertools/idempotency';
import { paginateScan } from '@aws-sdk/lib-dynamodb';
import canonicalize from 'canonicalize';
import type { Services } from '../../app/services';
import { tableName } from '../../app/tables';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import type { CallRecord } from './tally';

/** What the tables say about one tenant after a scenario, against what its calls were answered. */
export interface Audit {
  /**
   * Effects that happened more than once, one line each: a second ledger movement for an invoice, a
   * second invoice, ticket or outbox message for one intent, a second close of a ticket.
   */
  readonly doubleEffects: string[];
  /** Answers that disagree with each other or with the tables (two receipts for one effect, say). */
  readonly disagreements: string[];
  /** Work left half done: money moved without a recorded refund, a message never delivered, a claim still held. */
  readonly unfinished: string[];
  /** What was counted, for the report. */
  readonly counted: { movements: number; invoices: number; tickets: number; messages: number };
}

/** The field of a receipt that names the effect it reports: the object made or changed. */
const EFFECT_OF_TOOL: Readonly<Record<string, string>> = {
  create_invoice: 'invoice_id',
  refund: 'invoice_id',
  create_ticket: 'ticket_key',
  close_ticket: 'ticket_key',
  send_email: 'message_id',
};

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    groups.set(key, [...(groups.get(key) ?? []), item]);
  }
  return groups;
}

/** The tenant's claims still INPROGRESS (a consistent, filtered Scan of the idempotency table). */
export async function claimsInFlight(services: Services, tenant: string): Promise<number> {
  let count = 0;
  const pages = paginateScan(
    { client: services.documents },
    {
      TableName: tableName('idempotency'),
      FilterExpression: '#tenant = :tenant AND #status = :inprogress',
      ExpressionAttributeNames: {
        '#tenant': DEFAULT_RECORD_ATTRIBUTES.tenant,
        '#status': DEFAULT_RECORD_ATTRIBUTES.status,
      },
      ExpressionAttributeValues: { ':tenant': tenant, ':inprogress': IdempotencyRecordStatus.INPROGRESS },
      ConsistentRead: true,
    },
  );
  for await (const page of pages) count += page.Items?.length ?? 0;
  return count;
}

/**
 * Reads one tenant's ledger, invoices, tickets and outbox, and its claims still in flight, and compares
 * them with the calls: every intent in a scenario names what it makes by a unique customer, title or
 * email, so a second row for one of them is a double effect. In-flight claims are waited on, within
 * `settleMs`, for the server's completer.
 */
export async function auditTenant(
  services: Services,
  tenant: string,
  calls: readonly CallRecord[],
  {
    intentsNamed = true,
    settleMs = 15_000,
  }: {
    /**
     * Whether every intent named its objects uniquely (a customer, a title, an email of its own), so
     * that two rows for one name are a double effect. Not so for fuzzed calls.
     * @default true
     */
    readonly intentsNamed?: boolean;
    /** How long claims still in flight are waited on. @default 15_000 */
    readonly settleMs?: number;
  } = {},
): Promise<Audit> {
  const doubleEffects: string[] = [];
  const disagreements: string[] = [];
  const unfinished: string[] = [];

  let inFlight = await claimsInFlight(services, tenant);
  const settleBy = Date.now() + settleMs;
  while (inFlight > 0 && Date.now() < settleBy) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    inFlight = await claimsInFlight(services, tenant);
  }
  if (inFlight > 0) unfinished.push(`${inFlight} claim(s) still INPROGRESS after ${settleMs} ms`);

  const [movements, invoices, tickets, messages] = await Promise.all([
    services.ledger.movements(tenant),
    services.invoices.list(tenant),
    services.tickets.list(tenant),
    services.outbox.list(tenant),
  ]);

  // Money: at most one movement per invoice, and the invoice records exactly that one.
  const invoiceById = new Map(invoices.map((invoice) => [invoice.invoice_id, invoice]));
  for (const [invoiceId, moved] of groupBy(movements, (movement) => movement.invoice_id)) {
    if (moved.length > 1) {
      doubleEffects.push(`invoice ${invoiceId}: ${moved.length} ledger movements (${moved.map((m) => m.movement_id)})`);
    }
    const recorded = invoiceById.get(invoiceId)?.refund;
    if (!recorded) unfinished.push(`invoice ${invoiceId}: money moved (${moved[0]?.movement_id}), no refund recorded`);
    else if (!moved.some((movement) => movement.movement_id === recorded.refund_id)) {
      disagreements.push(`invoice ${invoiceId}: records refund ${recorded.refund_id}, the ledger has another`);
    }
  }
  for (const invoice of invoices) {
    if (invoice.refund && !movements.some((movement) => movement.movement_id === invoice.refund?.refund_id)) {
      disagreements.push(`invoice ${invoice.invoice_id}: refund ${invoice.refund.refund_id} without a movement`);
    }
  }

  // One object per intent: each intent of a scenario has its own customer, title or email.
  if (intentsNamed) {
    for (const [customer, rows] of groupBy(invoices, (invoice) => invoice.customer)) {
      if (rows.length > 1) doubleEffects.push(`customer ${customer}: ${rows.length} invoices for one intent`);
    }
    for (const [title, rows] of groupBy(tickets, (ticket) => ticket.title)) {
      if (rows.length > 1) doubleEffects.push(`ticket "${title}": ${rows.length} tickets for one intent`);
    }
    for (const [email, rows] of groupBy(messages, (message) => `${message.to}|${message.subject}|${message.body}`)) {
      if (rows.length > 1) doubleEffects.push(`email ${email.split('|')[0]}: ${rows.length} outbox messages`);
    }
  }
  for (const message of messages) {
    if (message.status !== 'delivered') unfinished.push(`message ${message.message_id}: ${message.status}`);
  }

  // The answers: one first execution per effect at most, one receipt per effect, matching the tables.
  const settled = calls.filter((call) => call.receipt !== undefined);
  for (const [effect, group] of groupBy(
    settled,
    (call) => `${call.tool} ${call.receipt?.[EFFECT_OF_TOOL[call.tool] ?? '']}`,
  )) {
    const executed = group.filter((call) => call.outcome === 'executed').length;
    if (executed > 1) {
      const closes = effect.startsWith('close_ticket ');
      (closes ? doubleEffects : disagreements).push(`${effect}: ${executed} calls answered as first execution`);
    }
    const receipts = new Set(group.map((call) => canonicalize(call.receipt)));
    if (receipts.size > 1) disagreements.push(`${effect}: ${receipts.size} different receipts`);
  }
  const ticketByKey = new Map(tickets.map((ticket) => [ticket.ticket_key, ticket]));
  const messageIds = new Set(messages.map((message) => message.message_id));
  for (const call of settled) {
    const receipt = call.receipt ?? {};
    const problem = (() => {
      switch (call.tool) {
        case 'create_invoice':
          return invoiceById.has(String(receipt.invoice_id)) ? undefined : 'its invoice is not in the table';
        case 'refund':
          return invoiceById.get(String(receipt.invoice_id))?.refund?.refund_id === receipt.refund_id
            ? undefined
            : 'its refund is not the one the invoice records';
        case 'create_ticket':
          return ticketByKey.has(String(receipt.ticket_key)) ? undefined : 'its ticket is not in the table';
        case 'close_ticket': {
          const ticket = ticketByKey.get(String(receipt.ticket_key));
          return ticket?.status === 'closed' && ticket.resolution === receipt.resolution
            ? undefined
            : 'the ticket is not closed with its resolution';
        }
        case 'send_email':
          return messageIds.has(String(receipt.message_id)) ? undefined : 'its message is not in the outbox';
        default:
          return undefined;
      }
    })();
    if (problem) disagreements.push(`${call.tool} ${call.key}: ${problem}`);
  }

  return {
    doubleEffects,
    disagreements,
    unfinished,
    counted: {
      movements: movements.length,
      invoices: invoices.length,
      tickets: tickets.length,
      messages: messages.length,
    },
  };
}
