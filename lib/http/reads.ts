import type { Logger } from '@aws-lambda-powertools/logger';
import type { OperationStatus } from '../api/next-step';
import type { InvoiceStore } from '../domain/invoices';
import { type OperationSource, type ReadAnswer, readInvoice, readOperation, readTicket } from '../domain/reads';
import type { TicketStore } from '../domain/tickets';
import type { Services } from '../services';
import { type LambdaHandler, withErrorBoundary } from './boundary';
import { type ApiEvent, identityFromEvent, pathParameter, UNAUTHORIZED } from './event';
import { errorResponse, type HttpResponse, toReadResponse } from './status';

/** A read's answer as an HTTP response: 200 with the body and its next step, or the error's status. */
function answerResponse(answer: ReadAnswer<{ status?: OperationStatus }>): HttpResponse {
  return toReadResponse(answer);
}

/** `GET /tools/{tool}/operations/{key}`: the caller's own record of a client key. */
export async function handleGetOperation(source: OperationSource, event: ApiEvent): Promise<HttpResponse> {
  const identity = identityFromEvent(event);
  if (!identity) return errorResponse('unauthorized', UNAUTHORIZED);
  const tool = pathParameter(event, 'tool');
  const key = pathParameter(event, 'key');
  if (!tool || !key) return errorResponse('not_found', 'key: no operation');
  return answerResponse(await readOperation(source, identity, tool, key));
}

/** `GET /invoices/{invoice_id}`: the caller's tenant's invoice, with its refund receipt or null. */
export async function handleGetInvoice(invoices: InvoiceStore, event: ApiEvent): Promise<HttpResponse> {
  const identity = identityFromEvent(event);
  if (!identity) return errorResponse('unauthorized', UNAUTHORIZED);
  const id = pathParameter(event, 'invoice_id');
  if (!id) return errorResponse('not_found', 'invoice_id: no invoice');
  return answerResponse(await readInvoice(invoices, identity, id));
}

/** `GET /tickets/{ticket_key}`: the caller's tenant's ticket. */
export async function handleGetTicket(tickets: TicketStore, event: ApiEvent): Promise<HttpResponse> {
  const identity = identityFromEvent(event);
  if (!identity) return errorResponse('unauthorized', UNAUTHORIZED);
  const key = pathParameter(event, 'ticket_key');
  if (!key) return errorResponse('not_found', 'ticket_key: no ticket');
  return answerResponse(await readTicket(tickets, identity, key));
}

/** `GET /tools/{tool}/operations/{key}`. */
export function getOperationHandler(source: OperationSource, logger: Logger): LambdaHandler {
  return withErrorBoundary('get_operation', logger, function getOperation(event) {
    return handleGetOperation(source, event);
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
