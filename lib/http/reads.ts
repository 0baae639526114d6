import type { Logger } from '@aws-lambda-powertools/logger';
import type { InvoiceStore } from '../domain/invoices';
import type { TicketStore } from '../domain/tickets';
import type { ToolRuntime } from '../idempotency';
import type { Services } from '../services';
import { type LambdaHandler, withErrorBoundary } from './boundary';
import { type ApiEvent, identityFromEvent, pathParameter, UNAUTHORIZED } from './event';
import { errorResponse, type HttpResponse, json } from './status';

/** A tool name as tools are named (`defineTool` refuses others): anything else names no operation. */
const TOOL_NAME = /^[a-z][a-z0-9_]{0,62}$/;

/**
 * `GET /tools/{tool}/operations/{key}`: the caller's own record of a client key. The record is keyed
 * by tool, tenant, user and key, so an unknown tool simply has no record (404): the poll needs no
 * list of tools, and its bundle carries none.
 */
export async function handleGetOperation(runtime: ToolRuntime, event: ApiEvent): Promise<HttpResponse> {
  const identity = identityFromEvent(event);
  if (!identity) return errorResponse('unauthorized', UNAUTHORIZED);
  const name = pathParameter(event, 'tool');
  const key = pathParameter(event, 'key');
  const tool = name !== undefined && TOOL_NAME.test(name) ? name : undefined;
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

/** `GET /tools/{tool}/operations/{key}`. */
export function getOperationHandler(runtime: ToolRuntime, logger?: Logger): LambdaHandler {
  return withErrorBoundary('get_operation', logger, function getOperation(event) {
    return handleGetOperation(runtime, event);
  });
}

/** `GET /invoices/{invoice_id}`. */
export function getInvoiceHandler(services: Pick<Services, 'invoices' | 'logger'>): LambdaHandler {
  return withErrorBoundary('get_invoice', services.logger, function getInvoice(event) {
    return handleGetInvoice(services.invoices, event);
  });
}

/** `GET /tickets/{ticket_key}`. */
export function getTicketHandler(services: Pick<Services, 'tickets' | 'logger'>): LambdaHandler {
  return withErrorBoundary('get_ticket', services.logger, function getTicket(event) {
    return handleGetTicket(services.tickets, event);
  });
}
