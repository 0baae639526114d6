import type { Logger } from '@aws-lambda-powertools/logger';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { type CallToolResult, ErrorCode, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod/mini';
import { nextAfterRead, nextAfterWrite, type ReadResult } from '../api/next-step';
import { keyHash } from '../http/write';
import {
  IDEMPOTENCY_KEY_FIELD,
  type Identity,
  type InvocationDeadline,
  outcomeOf,
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

/** What one MCP request is served with. */
export interface McpServerDependencies {
  readonly tools: readonly McpTool[];
  readonly logger: Logger;
}

/**
 * An MCP server for one request of one caller (stateless: nothing outlives the request, so any Lambda
 * instance answers any request). `tools/list` lists every write and read; `tools/call` answers with
 * the same answer object as the HTTP API.
 */
export function createMcpServer(
  { tools, logger }: McpServerDependencies,
  caller: Identity,
  deadline: InvocationDeadline,
): Server {
  const server = new Server(
    { name: 'retrysafe', version: '0.1.0' },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
  );
  const byName = new Map(tools.map((tool) => [tool.listing.name, tool]));

  server.setRequestHandler(ListToolsRequestSchema, async function listTools() {
    return { tools: tools.map((tool) => tool.listing) };
  });

  server.setRequestHandler(CallToolRequest, async function callTool(request): Promise<CallToolResult> {
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
    const answer = await tool.call(input, caller, deadline);
    if (isWrite) {
      const result = answer as ToolResult;
      const key = result.ok || 'status' in result ? result.key : undefined;
      logger.info('tool call', {
        tool: name,
        tenant: caller.tenant,
        transport: 'mcp',
        outcome: outcomeOf(result),
        key_hash: key === undefined ? undefined : keyHash(key),
      });
    }
    return toCallToolResult(name, isWrite, answer);
  });
  return server;
}
