import type { LambdaHandler } from './boundary';
import type { ApiEvent } from './event';
import { errorResponse, type HttpResponse, json } from './status';

/** `GET /health`: no authorization, no store. */
export function healthHandler(): LambdaHandler {
  return async function health() {
    return json(200, { ok: true });
  };
}

/** `$default`: any request no route matches (an unknown tool included), the same JSON 404 as every miss. */
export function notFoundHandler(): LambdaHandler {
  return async function notFound(event: ApiEvent): Promise<HttpResponse> {
    const route = `${event.requestContext?.http?.method ?? ''} ${event.rawPath ?? ''}`.trim();
    return errorResponse('not_found', `route: no route for ${route}`);
  };
}
