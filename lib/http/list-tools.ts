import type { Logger } from '@aws-lambda-powertools/logger';
import { describeTool, type ToolListing } from '../tools/catalog';
import { type LambdaHandler, withErrorBoundary } from './boundary';
import { type ApiEvent, identityFromEvent, UNAUTHORIZED } from './event';
import { errorResponse, type HttpResponse, json } from './status';

/** `GET /tools`: every tool's name, description, JSON Schema and MCP-style annotations. */
export function handleListTools(tools: readonly ToolListing[], event: ApiEvent): HttpResponse {
  if (!identityFromEvent(event)) return errorResponse('unauthorized', UNAUTHORIZED);
  return json(200, { tools: tools.map(describeTool) });
}

/** `GET /tools`: the listing of `tools`. */
export function listToolsHandler(tools: readonly ToolListing[], logger: Logger): LambdaHandler {
  return withErrorBoundary('list_tools', logger, async function listTools(event) {
    return handleListTools(tools, event);
  });
}
