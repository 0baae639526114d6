import type { ApiEvent } from '../lib/http/event';
import { errorResponse } from '../lib/http/status';

/** $default — any request no route matches (an unknown tool included): the same JSON 404 as every miss. */
export async function handler(event: ApiEvent) {
  const route = `${event.requestContext?.http?.method ?? ''} ${event.rawPath ?? ''}`.trim();
  return errorResponse('not_found', `route: no route for ${route}`);
}
