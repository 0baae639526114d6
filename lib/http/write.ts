import { createHash } from 'node:crypto';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import type * as z from 'zod/mini';
import { IDEMPOTENCY_KEY_FIELD } from '../idempotency/arguments';
import type { ToolRuntime } from '../idempotency/runtime';
import type { ToolDefinition } from '../idempotency/tool';
import type { JsonObject, ToolResult } from '../idempotency/types';
import { runtime } from '../runtime';
import { type Services, services } from '../services';
import { type LambdaHandler, withErrorBoundary } from './boundary';
import { type ApiEvent, bodyText, header, identityFromEvent, MAX_BODY_BYTES, UNAUTHORIZED } from './event';
import { errorResponse, type HttpResponse, toHttpResponse } from './status';

type Deadline = Pick<Context, 'getRemainingTimeInMillis'>;

/** A client key as it may be logged: a short hash, never the key itself. */
export function keyHash(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

function outcomeOf(result: ToolResult): string {
  if (result.ok) return result.idempotent ? 'replayed' : 'executed';
  return 'status' in result ? 'pending' : result.error.code;
}

/**
 * The key from the `Idempotency-Key` header, if sent. The IETF draft sends it as a structured-field
 * string (`"abc"`); Stripe-style clients send it bare. Both are accepted.
 */
function headerKey(event: ApiEvent): string | undefined {
  const value = header(event, 'idempotency-key');
  if (value === undefined) return undefined;
  const quoted = /^"(.*)"$/.exec(value);
  return quoted ? quoted[1] : value;
}

/**
 * `POST /tools/{tool}`: the body is the tool's arguments, flat, with `idempotency_key` (or the
 * `Idempotency-Key` header). Everything besides parsing is the runtime's.
 */
export async function handleToolWrite<S extends z.ZodMiniObject, R extends JsonObject>(
  runtime: ToolRuntime,
  tool: ToolDefinition<S, R>,
  event: ApiEvent,
  deadline: Deadline,
  logger?: Logger,
): Promise<HttpResponse> {
  const identity = identityFromEvent(event);
  if (!identity) return errorResponse('unauthorized', UNAUTHORIZED);
  const text = bodyText(event);
  if (Buffer.byteLength(text, 'utf8') > MAX_BODY_BYTES) {
    return errorResponse('payload_too_large', `body: larger than ${MAX_BODY_BYTES} bytes`);
  }
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch {
    return errorResponse('invalid_args', 'body: not valid JSON');
  }
  const fromHeader = headerKey(event);
  if (fromHeader !== undefined && input !== null && typeof input === 'object' && !Array.isArray(input)) {
    const fromBody = (input as Record<string, unknown>)[IDEMPOTENCY_KEY_FIELD];
    if (fromBody !== undefined && fromBody !== fromHeader) {
      return errorResponse('invalid_args', `${IDEMPOTENCY_KEY_FIELD}: the body and the Idempotency-Key header differ`);
    }
    input = { ...input, [IDEMPOTENCY_KEY_FIELD]: fromHeader };
  }

  const result = await runtime.invoke(tool, identity, input, deadline);
  const key = result.ok || 'status' in result ? result.key : undefined;
  logger?.info('tool call', {
    tool: tool.name,
    tenant: identity.tenant,
    outcome: outcomeOf(result),
    idempotent: result.ok ? result.idempotent : undefined,
    key_hash: key === undefined ? undefined : keyHash(key),
  });
  return toHttpResponse(result);
}

/**
 * The Lambda handler of one tool's `POST /tools/{tool}`. The tool is built from the process's services
 * on first use; only its own module (and its schema) is bundled with it.
 */
export function toolLambda<S extends z.ZodMiniObject, R extends JsonObject>(
  createTool: (dependencies: Services) => ToolDefinition<S, R>,
): LambdaHandler {
  let tool: ToolDefinition<S, R> | undefined;
  return withErrorBoundary('tool', async function writeTool(event, context) {
    tool ??= createTool(services());
    return handleToolWrite(runtime(), tool, event, context, services().logger);
  });
}
