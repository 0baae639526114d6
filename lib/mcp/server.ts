import type { Logger } from '@aws-lambda-powertools/logger';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { type CallToolResult, ErrorCode, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import type { jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import * as z from 'zod/mini';
import { nextAfterRead, nextAfterWrite, type ReadResult } from '../api/next-step';
import {
  IDEMPOTENCY_KEY_FIELD,
  type Identity,
  INTERNAL_MESSAGE,
  type InvocationDeadline,
  isTransientAwsError,
  type ToolResult,
} from '../idempotency';
import type { Answer, McpTool } from './tools';

/**
 * `tools/call` as retrysafe reads it: the SDK's own request schema strips unknown params, and the
 * proposed MCP request-idempotency extension puts the key in the params (`idempotencyKey`).
 */
const CallToolRequest = z.object({
  method: z.literal('tools/call'),
  params: z.looseObject({
    name: z.string(),
    arguments: z.optional(z.record(z.string(), z.unknown())),
    idempotencyKey: z.optional(z.string()),
  }),
});

/**
 * A JSON-RPC error a request handler throws: the SDK answers `{ code, message }` from it. Not the SDK's
 * `McpError`, whose message already carries the "MCP error <code>: " prefix that the client adds again
 * when it reads the answer.
 */
class JsonRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'JsonRpcError';
  }
}

const INSTRUCTIONS =
  'Every write tool takes an idempotency_key. Mint one per intent and send the same key on every retry of that intent (after a timeout, a lost answer or an error): the retry returns the first receipt instead of acting twice. Every answer says what to do next in its "next" field (action, after_ms, message): follow it.';

/**
 * An answer as an MCP tool result. `structuredContent` is the HTTP API's answer object with its next step
 * (`next`): clients that show the model only `structuredContent` still tell it what to do. The text says
 * the same — the next step's sentence (after the error, for an error), then the object as JSON.
 */
function toCallToolResult(tool: string, isWrite: boolean, answer: Answer): CallToolResult {
  const next = isWrite ? nextAfterWrite(tool, answer as ToolResult) : nextAfterRead(answer as ReadResult);
  const structured = { ...answer, next };
  const said =
    !answer.ok && 'error' in answer ? `${answer.error.code}: ${answer.error.message}. ${next.message}` : next.message;
  return {
    content: [{ type: 'text', text: `${said}\n${JSON.stringify(structured)}` }],
    structuredContent: structured,
    // For the model, not the transport: a replay or a pending call is not an error.
    isError: !answer.ok && 'error' in answer,
  };
}

/** What the MCP server is built with, once. */
export interface McpServerDependencies {
  readonly tools: readonly McpTool[];
  readonly logger: Logger;
}

/** What one request brings to the server that answers it: its caller and its deadline. */
export interface McpRequestContext {
  readonly caller: Identity;
  readonly deadline: InvocationDeadline;
}

/** The transport's `authInfo` for one request: how its verified caller and its deadline reach the server. */
export function mcpRequestAuth(token: string, context: McpRequestContext): AuthInfo {
  return { token, clientId: context.caller.user, scopes: [], extra: { retrysafe: context } };
}

function requestContextOf(auth: AuthInfo | undefined): McpRequestContext {
  const context = auth?.extra?.retrysafe as McpRequestContext | undefined;
  if (!context) throw new Error('an MCP request reached the server without its caller (see mcpRequestAuth)');
  return context;
}

/**
 * The SDK's Server builds an Ajv with every format in its constructor, only to check elicitation
 * answers — and retrysafe never elicits. The SDK's own validator is built on first use instead.
 */
function lazyAjvValidator(): jsonSchemaValidator {
  let ajv: AjvJsonSchemaValidator | undefined;
  return {
    getValidator(schema) {
      ajv ??= new AjvJsonSchemaValidator();
      return ajv.getValidator(schema);
    },
  };
}

/**
 * An MCP server, built once and reused: it serves one request at a time (connected to that request's
 * transport), each request's caller and deadline coming with it (`mcpRequestAuth`). Stateless: nothing
 * of a request outlives its answer, so any Lambda instance answers any request. `tools/list` lists
 * every write and read; `tools/call` answers with the same answer object as the HTTP API.
 */
export function createMcpServer({ tools, logger }: McpServerDependencies): Server {
  const server = new Server(
    { name: 'retrysafe', version: '0.1.0' },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS, jsonSchemaValidator: lazyAjvValidator() },
  );
  const byName = new Map(tools.map((tool) => [tool.listing.name, tool]));
  const listing = { tools: tools.map((tool) => tool.listing) };

  server.setRequestHandler(ListToolsRequestSchema, async function listTools() {
    return listing;
  });

  server.setRequestHandler(CallToolRequest, async function callTool(request, extra): Promise<CallToolResult> {
    const { caller, deadline } = requestContextOf(extra.authInfo);
    const { name, arguments: args = {}, idempotencyKey } = request.params;
    const tool = byName.get(name);
    if (!tool) throw new JsonRpcError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    const isWrite = !tool.listing.annotations.readOnlyHint;
    let input: Record<string, unknown> = args;
    if (isWrite && idempotencyKey !== undefined) {
      const inArguments = args[IDEMPOTENCY_KEY_FIELD];
      if (inArguments !== undefined && inArguments !== idempotencyKey) {
        return toCallToolResult(name, isWrite, {
          ok: false,
          error: {
            code: 'invalid_args',
            message: `${IDEMPOTENCY_KEY_FIELD}: the arguments and the request's idempotencyKey differ`,
          },
        });
      }
      input = { ...args, [IDEMPOTENCY_KEY_FIELD]: idempotencyKey };
    }
    let answer: Answer;
    try {
      answer = await tool.call(input, caller, deadline);
    } catch (error) {
      // A tool's failure is an answer for the model (with its next step), never a JSON-RPC error that
      // would carry the raw message: a store outage is `unavailable`, anything else `internal`, logged.
      logger.error('tool call failed', { tool: name, transport: 'mcp', error: error as Error });
      const failure = isTransientAwsError(error)
        ? { code: 'unavailable' as const, message: 'a store is unavailable; retry later' }
        : { code: 'internal' as const, message: INTERNAL_MESSAGE };
      return toCallToolResult(name, isWrite, { ok: false, error: failure });
    }
    // A write's log line (with its metrics) is the runtime's.
    return toCallToolResult(name, isWrite, answer);
  });
  return server;
}
