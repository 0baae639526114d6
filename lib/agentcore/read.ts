import { identityFromTokenClaims, tenantClaimName } from '../auth/token-claims';
import { errorResponse, type HttpResponse, toReadResponse } from '../http/status';
import type { BoundRead } from '../tools/read-module';
import { CALLER_FIELD, type GatewayCaller, NO_CALLER } from './caller';
import type { GatewayToolEvent } from './write';

/**
 * An app's own read called through an AgentCore Gateway: its arguments are the event (as over MCP, not
 * path parameters), the caller the one the request interceptor wrote, checked as a token's claims are.
 * Refused, nothing read: a call without a caller (`unauthorized`, naming `CALLER_FIELD`); a bad argument
 * is `invalid_args`, naming the field, as over MCP.
 */
export async function handleGatewayRead(read: BoundRead, event: GatewayToolEvent): Promise<HttpResponse> {
  const { [CALLER_FIELD]: caller, ...input } = event ?? {};
  const { tenant, user } = (caller ?? {}) as Partial<GatewayCaller>;
  const identity = identityFromTokenClaims({ [tenantClaimName()]: tenant, sub: user });
  if (!identity) return errorResponse('unauthorized', NO_CALLER);
  return toReadResponse(await read.call(input, identity, 'invalid_args'));
}
