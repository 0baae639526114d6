import type { APIGatewayProxyEventV2WithJWTAuthorizer, Context } from 'aws-lambda';
import type { z } from 'zod';
import type { ToolRuntime } from '../idempotency/runtime';
import type { ToolDefinition } from '../idempotency/tool';
import type { Identity, JsonObject } from '../idempotency/types';
import { edgeError, type HttpResponse, toHttpResponse } from './status';

/** Claim that names the tenant, as the JWT authorizer passes it on. @default 'tenant_id' */
export function tenantClaimName(env: NodeJS.ProcessEnv = process.env): string {
  return env.TENANT_CLAIM || 'tenant_id';
}

/** Tenant and user from the verified JWT claims — never from the body. */
export function identityFromEvent(event: APIGatewayProxyEventV2WithJWTAuthorizer): Identity | undefined {
  const claims = event.requestContext?.authorizer?.jwt?.claims ?? {};
  const tenant = claims[tenantClaimName()];
  const user = claims.sub;
  if (typeof tenant !== 'string' || tenant === '' || typeof user !== 'string' || user === '') return undefined;
  return { tenant, user };
}

/**
 * An API Gateway (HTTP API, payload 2.0) write: the body is the tool's arguments. What a Lambda entry
 * point in `lambdas/` calls; everything it does besides parsing is the runtime's.
 */
export async function handleToolEvent<S extends z.ZodObject, R extends JsonObject>(
  runtime: ToolRuntime,
  tool: ToolDefinition<S, R>,
  event: APIGatewayProxyEventV2WithJWTAuthorizer,
  context: Pick<Context, 'getRemainingTimeInMillis'>,
): Promise<HttpResponse> {
  const identity = identityFromEvent(event);
  if (!identity) return edgeError('unauthorized', 'authorization: a valid token with tenant and subject is required');
  let input: unknown;
  try {
    const text = event.isBase64Encoded ? Buffer.from(event.body ?? '', 'base64').toString('utf8') : (event.body ?? '');
    input = JSON.parse(text);
  } catch {
    return edgeError('invalid_args', 'body: not valid JSON');
  }
  return toHttpResponse(await runtime.invoke(tool, identity, input, context));
}
