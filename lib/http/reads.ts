import { TOOL_NAMES } from '../api/routes';
import type { InvoiceStore } from '../domain/invoices';
import type { TicketStore } from '../domain/tickets';
import type { ToolRuntime } from '../idempotency/runtime';
import { type ApiEvent, identityFromEvent, pathParameter, UNAUTHORIZED } from './event';
import { errorResponse, type HttpResponse, json } from './status';

/** `GET /tools/{tool}/operations/{key}`: the caller's own record of a client key. */
export async function handleGetOperation(runtime: ToolRuntime, event: ApiEvent): Promise<HttpResponse> {
  const identity = identityFromEvent(event);
  if (!identity) return errorResponse('unauthorized', UNAUTHORIZED);
  const name = pathParameter(event, 'tool');
  const key = pathParameter(event, 'key');
  const tool = TOOL_NAMES.find((known) => known === name);
  if (!tool) return errorResponse('not_found', `tool: no tool ${name ?? ''}`);
  if (!key) return errorResponse('not_found', 'key: no operation');
  try {
    const operation = await runtime.lookup(tool, identity, key);
    if (!operation) return errorResponse('not_found', `key: no operation ${key} for ${tool}`);
    return json(200, {
      ok: true,
      status: operation.status,
      key,
      ...(operation.status === 'completed' ? { receipt: operation.receipt } : {}),
    });
  } catch {
    return errorResponse('unavailable', 'the idempotency store is unavailable; retry later');
  }
}

/** `GET /invoices/{invoice_id}`: the caller's tenant's invoice, with its refund receipt or null. */
export async function handleGetInvoice(invoices: InvoiceStore, event: ApiEvent): Promise<HttpResponse> {
  const identity = identityFromEvent(event);
  if (!identity) return errorResponse('unauthorized', UNAUTHORIZED);
  const id = pathParameter(event, 'invoice_id');
  const invoice = id ? await invoices.get(identity.tenant, id) : undefined;
  if (!invoice) return errorResponse('not_found', `invoice_id: no invoice ${id ?? ''}`);
  const { tenant: _tenant, refund, ...fields } = invoice;
  return json(200, { ok: true, invoice: { ...fields, refunded: refund !== undefined, refund: refund ?? null } });
}

/** `GET /tickets/{ticket_key}`: the caller's tenant's ticket. */
export async function handleGetTicket(tickets: TicketStore, event: ApiEvent): Promise<HttpResponse> {
  const identity = identityFromEvent(event);
  if (!identity) return errorResponse('unauthorized', UNAUTHORIZED);
  const key = pathParameter(event, 'ticket_key');
  const ticket = key ? await tickets.get(identity.tenant, key) : undefined;
  if (!ticket) return errorResponse('not_found', `ticket_key: no ticket ${key ?? ''}`);
  const { tenant: _tenant, ...fields } = ticket;
  return json(200, { ok: true, ticket: fields });
}
