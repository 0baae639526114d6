import type { ToolDefinition } from '../idempotency/tool';
import { describeTool } from '../tools/catalog';
import { type ApiEvent, identityFromEvent, UNAUTHORIZED } from './event';
import { errorResponse, type HttpResponse, json } from './status';

/** `GET /tools`: every tool's name, description, JSON Schema and MCP-style annotations. */
export function handleListTools(tools: Record<string, ToolDefinition>, event: ApiEvent): HttpResponse {
  if (!identityFromEvent(event)) return errorResponse('unauthorized', UNAUTHORIZED);
  return json(200, { tools: Object.values(tools).map(describeTool) });
}
