import type { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import type * as z from 'zod/mini';
import type { GatewayLambdaHandler } from '../agentcore/caller';
import { type GatewayToolEvent, gatewayInvocationTool } from '../agentcore/caller';
import type { GatewayRead } from '../agentcore/read';
import type { OperationStatus } from '../api/next-step';
import { type OperationSource, readOperation } from '../reads/operation';
import { type BoundRead, pathParamsOf, type ReadAnswer, type ReadModule } from '../tools/read-module';
import { type LambdaHandler, withErrorBoundary } from './boundary';
import { type ApiEvent, identityFromEvent, pathParameter, UNAUTHORIZED } from './event';
import { errorResponse, type HttpResponse, toReadResponse } from './status';

/** A read's answer as an HTTP response: 200 with the body and its next step, or the error's status. */
function answerResponse(answer: ReadAnswer<{ status?: OperationStatus }>): HttpResponse {
  return toReadResponse(answer);
}

/** `GET /tools/{tool}/operations/{key}`: the caller's own record of a client key. */
export async function handleGetOperation(source: OperationSource, event: ApiEvent): Promise<HttpResponse> {
  const identity = identityFromEvent(event);
  if (!identity) return errorResponse('unauthorized', UNAUTHORIZED);
  const tool = pathParameter(event, 'tool');
  const key = pathParameter(event, 'key');
  if (!tool || !key) return errorResponse('not_found', 'key: no operation');
  return answerResponse(await readOperation(source, identity, tool, key));
}

/**
 * `GET <path>` of an app's own read: its path parameters are its arguments (one that the read's schema
 * refuses names nothing: `not_found`, naming the field), the caller from the token.
 */
export async function handleRead(read: BoundRead, params: readonly string[], event: ApiEvent): Promise<HttpResponse> {
  const identity = identityFromEvent(event);
  if (!identity) return errorResponse('unauthorized', UNAUTHORIZED);
  const args: Record<string, string | undefined> = {};
  for (const name of params) args[name] = pathParameter(event, name);
  return answerResponse(await read.call(args, identity, 'not_found'));
}

/** `GET /tools/{tool}/operations/{key}`. */
export function getOperationHandler(source: OperationSource, logger: Logger): LambdaHandler {
  return withErrorBoundary('get_operation', logger, function getOperation(event) {
    return handleGetOperation(source, event);
  });
}

/**
 * `GET <path>` of an app's own read, bound to `services` — and the read as an AgentCore Gateway's Lambda
 * target calls it (its arguments as the event, its name in the client context): answered with the
 * answer's JSON alone, as a tool's handler answers the gateway.
 */
export function readHandler<Svc>(
  read: ReadModule<string, z.ZodMiniObject, z.ZodMiniObject, Svc>,
  services: Svc,
  logger: Logger,
  /** How it answers an AgentCore Gateway's invocation (`gatewayReads`); without, it is not a gateway's target. */
  gateway?: GatewayRead,
): GatewayLambdaHandler {
  const bound = read.bind(services);
  const params = pathParamsOf(read.path);
  const handle = withErrorBoundary<ApiEvent | GatewayToolEvent>(
    read.name,
    logger,
    function readOwn(event, context) {
      // On a gateway's target, which invocations are the gateway's: `gatewayInvocationTool`.
      const tool = gateway && gatewayInvocationTool(event, context);
      return gateway && tool !== undefined
        ? gateway(bound, event as GatewayToolEvent, tool)
        : handleRead(bound, params, event as ApiEvent);
    },
    { read: read.name },
  );
  return async function readCall(event: ApiEvent | GatewayToolEvent, context: Context) {
    const response = await handle(event, context);
    return gateway && gatewayInvocationTool(event, context) !== undefined ? JSON.parse(response.body) : response;
  } as GatewayLambdaHandler;
}
