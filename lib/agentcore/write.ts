import type { Context } from 'aws-lambda';
import { tenantClaimName } from '../auth/token-claims';
import type { LambdaHandler } from '../http/boundary';
import type { ApiEvent } from '../http/event';
import { errorResponse, type HttpResponse } from '../http/status';
import { handleToolWrite, type ToolWriteDependencies } from '../http/write';
import type { InvocationDeadline, JsonObject } from '../idempotency';
import { CALLER_FIELD, type GatewayCaller, NO_CALLER } from './caller';

/** What an AgentCore Gateway sends a Lambda target: the tool's arguments, flat, and the caller (`CALLER_FIELD`). */
export type GatewayToolEvent = Readonly<Record<string, unknown>>;

/** What a tool's function answers the gateway: the answer's JSON (`ok`, the receipt or the error, `next`). */
export type GatewayAnswer = JsonObject & { readonly ok: boolean; readonly next: JsonObject };

/** A tool's (or read's) handler as the gateway calls it. */
export type GatewayToolHandler = (event: GatewayToolEvent, context: Context) => Promise<GatewayAnswer>;

/** A handler that API Gateway and an AgentCore Gateway both call: an HTTP response to one, the answer's JSON to the other. */
export type GatewayLambdaHandler = GatewayToolHandler & LambdaHandler;

/**
 * A write called through an AgentCore Gateway: the event is the tool's arguments with the caller the
 * request interceptor wrote, the tool's name is in the client context. Answered as `POST /tools/{tool}`
 * answers the same arguments from the same caller (the write's one path, `handleToolWrite`: size, JSON,
 * identity checked as a token's claims are, the runtime) — the tool's handler hands the gateway the body.
 *
 * Refused, nothing run: a call without a caller (`unauthorized`, naming `CALLER_FIELD`). The tool's name
 * in the client context only tells the gateway's invocations apart: each function is the target of its
 * own tool alone (the construct's targets), so it runs that tool — arguments meant for another would
 * fail its strict schema (`invalid_args`). No byte was left for more: a write's bundle budget.
 */
export async function handleGatewayWrite(
  dependencies: ToolWriteDependencies,
  event: GatewayToolEvent,
  deadline: InvocationDeadline,
): Promise<HttpResponse> {
  const { [CALLER_FIELD]: caller, ...input } = event ?? {};
  const { tenant, user } = (caller ?? {}) as Partial<GatewayCaller>;
  if (!tenant || !user) return errorResponse('unauthorized', NO_CALLER);
  const request = {
    body: JSON.stringify(input),
    requestContext: { authorizer: { jwt: { claims: { [tenantClaimName()]: tenant, sub: user } } } },
  };
  return handleToolWrite(dependencies, request as unknown as ApiEvent, deadline, 'agentcore');
}
