import type { ErrorCode, Identity, JsonObject, ToolRuntime } from '../idempotency';
import type { InvoiceStore } from './invoices';
import type { TicketStore } from './tickets';

/** What a read answers, whatever carries it (an HTTP body, an MCP tool result). */
export type ReadAnswer<T extends object> =
  | ({ ok: true } & T)
  | { ok: false; error: { code: ErrorCode; message: string } };

function failure(code: ErrorCode, message: string): ReadAnswer<never> {
  return { ok: false, error: { code, message } };
}

/** What the operations poll reads: the runtime's records, for the tools the API serves. */
export interface OperationSource {
  readonly runtime: ToolRuntime;
  readonly toolNames: readonly string[];
}

/**
 * The caller's own record of a client key: completed with its receipt, or pending. The record is keyed
 * by tool, tenant, user and key, so another's key or an expired one is `not_found`; so is an unknown
 * tool, without a read.
 */
export async function readOperation(
  { runtime, toolNames }: OperationSource,
  caller: Identity,
  tool: string,
  key: string,
): Promise<ReadAnswer<{ status: 'completed' | 'pending'; key: string; receipt?: JsonObject }>> {
  if (!toolNames.includes(tool)) return failure('not_found', `tool: no tool ${tool}`);
  let operation: Awaited<ReturnType<ToolRuntime['lookup']>>;
  try {
    operation = await runtime.lookup(tool, caller, key);
  } catch {
    return failure('unavailable', 'the idempotency store is unavailable; retry later');
  }
  if (!operation) return failure('not_found', `key: no operation ${key} for ${tool}`);
  return operation.status === 'completed'
    ? { ok: true, status: 'completed', key, receipt: operation.receipt }
    : { ok: true, status: 'pending', key };
}

/** The caller's tenant's invoice, with its refund receipt or null. */
export async function readInvoice(
  invoices: InvoiceStore,
  caller: Identity,
  invoiceId: string,
): Promise<ReadAnswer<{ invoice: JsonObject }>> {
  const invoice = await invoices.get(caller.tenant, invoiceId);
  if (!invoice) return failure('not_found', `invoice_id: no invoice ${invoiceId}`);
  const { tenant: _tenant, refund, ...fields } = invoice;
  return { ok: true, invoice: { ...fields, refunded: refund !== undefined, refund: refund ?? null } };
}

/** The caller's tenant's ticket. */
export async function readTicket(
  tickets: TicketStore,
  caller: Identity,
  ticketKey: string,
): Promise<ReadAnswer<{ ticket: JsonObject }>> {
  const ticket = await tickets.get(caller.tenant, ticketKey);
  if (!ticket) return failure('not_found', `ticket_key: no ticket ${ticketKey}`);
  const { tenant: _tenant, ...fields } = ticket;
  return { ok: true, ticket: fields as unknown as JsonObject };
}
