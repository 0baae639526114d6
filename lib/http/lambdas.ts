import type { Context } from 'aws-lambda';
import { INTERNAL_MESSAGE, isTransientAwsError } from '../idempotency/errors';
import type { ToolDefinition } from '../idempotency/tool';
import { services } from '../services';
import type { ToolName } from '../tools';
import type { ApiEvent } from './event';
import { handleGetInvoice, handleGetOperation, handleGetTicket, handleListTools, handleToolWrite } from './handlers';
import { errorResponse, type HttpResponse, json } from './status';

export type LambdaHandler = (event: ApiEvent, context: Context) => Promise<HttpResponse>;

/**
 * The last line of defence of every entry point: whatever escapes becomes a JSON `internal` (or
 * `unavailable` for a store outage) answer, logged, and never serialised into the response.
 */
function withErrorBoundary(name: string, handle: LambdaHandler): LambdaHandler {
  return async function boundary(event, context) {
    try {
      return await handle(event, context);
    } catch (error) {
      services().logger.error('unhandled error', { handler: name, error: error as Error });
      return isTransientAwsError(error)
        ? errorResponse('unavailable', 'a store is unavailable; retry later')
        : errorResponse('internal', INTERNAL_MESSAGE);
    }
  };
}

/** The Lambda handler of one tool's `POST /tools/{tool}`. */
export function toolLambda(name: ToolName): LambdaHandler {
  return withErrorBoundary(name, async function writeTool(event, context) {
    const { runtime, tools, logger } = services();
    const tool: ToolDefinition = tools[name];
    return handleToolWrite(runtime, tool, event, context, logger);
  });
}

export const listToolsLambda = withErrorBoundary('list_tools', async function listTools(event) {
  return handleListTools(services().tools, event);
});

export const getOperationLambda = withErrorBoundary('get_operation', async function getOperation(event) {
  const { runtime, tools } = services();
  return handleGetOperation(runtime, tools, event);
});

export const getInvoiceLambda = withErrorBoundary('get_invoice', async function getInvoice(event) {
  return handleGetInvoice(services().invoices, event);
});

export const getTicketLambda = withErrorBoundary('get_ticket', async function getTicket(event) {
  return handleGetTicket(services().tickets, event);
});

export const healthLambda: LambdaHandler = async function health() {
  return json(200, { ok: true });
};

/** Anything no route matches: the same JSON 404 as every other miss (an unknown tool included). */
export const notFoundLambda: LambdaHandler = async function notFound(event) {
  return errorResponse(
    'not_found',
    `route: no route for ${event.requestContext?.http?.method ?? ''} ${event.rawPath ?? ''}`.trim(),
  );
};
