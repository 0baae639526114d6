import type { Logger } from '@aws-lambda-powertools/logger';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { type CallToolResult, ErrorCode, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod/mini';
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
  'Every write tool takes an idempotency_key. Mint one per intent and send the same key on every retry of that intent (after a timeout, a lost answer or an error): the retry returns the first receipt instead of acting twice. A "pending" answer means the first attempt is still running; call again with the same key, or get_operation, after retry_after_ms.';

/** What a model is told for each kind of answer: what happened and what to do next. */
function textOf(tool: string, answer: Answer): string {
  const json = JSON.stringify(answer);
  if (answer.ok) {
    if ('idempotent' in answer && answer.idempotent) {
      return `Already done: this intent ran before, so nothing was done again. The original receipt: ${json}`;
    }
    return `Done. ${json}`;
  }
  if ('status' in answer) {
    return `Still in progress under idempotency_key "${answer.key}" — it will not run twice. Call ${tool} again with the same idempotency_key and arguments, or call get_operation with tool "${tool}" and this key, after ${answer.retry_after_ms} ms.`;
  }
  const { code, message } = answer.error;
  const next: Record<string, string> = {
    invalid_args: 'Nothing was done. Fix the named field and call again.',
    not_found: 'Nothing was done: the named object does not exist for this caller.',
    conflict:
      'Nothing was done: this idempotency_key was already used with other arguments. Repeat the original arguments to get the first result; use a new key only for a new intent.',
    unavailable: 'Call again with the same idempotency_key and arguments: the retry cannot act twice.',
    internal: 'Call again later with the same idempotency_key and arguments: the retry cannot act twice.',
  };
  return `${code}: ${message}. ${next[code] ?? ''}`.trim();
}

/** An answer as an MCP tool result: `structuredContent` is the HTTP API's answer object. */
function toCallToolResult(tool: string, answer: Answer): CallToolResult {
  return {
    content: [{ type: 'text', text: textOf(tool, answer) }],
    structuredContent: answer as Record<string, unknown>,
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
        return toCallToolResult(name, {
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
    return toCallToolResult(name, answer);
  });
  return server;
}
