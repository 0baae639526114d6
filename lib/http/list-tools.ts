import type { Logger } from '@aws-lambda-powertools/logger';
import { describeTool, type ToolDescription, type ToolListing } from '../tools/catalog';
import { type LambdaHandler, withErrorBoundary } from './boundary';
import { type ApiEvent, identityFromEvent, UNAUTHORIZED } from './event';
import { errorResponse, type HttpResponse, json } from './status';

/** `GET /tools`: every tool's name, description, JSON Schemas, MCP-style annotations and key kinds. */
export function handleListTools(listing: readonly ToolDescription[], event: ApiEvent): HttpResponse {
  if (!identityFromEvent(event)) return errorResponse('unauthorized', UNAUTHORIZED);
  return json(200, { tools: listing });
}

/**
 * `GET /tools`: the listing of `tools`, described once when the handler is built — generating the JSON
 * Schemas is the costly part, and it never changes for a deployed function.
 */
export function listToolsHandler(tools: readonly ToolListing[], logger: Logger): LambdaHandler {
  const listing = tools.map(describeTool);
  return withErrorBoundary('list_tools', logger, async function listTools(event) {
    return handleListTools(listing, event);
  });
}
