import type { OperationStatus } from '../api/next-step';
import type { ErrorCode, Identity, JsonObject, ToolRuntime } from '../idempotency';
import { INTERNAL_MESSAGE, StoredFailureError, ToolError } from '../idempotency/errors';
import { type InvoiceStore, MAX_INVOICE_ID_LENGTH } from './invoices';
import { MAX_TICKET_KEY_LENGTH, type TicketStore } from './tickets';

/** The longest client key a write accepts (`clientKeySchema`). */
const MAX_CLIENT_KEY_LENGTH = 255;

/** A caller's value as an error message may echo it: at most 64 characters. */
function clip(value: string): string {
  return value.length > 64 ? `${value.slice(0, 64)}…` : value;
}

/** What a read answers, whatever carries it (an HTTP body, an MCP tool result). */
export type ReadAnswer<T extends object> =
  | ({ ok: true } & T)
  | {
      ok: false;
      /** `get_operation` only: the error is the call's stored outcome, not a refusal of this read. */
      idempotent?: true;
      error: { code: ErrorCode; message: string };
    };

function failure(code: ErrorCode, message: string): ReadAnswer<never> {
  return { ok: false, error: { code, message } };
}

/** What the operations poll reads: the runtime's records, for the tools the API serves. */
export interface OperationSource {
  readonly runtime: ToolRuntime;
  readonly toolNames: readonly string[];
}

const STALLED_HINT =
  'the server stopped retrying this call after its attempts failed (its effect may or may not have happened): resend the same arguments with the same key to run it again — it cannot act twice — otherwise it stays unfinished until its record expires';

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
): Promise<ReadAnswer<{ status: OperationStatus; key: string; receipt?: JsonObject; hint?: string }>> {
  if (!toolNames.includes(tool)) return failure('not_found', `tool: no tool ${clip(tool)}`);
  // A key no write could have used (over 255 characters) names no operation: no read is sent.
  if (key.length > MAX_CLIENT_KEY_LENGTH) return failure('not_found', `key: no operation ${clip(key)} for ${tool}`);
  let operation: Awaited<ReturnType<ToolRuntime['lookup']>>;
  try {
    operation = await runtime.lookup(tool, caller, key);
  } catch (error) {
    const message = error instanceof ToolError && error.expose ? error.message : INTERNAL_MESSAGE;
    // The call ended with this error: its outcome, as the call answered it.
    if (error instanceof StoredFailureError)
      return { ok: false, idempotent: true, error: { code: error.code, message } };
    // The runtime classified and logged it: an outage is `unavailable`, anything else `internal`.
    if (error instanceof ToolError) return failure(error.code, message);
    throw error;
  }
  if (!operation) return failure('not_found', `key: no operation ${key} for ${tool}`);
  if (operation.status === 'completed') return { ok: true, status: 'completed', key, receipt: operation.receipt };
  if (operation.status === 'pending') return { ok: true, status: 'pending', key };
  if (operation.status === 'stalled') return { ok: true, status: 'stalled', key, hint: STALLED_HINT };
  return {
    ok: true,
    status: 'abandoned',
    key,
    hint: 'the call stopped before it finished (its worker died, or its attempt failed): the server retries it, the first time within a minute, or resend the same arguments with the same key now — neither can act twice',
  };
}

/** The caller's tenant's invoice, with its refund receipt or null. */
export async function readInvoice(
  invoices: InvoiceStore,
  caller: Identity,
  invoiceId: string,
): Promise<ReadAnswer<{ invoice: JsonObject }>> {
  // An id longer than any invoice's names none: DynamoDB would refuse the key (a 500), so no read is sent.
  if (invoiceId.length > MAX_INVOICE_ID_LENGTH)
    return failure('not_found', `invoice_id: no invoice ${clip(invoiceId)}`);
  const invoice = await invoices.get(caller.tenant, invoiceId);
  if (!invoice) return failure('not_found', `invoice_id: no invoice ${invoiceId}`);
  // The calls that wrote it (`created_by`, `refunded_by`) are the protocol's, not the caller's.
  const { tenant: _tenant, refund, created_by: _created, refunded_by: _refunded, ...fields } = invoice;
  return { ok: true, invoice: { ...fields, refunded: refund !== undefined, refund: refund ?? null } };
}

/** The caller's tenant's ticket. */
export async function readTicket(
  tickets: TicketStore,
  caller: Identity,
  ticketKey: string,
): Promise<ReadAnswer<{ ticket: JsonObject }>> {
  if (ticketKey.length > MAX_TICKET_KEY_LENGTH) return failure('not_found', `ticket_key: no ticket ${clip(ticketKey)}`);
  const ticket = await tickets.get(caller.tenant, ticketKey);
  if (!ticket) return failure('not_found', `ticket_key: no ticket ${ticketKey}`);
  const { tenant: _tenant, created_by: _created, closed_by: _closed, ...fields } = ticket;
  return { ok: true, ticket: fields as unknown as JsonObject };
}
