import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Context } from 'aws-lambda';
import { apiRoutes, DEFAULT_ROUTE_ENTRY, INVOCATION_TIMEOUT_SECONDS, type RouteDefinition } from '../api/routes';
import { type TokenVerifier, tokenRefusal } from '../auth/token-claims';
import type { LambdaHandler } from '../http/boundary';
import type { ApiEvent } from '../http/event';
import { errorResponse, type HttpResponse, json } from '../http/status';
import type { AnyToolModule } from '../tools/tool-module';
import { type ApiComposition, createHandlers } from './handlers';
import { RouteBuckets } from './route-buckets';

/**
 * What the local API serves: the tools (their routes and handlers are derived from them, as the stack
 * derives its functions), over services and a runtime the caller built.
 */
export interface LocalApiOptions<T extends AnyToolModule> extends ApiComposition<T> {
  /** @default 3000 (0 picks a free port) */
  readonly port?: number;
  /** @default '127.0.0.1' — loopback only */
  readonly host?: string;
  /**
   * Host names served besides the loopback ones (127.0.0.1, localhost, [::1]), on any port: a tunnel's
   * or a reverse proxy's name (`npm start` reads them from `ALLOWED_HOSTS`, see `allowedHostNames`).
   * @default [] (loopback names only)
   */
  readonly allowedHosts?: readonly string[];
  /**
   * The invocation timeout each request's Lambda-like context counts down from.
   * @default the deployed functions' timeout (INVOCATION_TIMEOUT_SECONDS)
   */
  readonly timeoutMs?: number;
  /**
   * API Gateway's throttling: each route's bucket as the stack sizes it (`lib/api/throttle.ts`), a
   * request over it answered 429 as API Gateway answers it. `'none'`: no bucket (a test about something
   * else that sends more than the gateway would let through).
   * @default new RouteBuckets() — the stack's buckets on the wall clock
   */
  readonly throttle?: RouteBuckets | 'none';
  /**
   * API Gateway's JWT authorizer: deployed, it fetches and caches the issuer's keys apart from the
   * functions (which verify the token again), so the two can disagree for a while — keys the gateway
   * still holds while a function cannot fetch them.
   * @default verifyToken (the same verifier as the handlers)
   */
  readonly authorizer?: TokenVerifier;
}

export interface LocalApi {
  readonly url: string;
  /** Every route it serves (the tools', `get_operation`, the reads', the API's own), as the stack routes them. */
  readonly routes: readonly RouteDefinition[];
  close(): Promise<void>;
}

interface MatchedRoute {
  readonly route: RouteDefinition | undefined;
  readonly pathParameters: Record<string, string>;
}

/** The route for a method and path, with its path parameters (still URL-encoded, as API Gateway passes them). */
function match(routes: readonly RouteDefinition[], method: string, path: string): MatchedRoute {
  const segments = path.split('/');
  for (const route of routes) {
    if (route.method !== method) continue;
    const pattern = route.path.split('/');
    if (pattern.length !== segments.length) continue;
    const pathParameters: Record<string, string> = {};
    const matches = pattern.every((part, i) => {
      const segment = segments[i] ?? '';
      if (part.startsWith('{') && part.endsWith('}')) {
        pathParameters[part.slice(1, -1)] = segment;
        return segment !== '';
      }
      return part === segment;
    });
    if (matches) return { route, pathParameters };
  }
  return { route: undefined, pathParameters: {} };
}

class BodyTooLarge extends Error {}

/**
 * Largest request the server hands to a handler: Lambda's synchronous payload limit (6 MB). The API's
 * own 64 KB limit for writes is the handlers' (as deployed), not the server's.
 */
const MAX_PAYLOAD_BYTES = 6 * 1024 * 1024;

/**
 * How long a connection may go on sending a body the server answered without (a refusal before it
 * arrived, or past the limit) before it is closed: nginx's `lingering_time`, shortened.
 */
const LINGER_MS = 5_000;

/**
 * The rest of a body the server answers without: read and dropped as it arrives, never parsed. Its
 * answer says `connection: close` while the body is still arriving (`send`).
 */
function dropRest(request: IncomingMessage, answeredEarly: WeakSet<IncomingMessage>): void {
  answeredEarly.add(request);
  request.resume();
}

/**
 * nginx's lingering close, for a `connection: close` answer given while its request's body still arrives.
 * Node ends such a connection with `socket.destroySoon()` once the answer is written: a close with unread
 * data resets the connection, and a client still writing its body loses the answer with it (`write
 * EPIPE`, never the 401 or 413). Instead the socket is half-closed (the answer is whole), the rest of the
 * body is read and dropped (`dropRest`), and the socket goes once the client closes, or `LINGER_MS` after.
 */
function closeLingering(socket: Socket): void {
  socket.destroySoon = function lingeringClose() {
    socket.end();
    const linger = setTimeout(() => socket.destroy(), LINGER_MS);
    linger.unref();
    socket.once('close', () => clearTimeout(linger));
  };
}

/** The body, up to the limit. Past it, the rest is dropped (`dropRest`) and the 413 reaches the client. */
function readBody(request: IncomingMessage, answeredEarly: WeakSet<IncomingMessage>): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_PAYLOAD_BYTES) {
        chunks.push(chunk);
        return;
      }
      request.off('data', onData);
      request.off('end', onEnd);
      dropRest(request, answeredEarly);
      reject(new BodyTooLarge());
    };
    const onEnd = () => resolve(Buffer.concat(chunks).toString('utf8'));
    request.on('data', onData);
    request.once('end', onEnd);
    request.once('error', reject);
  });
}

/** An API Gateway HTTP API payload 2.0 event, as the JWT authorizer hands it to the Lambda. */
function toEvent(
  request: IncomingMessage,
  url: URL,
  body: string,
  routeKey: string,
  pathParameters: Record<string, string>,
  tokenClaims: Record<string, string> | undefined,
): ApiEvent {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  headers['x-forwarded-proto'] = 'http'; // API Gateway sets it (https there)
  const now = Date.now();
  return {
    version: '2.0',
    routeKey,
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers,
    ...(Object.keys(pathParameters).length > 0 ? { pathParameters } : {}),
    ...(body === '' ? {} : { body }),
    isBase64Encoded: false,
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: request.headers.host ?? url.host,
      domainPrefix: 'local',
      http: {
        method: request.method ?? 'GET',
        path: url.pathname,
        protocol: `HTTP/${request.httpVersion}`,
        sourceIp: request.socket.remoteAddress ?? '',
        userAgent: request.headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey,
      stage: '$default',
      time: new Date(now).toISOString(),
      timeEpoch: now,
      authorizer: { principalId: '', integrationLatency: 0, jwt: { claims: tokenClaims ?? {}, scopes: [] } },
    },
  } as ApiEvent;
}

/** A Lambda-like context whose remaining time counts down a real per-request deadline. */
function toContext(name: string, timeoutMs: number): Context {
  const deadline = Date.now() + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: `retrysafe-local-${name}`,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:retrysafe-local-${name}`,
    memoryLimitInMB: '256',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/retrysafe-local-${name}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** The request target as a URL on this server, or undefined when it is none. */
function requestUrl(target: string | undefined): URL | undefined {
  try {
    return new URL(target ?? '/', 'http://localhost');
  } catch {
    return undefined;
  }
}

/** The names a loopback server always answers to, as the URL parser spells them (IPv6 in brackets). */
const LOOPBACK_HOST_NAMES: readonly string[] = ['127.0.0.1', 'localhost', '[::1]'];

/** A Host header: a name (or bracketed IPv6 address) and an optional port, nothing else. */
const HOST_HEADER = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::\d{1,5})?$/i;

/**
 * `ALLOWED_HOSTS`: comma-separated host names (no port, no scheme) the local server answers to besides
 * the loopback ones — a tunnel's, a reverse proxy's, a container's published name.
 */
export function allowedHostNames(env: NodeJS.ProcessEnv = process.env): string[] {
  const names = (env.ALLOWED_HOSTS ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '');
  const invalid = names.filter((name) => !HOST_HEADER.test(name) || /:\d+$/.test(name.replace(/^\[.*\]$/, '')));
  if (invalid.length > 0) throw new Error(`ALLOWED_HOSTS: not host names: ${invalid.join(', ')}`);
  return names;
}

/** The name a Host header gives (lower case, port dropped), or undefined when it is not a host. */
function hostNameOf(hostHeader: string | undefined): string | undefined {
  const name = HOST_HEADER.exec(hostHeader ?? '')?.[1];
  return name?.toLowerCase();
}

/**
 * DNS-rebinding protection, as the MCP transport asks of local servers: a page on another site that
 * rebinds its name to 127.0.0.1 still sends its own name as Host and Origin, so only the names this
 * server answers to are served — the loopback names and `allowedHosts`, on any port (a port-forward,
 * `docker run -p 8080:3000` or a debugging proxy changes the port, not the name). An Origin, when sent,
 * must name one of them too.
 */
function fromAllowedHost(request: IncomingMessage, names: ReadonlySet<string>): boolean {
  const host = hostNameOf(request.headers.host);
  if (host === undefined || !names.has(host)) return false;
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  try {
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === origin && names.has(url.hostname);
  } catch {
    return false;
  }
}

/**
 * The handler's answer, or — when the invocation's time is up — a JSON 504 (on AWS, Lambda would have cut
 * the function off and API Gateway answered for it; the deployed handlers answer their own 503 before
 * that). The handler is not frozen as on Lambda, but it can write nothing more: its DynamoDB calls carry
 * the deadline (`withInvocationDeadline`) and are aborted at it.
 */
async function answerByDeadline(answer: Promise<HttpResponse>, timeoutMs: number): Promise<HttpResponse> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<HttpResponse>((resolve) => {
    timer = setTimeout(
      () => resolve(errorResponse('timeout', `invocation: no answer within ${timeoutMs} ms; retry with the same key`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([answer, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/** API Gateway's own answer to a request over its route's bucket. */
const THROTTLED: HttpResponse = json(429, { message: 'Too Many Requests' });

/**
 * Writes the answer. One given before its request's body arrived (`answeredEarly`) closes the connection
 * after it, lingering (`closeLingering`).
 */
function send(request: IncomingMessage, response: ServerResponse, result: HttpResponse, answeredEarly: boolean) {
  const close = answeredEarly && !request.complete;
  if (close) closeLingering(request.socket);
  response.writeHead(result.statusCode, {
    ...result.headers,
    'content-length': Buffer.byteLength(result.body),
    ...(close ? { connection: 'close' } : {}),
  });
  response.end(result.body);
}

/**
 * Serves the HTTP API on one machine: each request becomes the event API Gateway would send, handed
 * to the same handler Lambda runs. Only what API Gateway itself does lives here — routing, throttling,
 * the JWT authorizer, the body limit; everything else is the handlers'.
 */
export async function startLocalApi<T extends AnyToolModule>(options: LocalApiOptions<T>): Promise<LocalApi> {
  const timeoutMs = options.timeoutMs ?? INVOCATION_TIMEOUT_SECONDS * 1000;
  const buckets = options.throttle === 'none' ? undefined : (options.throttle ?? new RouteBuckets());
  const authorizer = options.authorizer ?? options.verifyToken;
  const hostNames: ReadonlySet<string> = new Set([
    ...LOOPBACK_HOST_NAMES,
    ...(options.allowedHosts ?? []).map((name) => name.toLowerCase()),
  ]);
  /** Requests answered without their body (`dropRest`). */
  const answeredEarly = new WeakSet<IncomingMessage>();
  const routes: readonly RouteDefinition[] = apiRoutes(options.tools, options.reads ?? []);
  const handlers: Readonly<Record<string, LambdaHandler>> = createHandlers(options);

  async function handle(request: IncomingMessage): Promise<HttpResponse> {
    if (!fromAllowedHost(request, hostNames)) {
      dropRest(request, answeredEarly);
      return errorResponse(
        'forbidden',
        'host: Host and Origin must name this server (a loopback name, or one ALLOWED_HOSTS lists)',
      );
    }
    const url = requestUrl(request.url);
    if (!url) {
      // A target that is no URL (`//`, `//%zz/x`) names no route: the same JSON 404 as every miss.
      dropRest(request, answeredEarly);
      return errorResponse('not_found', 'route: not a request target');
    }
    const { route, pathParameters } = match(routes, request.method ?? 'GET', url.pathname);
    // As API Gateway does: the route's bucket, then the authorizer. Every request takes a token, with a
    // valid bearer token or not (see RouteBuckets).
    if (buckets && !buckets.admit(route)) {
      dropRest(request, answeredEarly);
      return THROTTLED;
    }
    // The authorizer: every route but the public ones (GET /health, the RFC 9728 metadata, the OpenAPI
    // document) needs a token, and so does a request no route matches ($default): without one, a caller
    // learns nothing, not even a 404 or a 413 — and no handler runs. Its body is never parsed, only
    // dropped as it arrives, and the connection closes after the answer (`closeLingering`).
    let tokenClaims: Record<string, string> | undefined;
    if ((route?.auth ?? 'gateway') === 'gateway') {
      const token = /^Bearer (.+)$/i.exec(request.headers.authorization ?? '')?.[1];
      let verified: Record<string, string> | undefined;
      let refusal = 'a bearer token is required';
      try {
        verified = token ? await authorizer(token.trim()) : undefined;
      } catch (error) {
        refusal = tokenRefusal(error);
      }
      if (!verified) {
        dropRest(request, answeredEarly);
        return errorResponse('unauthorized', `authorization: ${refusal}`);
      }
      tokenClaims = verified;
    }
    let body: string;
    try {
      body = await readBody(request, answeredEarly);
    } catch (error) {
      if (error instanceof BodyTooLarge)
        return errorResponse('payload_too_large', `body: larger than ${MAX_PAYLOAD_BYTES} bytes`);
      throw error;
    }
    return answer(request, url, route, pathParameters, body, tokenClaims);
  }

  /** The route's handler answers the request as API Gateway would have handed it over. */
  function answer(
    request: IncomingMessage,
    url: URL,
    route: RouteDefinition | undefined,
    pathParameters: Record<string, string>,
    body: string,
    tokenClaims: Record<string, string> | undefined,
  ): Promise<HttpResponse> {
    const name = route?.entry ?? DEFAULT_ROUTE_ENTRY;
    const handler = handlers[name];
    if (!handler) throw new Error(`no handler for ${name}`);
    const routeKey = route ? `${route.method} ${route.path}` : '$default';
    return answerByDeadline(
      handler(toEvent(request, url, body, routeKey, pathParameters, tokenClaims), toContext(name, timeoutMs)),
      timeoutMs,
    );
  }

  const server: Server = createServer((request, response) => {
    handle(request)
      .then((result) => send(request, response, result, answeredEarly.has(request)))
      .catch(() => send(request, response, errorResponse('internal', 'internal error'), answeredEarly.has(request)));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 3000, options.host ?? '127.0.0.1', () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${address}:${port}`,
    routes,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
