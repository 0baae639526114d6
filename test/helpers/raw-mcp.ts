/**
 * MCP requests written by hand, as the spec text writes them: for what no SDK client sends (refusals,
 * mismatched headers, the tasks extension, which no released SDK implements).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { TASKS_EXTENSION } from '../../lib/mcp/tasks';

/** The revision whose requests each carry their version and capabilities (stateless: no `initialize`). */
export const MODERN = '2026-07-28';

/**
 * A 2026-07-28 request's `_meta` envelope; `tasks`: the client declares the tasks extension.
 */
export function modernEnvelope({ protocolVersion = MODERN, tasks = false, client = 'raw' } = {}) {
  return {
    'io.modelcontextprotocol/protocolVersion': protocolVersion,
    'io.modelcontextprotocol/clientCapabilities': tasks ? { extensions: { [TASKS_EXTENSION]: {} } } : {},
    'io.modelcontextprotocol/clientInfo': { name: client, version: '1.0.0' },
  };
}

export interface RawAnswer {
  readonly status: number;
  // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC replies are asserted structurally
  readonly body: any;
}

/** A JSON-RPC POST to `<url>/mcp` with the token and exactly these headers besides content type and accept. */
export async function postMcp(
  url: string,
  token: string,
  message: unknown,
  headers: Record<string, string> = {},
): Promise<RawAnswer> {
  const response = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
      ...headers,
    },
    body: JSON.stringify(message),
  });
  const body: unknown = await response.json().catch(() => undefined);
  return { status: response.status, body };
}

let requestId = 0;

/**
 * One 2026-07-28 request, the envelope in its `_meta` and the headers the Streamable HTTP binding requires
 * (`Mcp-Name`: the tool's name for `tools/call`, the task id for `tasks/*`), or `name` given to make
 * them disagree. Its JSON-RPC answer.
 */
export async function modernRequest(
  url: string,
  token: string,
  method: string,
  params: Record<string, unknown>,
  { tasks = true, name, client }: { tasks?: boolean; name?: string; client?: string } = {},
): Promise<RawAnswer['body']> {
  const mcpName = name ?? (method === 'tools/call' ? params.name : params.taskId);
  const message = {
    jsonrpc: '2.0',
    id: ++requestId,
    method,
    params: { ...params, _meta: modernEnvelope({ tasks, client }) },
  };
  const headers = {
    'mcp-protocol-version': MODERN,
    'mcp-method': method,
    ...(typeof mcpName === 'string' ? { 'mcp-name': mcpName } : {}),
  };
  return (await postMcp(url, token, message, headers)).body;
}

/** The DynamoDB commands `client` sends while `work` runs. */
export async function commandsDuring(client: DynamoDBClient, work: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  const name = `count-${++requestId}`;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      sent.push(context.commandName ?? '?');
      return next(args);
    },
    { step: 'initialize', name },
  );
  try {
    await work();
  } finally {
    client.middlewareStack.remove(name);
  }
  return sent;
}
