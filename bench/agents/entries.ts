import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { McpServer, WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';
import type { APIGatewayProxyEventV2WithJWTAuthorizer, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import * as z from 'zod';
import { TOOLS } from '../../app/tools';
import { toolHandler } from '../../lib/http/write';
import { mcpHandler } from '../../lib/mcp/http';
import { mcpTools } from '../../lib/mcp/tools';
import {
  type Approach,
  serverOf,
  TOOL_NAMES,
  type ToolAnswer,
  type ToolName,
  type ToolRequest,
  type ToolServer,
} from './approaches';
import type { BenchWorld } from './world';

/**
 * How an agent reaches the tools: `rest`, `POST /tools/{tool}` with the arguments (and the key) as its JSON
 * body; `mcp`, `POST /mcp` with a JSON-RPC `tools/call`. Either as API Gateway's HTTP API hands it to the
 * approach's Lambda function — the caller in the JWT authorizer's claims (and, for MCP, its bearer token) —
 * in this process, on the intent's simulated clock: the request and the answer are the wire's, the socket
 * is not (the transport's faults stand for the network).
 */
export type Surface = 'rest' | 'mcp';

/** A Lambda function as API Gateway's HTTP API invokes it. */
type ApiFunction = (
  event: APIGatewayProxyEventV2WithJWTAuthorizer,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

/** The claim that names the tenant (retrysafe's default, `TENANT_CLAIM`); the user is `sub`. */
const TENANT_CLAIM = 'tenant_id';
/** The API's host, as the functions see it. */
const DOMAIN = 'bench.execute-api.us-east-1.amazonaws.com';

/** A bearer token naming the caller (the bench's verifier reads it back; API Gateway's authorizer passed it). */
function tokenOf(request: ToolRequest): string {
  return Buffer.from(JSON.stringify({ [TENANT_CLAIM]: request.tenant, sub: request.user })).toString('base64url');
}

/** The bench's token verifier: the claims a token names (a real one checks a signature first). */
async function claimsOfToken(token: string): Promise<Record<string, string>> {
  return JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as Record<string, string>;
}

/** The event API Gateway's HTTP API hands the function for `method path` with `body`, authorized as `request`'s caller. */
function apiEvent(
  request: ToolRequest,
  path: string,
  headers: Record<string, string>,
  body: string | undefined,
  method = 'POST',
): APIGatewayProxyEventV2WithJWTAuthorizer {
  const token = tokenOf(request);
  const routeKey = path === '/mcp' ? `${method} /mcp` : `${method} /tools/{tool}`;
  return {
    version: '2.0',
    routeKey,
    rawPath: path,
    rawQueryString: '',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...headers },
    ...(path === '/mcp' ? {} : { pathParameters: { tool: request.tool } }),
    ...(body === undefined ? {} : { body }),
    isBase64Encoded: false,
    requestContext: {
      accountId: '000000000000',
      apiId: 'bench',
      domainName: DOMAIN,
      domainPrefix: 'bench',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'bench' },
      requestId: 'bench',
      routeKey,
      stage: '$default',
      time: new Date().toISOString(),
      timeEpoch: Date.now(),
      authorizer: {
        principalId: '',
        integrationLatency: 0,
        jwt: { claims: { [TENANT_CLAIM]: request.tenant, sub: request.user }, scopes: [] },
      },
    },
  };
}

/** What the agent's tool hands its framework: the answer's JSON, or the transport's word for what came back instead. */
function answerOfText(text: string | undefined, status: number | undefined): ToolAnswer {
  try {
    const parsed = JSON.parse(text ?? '') as unknown;
    if (parsed && typeof parsed === 'object' && 'ok' in parsed) return parsed as ToolAnswer;
  } catch {
    // not JSON: below
  }
  return { ok: false, error: { code: `http_${status ?? 0}`, message: (text ?? '').slice(0, 200) } };
}

/** An approach's REST and MCP functions, and the client side of each: a tool call in, the framework's answer out. */
export function servedOver(surface: Surface, approach: Approach, world: BenchWorld): ToolServer {
  const functions = functionsOf(approach, world);
  if (surface === 'rest') {
    return async function overRest(request, context) {
      const body = JSON.stringify({ idempotency_key: request.key, ...request.args });
      const response = await functions.rest(apiEvent(request, `/tools/${request.tool}`, {}, body), context);
      return answerOfText(response.body, response.statusCode);
    };
  }
  /**
   * The official MCP SDK client (`@modelcontextprotocol/client`, version negotiation on: 2026-07-28 where
   * the server serves it, else `initialize` and 2025-11-25), one per call as a stateless agent runtime
   * opens it, its `fetch` handing each request to the approach's MCP function as API Gateway would.
   */
  return async function overMcp(request, context) {
    const transport = new StreamableHTTPClientTransport(new URL(`https://${DOMAIN}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${tokenOf(request)}` } },
      async fetch(url, init) {
        const sent = new Request(url, init);
        const headers = Object.fromEntries(sent.headers);
        const body = sent.method === 'POST' ? await sent.text() : undefined;
        const event = apiEvent(request, new URL(sent.url).pathname, headers, body, sent.method);
        const response = await functions.mcp(event, context);
        const noBody = response.statusCode === 202 || response.statusCode === 204;
        return new Response(noBody ? null : (response.body ?? ''), {
          status: response.statusCode ?? 200,
          headers: response.headers as Record<string, string>,
        });
      },
    });
    const client = new Client({ name: 'bench-agent', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    try {
      await client.connect(transport);
      const result = await client.callTool({
        name: request.tool,
        arguments: { idempotency_key: request.key, ...request.args },
      });
      // What an MCP client hands the model: the result's text content — retrysafe's says what happened in a
      // sentence, then the answer's JSON on its last line; the alternatives': the JSON alone.
      const content = (result as { content?: Array<{ type: string; text?: string }> }).content;
      const text = content?.find((part) => part.type === 'text')?.text ?? '';
      return answerOfText(text.slice(text.lastIndexOf('\n') + 1), 200);
    } catch (error) {
      return { ok: false, error: { code: 'mcp_error', message: (error as Error).message.slice(0, 200) } };
    } finally {
      await client.close().catch(() => undefined);
    }
  };
}

/** The REST and MCP functions of `approach`, as each would be deployed behind API Gateway. */
function functionsOf(approach: Approach, world: BenchWorld): { rest: ApiFunction; mcp: ApiFunction } {
  if (approach === 'retrysafe') return retrysafeFunctions(world);
  return plainFunctions(serverOf(approach, world));
}

/**
 * retrysafe's own entries, as its stack deploys them: each tool's function (`toolHandler`, API Gateway's
 * `POST /tools/{tool}`) and the MCP function (`mcpHandler`), over the bench's runtime and services.
 */
function retrysafeFunctions(world: BenchWorld): { rest: ApiFunction; mcp: ApiFunction } {
  const logger = world.logger;
  const handlers = Object.fromEntries(
    TOOLS.map((module) => [
      module.name,
      toolHandler(module, { services: world.services, runtime: world.runtime, logger }),
    ]),
  );
  const mcp = mcpHandler({
    tools: mcpTools(TOOLS, world.services, world.runtime, []),
    verifyToken: claimsOfToken,
    issuer: 'https://bench.example',
    logger,
  });
  return {
    rest: (event, context) => handlers[event.pathParameters!.tool!]!(event, context) as ReturnType<ApiFunction>,
    mcp: (event, context) => mcp(event, context) as ReturnType<ApiFunction>,
  };
}

/** The tools' input schemas for an MCP server of the alternatives (the key required, as the agent is offered). */
const INPUT_SCHEMAS: Record<ToolName, z.ZodObject> = {
  refund: z.looseObject({ idempotency_key: z.string(), invoice_id: z.string(), amount: z.number().int() }),
  create_ticket: z.looseObject({ idempotency_key: z.string(), title: z.string(), body: z.optional(z.string()) }),
  send_email: z.looseObject({ idempotency_key: z.string(), to: z.string(), subject: z.string(), body: z.string() }),
};

/** The HTTP status an alternative's function answers an error with. */
const ERROR_STATUS: Record<string, number> = { invalid_args: 400, not_found: 404, conflict: 409 };

/**
 * An alternative's functions, as a team would write them: a REST function per tool that reads the caller
 * from the authorizer's claims and the body as the arguments, and an MCP function on the official SDK
 * (`McpServer`, a stateless `WebStandardStreamableHTTPServerTransport` per request, JSON answers — the
 * SDK's pattern for Lambda), each calling the approach's server (`none`'s plain tool, or Powertools'
 * `makeIdempotent` around it).
 */
function plainFunctions(serve: ToolServer): { rest: ApiFunction; mcp: ApiFunction } {
  const callerOf = (event: APIGatewayProxyEventV2WithJWTAuthorizer) => {
    const claims = event.requestContext.authorizer.jwt.claims;
    return { tenant: String(claims[TENANT_CLAIM]), user: String(claims.sub) };
  };
  return {
    async rest(event, context) {
      const { idempotency_key: key, ...args } = JSON.parse(event.body ?? '{}') as Record<string, unknown>;
      const tool = event.pathParameters?.tool as ToolName;
      const answer = await serve({ tool, ...callerOf(event), key: String(key), args }, context);
      const error = (answer as { error?: { code?: string } }).error;
      const statusCode = answer.ok ? 200 : (ERROR_STATUS[error?.code ?? ''] ?? 500);
      return { statusCode, headers: { 'content-type': 'application/json' }, body: JSON.stringify(answer) };
    },
    async mcp(event, context) {
      const caller = callerOf(event);
      const server = new McpServer({ name: 'tools', version: '1.0.0' });
      for (const tool of TOOL_NAMES) {
        server.registerTool(tool, { inputSchema: INPUT_SCHEMAS[tool] }, async (input: Record<string, unknown>) => {
          const { idempotency_key: key, ...args } = input;
          const answer = await serve({ tool, ...caller, key: String(key), args }, context);
          return { content: [{ type: 'text' as const, text: JSON.stringify(answer) }], isError: !answer.ok };
        });
      }
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      await server.connect(transport);
      try {
        const request = new Request(`https://${event.requestContext.domainName}${event.rawPath}`, {
          method: event.requestContext.http.method,
          headers: event.headers as Record<string, string>,
          ...(event.body === undefined ? {} : { body: event.body }),
        });
        const response = await transport.handleRequest(request);
        return {
          statusCode: response.status,
          headers: Object.fromEntries(response.headers),
          body: await response.text(),
        };
      } finally {
        await server.close();
      }
    },
  };
}
