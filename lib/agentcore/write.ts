import { tenantClaimName } from '../auth/token-claims';
import type { ApiEvent } from '../http/event';
import type { HttpResponse } from '../http/status';
import { type GatewayWrite, handleToolWrite, type ToolWriteDependencies } from '../http/write';
import type { InvocationDeadline } from '../idempotency';
import { type GatewayToolEvent, gatewayCall } from './caller';
import type { CallerKey } from './caller-key';

export type { GatewayWrite } from '../http/write';
export type { GatewayAnswer, GatewayLambdaHandler, GatewayToolEvent, GatewayToolHandler } from './caller';

/**
 * A write called through an AgentCore Gateway: the event is the tool's arguments with the caller the
 * request interceptor signed, the tool's name is in the client context. Answered as `POST /tools/{tool}`
 * answers the same arguments from the same caller (the write's one path, `handleToolWrite`: size, JSON,
 * identity checked as a token's claims are, the runtime) — the tool's handler hands the gateway the body.
 *
 * Refused, nothing run: a call without a caller signed for this tool (`unauthorized`, naming
 * `CALLER_FIELD`), or naming another tool than this function's (`not_found`): each function is the target
 * of its own tool alone (the construct's targets).
 */
export async function handleGatewayWrite(
  callerKey: CallerKey,
  dependencies: ToolWriteDependencies,
  event: GatewayToolEvent,
  tool: string,
  deadline: InvocationDeadline,
): Promise<HttpResponse> {
  const call = await gatewayCall(event, tool, dependencies.tool.name, callerKey);
  if ('statusCode' in call) return call;
  const { input, caller } = call;
  const request = {
    body: JSON.stringify(input),
    requestContext: { authorizer: { jwt: { claims: { [tenantClaimName()]: caller.tenant, sub: caller.user } } } },
  };
  // A pending answer asks for the same call again by the name the gateway lists (no target serves get_operation).
  return handleToolWrite(dependencies, request as unknown as ApiEvent, deadline, 'agentcore', tool);
}

/** A tool's gateway invocations answered with callers checked against `callerKey` (`handleGatewayWrite`). */
export function gatewayWrites(callerKey: CallerKey): GatewayWrite {
  return function gatewayWrite(dependencies, event, tool, deadline) {
    return handleGatewayWrite(callerKey, dependencies, event, tool, deadline);
  };
}
