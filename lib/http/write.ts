import type { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import type * as z from 'zod/mini';
import { type GatewayToolEvent, type GatewayToolHandler, gatewayInvocationTool } from '../agentcore/caller';
import { MAX_BODY_BYTES } from '../api/status';
import {
  IDEMPOTENCY_KEY_FIELD,
  type InvocationDeadline,
  type JsonObject,
  type ToolDefinition,
  type ToolRuntime,
} from '../idempotency';
import type { ToolModule } from '../tools/tool-module';
import { type LambdaHandler, withErrorBoundary } from './boundary';
import { type ApiEvent, bodyText, header, identityFromEvent, UNAUTHORIZED } from './event';
import { errorResponse, type HttpResponse, toHttpResponse } from './status';

/** One structured-field string (RFC 8941 §3.3.3): quoted, `\"` and `\\` escaped inside. */
const SF_STRING = /^"((?:[^"\\]|\\["\\])*)"$/;

/** The header sent more than once: its values joined (", " by Node, "," by API Gateway). */
const REPEATED_KEY = 'Idempotency-Key: sent more than once (a key with a comma is sent quoted, "a,b", or in the body)';

/**
 * The key from the `Idempotency-Key` header, if sent, or `{ refused }`. The IETF draft sends it as a
 * structured-field string (`"abc"`); Stripe-style clients send it bare. Both are accepted. A header sent
 * twice reaches the function as one value, joined with a comma (by Node locally, by API Gateway deployed):
 * a comma outside one quoted string is refused rather than read as a key of its own.
 */
function headerKey(event: ApiEvent): string | { readonly refused: string } | undefined {
  const value = header(event, 'idempotency-key');
  if (value === undefined) return undefined;
  const quoted = SF_STRING.exec(value);
  if (quoted) return (quoted[1] as string).replace(/\\(["\\])/g, '$1');
  return value.includes(',') ? { refused: REPEATED_KEY } : value;
}

/** What a write needs: the runtime that claims, the tool that runs, and where to log the call. */
export interface ToolWriteDependencies {
  readonly runtime: ToolRuntime;
  readonly tool: ToolDefinition;
}

/** How a tool's handler answers a gateway invocation of `tool` (`toolHandler`'s `gateway`). */
export type GatewayWrite = (
  dependencies: ToolWriteDependencies,
  event: GatewayToolEvent,
  tool: string,
  deadline: InvocationDeadline,
) => Promise<HttpResponse>;

/**
 * `POST /tools/{tool}`: the body is the tool's arguments, flat, with `idempotency_key` (or the
 * `Idempotency-Key` header). Everything besides parsing is the runtime's.
 */
export async function handleToolWrite(
  { runtime, tool }: ToolWriteDependencies,
  event: ApiEvent,
  deadline: InvocationDeadline,
  /** Which surface the call came through, for its log line. */
  transport = 'rest',
  /** The name the surface lists the tool by, where it serves no `get_operation` (`nextAfterWrite`). */
  listedAs?: string,
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
  if (typeof fromHeader === 'object') return errorResponse('invalid_args', fromHeader.refused);
  if (fromHeader !== undefined && input !== null && typeof input === 'object' && !Array.isArray(input)) {
    const fromBody = (input as Record<string, unknown>)[IDEMPOTENCY_KEY_FIELD];
    if (fromBody !== undefined && fromBody !== fromHeader) {
      return errorResponse('invalid_args', `${IDEMPOTENCY_KEY_FIELD}: the body and the Idempotency-Key header differ`);
    }
    input = { ...input, [IDEMPOTENCY_KEY_FIELD]: fromHeader };
  }

  // The runtime writes the call's log line (with its metrics), wherever the call came from.
  const result = await runtime.invoke(tool, identity, input, deadline, { transport });
  return toHttpResponse(tool.name, result, listedAs);
}

/** What a tool's handler is built from: the services its tool is bound to, the runtime, the logger. */
export interface ToolHandlerDependencies<Svc> {
  readonly services: Svc;
  readonly runtime: ToolRuntime;
  readonly logger: Logger;
  /**
   * How the tool's function answers an AgentCore Gateway's invocation (`gatewayWrites`), when it is a
   * gateway's target (which invocations are the gateway's: `gatewayInvocationTool`); without it, every
   * invocation is taken for API Gateway's.
   * @default undefined (not a gateway's target)
   */
  readonly gateway?: GatewayWrite;
}

/**
 * A tool's handler as its function runs it: called by API Gateway (`POST /tools/{tool}`: an HTTP response)
 * or by an AgentCore Gateway (the tool's arguments as the event, its name in the client context: the
 * answer's body alone — the JSON the gateway hands the agent).
 */
export type ToolLambdaHandler = LambdaHandler & GatewayToolHandler;

/** The handler of one tool's `POST /tools/{tool}` and of its AgentCore Gateway target. */
export function toolHandler<N extends string, Svc>(
  module: ToolModule<N, z.ZodMiniObject, JsonObject, Svc>,
  { services, runtime, logger, gateway }: ToolHandlerDependencies<Svc>,
): ToolLambdaHandler & { readonly tool: N } {
  const dependencies: ToolWriteDependencies = { runtime, tool: module.bind(services) };
  const handle = withErrorBoundary<ApiEvent | GatewayToolEvent>(
    'tool',
    logger,
    function writeTool(event, context) {
      // On a gateway's target, which invocations are the gateway's: `gatewayInvocationTool`.
      const tool = gateway && gatewayInvocationTool(event, context);
      return gateway && tool !== undefined
        ? gateway(dependencies, event as GatewayToolEvent, tool, context)
        : handleToolWrite(dependencies, event as ApiEvent, context);
    },
    { tool: module.name },
  );
  // Tagged with the tool's name, so an app's tool list can check that its entry file serves the tool it
  // is named after (`registered`, retrysafe/lambda).
  const handler = async function tool(event: ApiEvent | GatewayToolEvent, context: Context) {
    const response = await handle(event, context);
    return gateway && gatewayInvocationTool(event, context) !== undefined ? JSON.parse(response.body) : response;
  } as ToolLambdaHandler;
  return Object.assign(handler, { tool: module.name });
}
