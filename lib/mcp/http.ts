import {
  createMcpHandler,
  isLegacyRequest,
  type McpHttpHandler,
  type Server,
  SUPPORTED_PROTOCOL_VERSIONS,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
import { MAX_BODY_BYTES } from '../api/status';
import {
  identityFromTokenClaims,
  noCallerRefusal,
  type TokenVerifier,
  tokenRefusal,
  VerifierUnavailableError,
} from '../auth/token-claims';
import { type LambdaHandler, withErrorBoundary } from '../http/boundary';
import { type ApiEvent, bodyText, header } from '../http/event';
import { errorResponse, type HttpResponse, json } from '../http/status';
import type { InvocationDeadline } from '../idempotency';
import { createMcpServer, type McpServerDependencies, mcpRequestAuth } from './server';

/** Where the MCP endpoint is served. */
export const MCP_PATH = '/mcp';
/** RFC 9728: the protected resource's metadata, at the well-known path suffixed with the resource's path. */
export const PROTECTED_RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

export interface McpHttpDependencies extends McpServerDependencies {
  /**
   * Verifies the bearer token. API Gateway's JWT authorizer refuses a missing or bad token before the
   * function runs (so a tokenless flood costs it nothing); the function checks it again, takes the caller
   * from its claims, and answers a token it refuses with the 401 MCP clients read: one that names the
   * resource metadata.
   */
  readonly verifyToken: TokenVerifier;
  /** The OAuth authorization server (the JWT issuer), named in the resource metadata. */
  readonly issuer: string;
}

/** The API's own origin, as the caller reached it (API Gateway sets `x-forwarded-proto`). */
function originOf(event: ApiEvent): string {
  const proto = header(event, 'x-forwarded-proto') ?? 'https';
  return `${proto}://${event.requestContext.domainName}`;
}

/** RFC 9728 protected resource metadata: which authorization server issues tokens for `/mcp`. */
function resourceMetadata(event: ApiEvent, issuer: string): HttpResponse {
  return json(200, {
    resource: `${originOf(event)}${MCP_PATH}`,
    authorization_servers: [issuer],
    bearer_methods_supported: ['header'],
    resource_name: 'retrysafe',
  });
}

/** A 401 as an OAuth 2.1 resource server answers it (RFC 6750, RFC 9728). */
function unauthorized(event: ApiEvent, message: string, invalidToken: boolean): HttpResponse {
  const response = errorResponse('unauthorized', message);
  const metadata = `${originOf(event)}${PROTECTED_RESOURCE_METADATA_PATH}${MCP_PATH}`;
  // RFC 6750 §3: why, as `error_description` too (a quoted string: no quotes or backslashes inside).
  const description = message.replace(/^authorization: /, '').replace(/["\\]/g, '');
  const challenge = `Bearer resource_metadata="${metadata}"${invalidToken ? `, error="invalid_token", error_description="${description}"` : ''}`;
  return { ...response, headers: { ...response.headers, 'www-authenticate': challenge } };
}

/** A JSON-RPC error answered by the endpoint itself (`id` null when the message was not read). */
function jsonRpcError(statusCode: number, code: number, message: string, id: string | number | null = null) {
  return json(statusCode, { jsonrpc: '2.0', id, error: { code, message } });
}

/** The token could not be checked (the issuer's keys are out of reach): try again, keep the token. */
function verifierUnavailable(error: VerifierUnavailableError): HttpResponse {
  return errorResponse(
    'unavailable',
    `authorization: ${error.message}; retry later with the same token`,
    error.retryAfterSeconds * 1000,
  );
}

/** The API Gateway event as the web-standard request the SDK's transport reads. */
function toRequest(event: ApiEvent, body: string): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(event.headers ?? {})) if (value !== undefined) headers.set(name, value);
  return new Request(`${originOf(event)}${event.rawPath}`, { method: 'POST', headers, body });
}

/**
 * The revisions this endpoint serves: 2026-07-28 (the SDK's entry), and every revision the SDK's stateless
 * transport negotiates in `initialize` (2025-11-25 and the earlier ones it still serves) — the list -32022
 * names, so that a client told it is unsupported is told every revision it could speak instead.
 */
const SERVED_VERSIONS: readonly string[] = ['2026-07-28', ...SUPPORTED_PROTOCOL_VERSIONS];

/** The revisions a request carrying the `_meta` envelope may name: 2025-11-25's requests carry none. */
const ENVELOPE_VERSIONS = ['2026-07-28'];

/**
 * A 2026-era request's revision that this endpoint does not serve — the `_meta` envelope's (2026-07-28
 * alone), or without one the `MCP-Protocol-Version` header's — or undefined. Versioning: an unknown
 * revision is `-32022` listing every one served, whatever else the request lacks (the SDK's entry lists
 * its own only, and asks first for an envelope). A header that disagrees with the envelope is no version
 * question: the SDK's `-32020` HeaderMismatch answers it.
 */
function unservedVersion(event: ApiEvent, message: unknown): string | undefined {
  const params = (message as { params?: { _meta?: Record<string, unknown> } } | null)?.params;
  const inHeader = header(event, 'mcp-protocol-version');
  const inEnvelope = params?._meta?.['io.modelcontextprotocol/protocolVersion'];
  if (typeof inEnvelope === 'string') {
    if (inHeader !== undefined && inHeader !== inEnvelope) return undefined;
    return ENVELOPE_VERSIONS.includes(inEnvelope) ? undefined : inEnvelope;
  }
  return inHeader !== undefined && !SERVED_VERSIONS.includes(inHeader) ? inHeader : undefined;
}

/** Whether a parsed message is a JSON-RPC request for `method`. */
function isRequestFor(message: unknown, method: string): message is { readonly id: string | number } {
  if (typeof message !== 'object' || message === null) return false;
  const { method: asked, id } = message as { method?: unknown; id?: unknown };
  return asked === method && (typeof id === 'string' || typeof id === 'number');
}

/** A web-standard response as the API Gateway response. */
async function fromResponse(response: Response): Promise<HttpResponse> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return { statusCode: response.status, headers, body: response.body ? await response.text() : '' };
}

/**
 * The MCP servers of one process, both eras on the official SDK v2 server (`createMcpServer`):
 *
 * - 2026-07-28: the SDK's serving entry (`createMcpHandler`), which owns the revision's wire rules —
 *   `server/discover`, the `_meta` envelope, the `MCP-Protocol-Version` / `Mcp-Method` / `Mcp-Name`
 *   headers (-32020), an unknown revision (-32022 with `data.supported`), `resultType` and the list
 *   results' `ttlMs` / `cacheScope` — building a server per request, as it does.
 * - 2025-11-25 and earlier (`initialize`, no envelope): the SDK's stateless transport with JSON answers
 *   (the entry's own legacy leg answers server-sent events), on a server kept for reuse: building one
 *   per request cost every request; a server serves one request at a time, so a process answering
 *   several at once (the local server) builds as many as it ever ran at once — on Lambda, one per container.
 */
export class McpServerPool {
  readonly #dependencies: McpServerDependencies;
  readonly #idle: Server[] = [];
  /** The 2026-07-28 leg. Strict (`legacy: 'reject'`): 2025-era requests are routed to `serve` before it. */
  readonly modern: McpHttpHandler;

  constructor(dependencies: McpServerDependencies) {
    this.#dependencies = dependencies;
    this.modern = createMcpHandler(({ era }) => createMcpServer(dependencies, era), {
      legacy: 'reject',
      onerror(error) {
        dependencies.logger.warn('mcp request refused or failed', { transport: 'mcp', error });
      },
    });
  }

  /** Serves one 2025-era request with an idle server (built if none is), then gives the server back. */
  async serve<T>(use: (server: Server) => Promise<T>): Promise<T> {
    const server = this.#idle.pop() ?? createMcpServer(this.#dependencies, 'legacy');
    try {
      return await use(server);
    } finally {
      this.#idle.push(server);
    }
  }
}

/**
 * `POST /mcp`: MCP over Streamable HTTP, stateless, JSON responses, both protocol eras (`McpServerPool`):
 * 2026-07-28 (no `initialize`: the version and capabilities ride in each request's `_meta`) and
 * 2025-11-25 and earlier (`initialize`). The caller's identity comes from the verified token, as on every
 * other route; the token, the body's size, JSON and batches are checked here, before either era's server.
 */
export async function handleMcp(
  dependencies: McpHttpDependencies,
  servers: McpServerPool,
  event: ApiEvent,
  deadline: InvocationDeadline,
): Promise<HttpResponse> {
  const path = event.rawPath ?? '';
  if (path === PROTECTED_RESOURCE_METADATA_PATH || path === `${PROTECTED_RESOURCE_METADATA_PATH}${MCP_PATH}`) {
    return resourceMetadata(event, dependencies.issuer);
  }
  if (event.requestContext.http.method !== 'POST') {
    // Stateless: no server-sent event stream to GET, no session to DELETE.
    const response = errorResponse('method_not_allowed', `method: ${MCP_PATH} answers POST only`);
    return { ...response, headers: { ...response.headers, allow: 'POST' } };
  }
  const token = /^Bearer (.+)$/i.exec(header(event, 'authorization') ?? '')?.[1]?.trim();
  if (!token) return unauthorized(event, 'authorization: a bearer token is required', false);
  let claims: Record<string, string>;
  try {
    claims = await dependencies.verifyToken(token);
  } catch (error) {
    if (error instanceof VerifierUnavailableError) return verifierUnavailable(error);
    return unauthorized(event, `authorization: ${tokenRefusal(error)}`, true);
  }
  const caller = identityFromTokenClaims(claims);
  if (!caller) return unauthorized(event, `authorization: ${noCallerRefusal()}`, true);
  const body = bodyText(event);
  if (Buffer.byteLength(body, 'utf8') > MAX_BODY_BYTES) {
    return errorResponse('payload_too_large', `body: larger than ${MAX_BODY_BYTES} bytes`);
  }
  let message: unknown;
  try {
    message = JSON.parse(body);
  } catch {
    return jsonRpcError(400, -32700, 'Parse error: Invalid JSON');
  }
  // JSON-RPC batches left MCP in 2025-06-18; served, one POST would run many tools past the per-request
  // limits. Refused before any server exists, so none of its messages runs.
  if (Array.isArray(message)) {
    return jsonRpcError(400, -32600, 'Invalid Request: JSON-RPC batches are not supported; send one message per POST');
  }

  const context = { caller, deadline };
  const request = toRequest(event, body);
  const authInfo = mcpRequestAuth(token, context);
  // The era, as the SDK's own classifier reads it (the `_meta` envelope, the MCP-Protocol-Version header):
  // 2026-07-28, and every refusal of a request that claims a modern revision, to the SDK's entry.
  if (!(await isLegacyRequest(request, message))) {
    const unserved = unservedVersion(event, message);
    if (unserved !== undefined) {
      const id = (message as { id?: string | number } | null)?.id ?? null;
      return json(400, {
        jsonrpc: '2.0',
        id,
        error: {
          code: -32022,
          message: 'Unsupported protocol version',
          data: { supported: [...SERVED_VERSIONS], requested: unserved },
        },
      });
    }
    // `subscriptions/listen` is a server-sent event stream held open until the client leaves: one would
    // hold this invocation (one of the function's reserved few) to its timeout, and API Gateway buffers
    // the answer anyway. No list here ever changes, so nothing would be sent on it.
    if (isRequestFor(message, 'subscriptions/listen')) {
      // The transport: a method not implemented is 404 with -32601.
      return jsonRpcError(404, -32601, 'Method not found: subscriptions/listen (nothing here changes)', message.id);
    }
    return fromResponse(await servers.modern.fetch(request, { parsedBody: message, authInfo }));
  }
  return servers.serve(async function answer(server) {
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    try {
      await server.connect(transport);
      return fromResponse(await transport.handleRequest(request, { parsedBody: message, authInfo }));
    } finally {
      // Disconnects the transport; the server is free for the next request.
      await server.close();
    }
  });
}

/** The MCP endpoint's handler: `POST /mcp` and its resource metadata. */
export function mcpHandler(dependencies: McpHttpDependencies): LambdaHandler {
  const servers = new McpServerPool(dependencies);
  return withErrorBoundary('mcp', dependencies.logger, function mcp(event, context) {
    return handleMcp(dependencies, servers, event, context);
  });
}
