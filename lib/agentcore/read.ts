import { identityFromTokenClaims, tenantClaimName } from '../auth/token-claims';
import { errorResponse, type HttpResponse, toReadResponse } from '../http/status';
import type { BoundRead } from '../tools/read-module';
import { type GatewayToolEvent, gatewayCall, NO_CALLER } from './caller';
import type { CallerKey } from './caller-key';

/**
 * An app's own read called through an AgentCore Gateway: its arguments are the event (as over MCP, not
 * path parameters), the caller the one the request interceptor signed for this read, checked as a token's
 * claims are. Refused, nothing read: a call without such a caller (`unauthorized`, naming `CALLER_FIELD`),
 * or naming another read (`not_found`); a bad argument is `invalid_args`, naming the field, as over MCP.
 */
export async function handleGatewayRead(
  callerKey: CallerKey,
  read: BoundRead,
  event: GatewayToolEvent,
  tool: string,
): Promise<HttpResponse> {
  const call = await gatewayCall(event, tool, read.name, callerKey);
  if ('statusCode' in call) return call;
  const { input, caller } = call;
  const identity = identityFromTokenClaims({ [tenantClaimName()]: caller.tenant, sub: caller.user });
  if (!identity) return errorResponse('unauthorized', NO_CALLER);
  return toReadResponse(await read.call(input, identity, 'invalid_args'));
}

/** How a read's handler answers a gateway invocation of `tool` (`readHandler`'s `gateway`). */
export type GatewayRead = (read: BoundRead, event: GatewayToolEvent, tool: string) => Promise<HttpResponse>;

/** A read's gateway invocations answered with callers checked against `callerKey` (`handleGatewayRead`). */
export function gatewayReads(callerKey: CallerKey): GatewayRead {
  return function gatewayRead(read, event, tool) {
    return handleGatewayRead(callerKey, read, event, tool);
  };
}
