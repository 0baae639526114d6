import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { HttpRequest, HttpResponse } from '@smithy/types';
import { DynamoDBError, NotModelledError } from './attribute-values';
import type { MemoryDynamoDB } from './memory-dynamodb';

/** What the SDK's clients take as `requestHandler`, and what `createDynamoDBClient` wraps. */
export interface MemoryRequestHandler {
  readonly metadata: { readonly handlerProtocol: string };
  handle(request: HttpRequest): Promise<{ response: HttpResponse }>;
  updateHttpClientConfig(): void;
  httpHandlerConfigs(): Record<string, never>;
  destroy(): void;
}

/**
 * The SDK's HTTP handler replaced by a call of the in-memory engine: the unmodified DynamoDB and
 * DynamoDB Streams clients serialise each request to the JSON protocol, sign it and parse the answer —
 * errors included (`ConditionalCheckFailedException` with its `Item`) — exactly as they do against
 * DynamoDB Local; only the socket is gone. The access key of the request's signature is its namespace,
 * as DynamoDB Local keeps each key's tables apart.
 *
 * A request outside the model is answered with a 500 (the code sees a transient error, nothing a
 * DynamoDB would have said) and kept in `unmodelled`: the explorer stops on it.
 */
export function memoryRequestHandler(engine: MemoryDynamoDB, unmodelled: string[]): MemoryRequestHandler {
  return {
    metadata: { handlerProtocol: 'in-memory' },
    async handle(request) {
      const target = header(request, 'x-amz-target') ?? '';
      const operation = target.slice(target.indexOf('.') + 1);
      const namespace = /Credential=([^/]+)\//.exec(header(request, 'authorization') ?? '')?.[1] ?? '';
      // The bytes as they are (the SDK's body also has string methods, which warn when called).
      const body = request.body instanceof Uint8Array ? utf8.decode(request.body) : String(request.body ?? '{}');
      try {
        return respond(200, engine.handle(namespace, operation, JSON.parse(body) as Record<string, unknown>));
      } catch (error) {
        if (error instanceof DynamoDBError) {
          return respond(400, {
            __type: `com.amazonaws.dynamodb.v20120810#${error.type}`,
            message: error.message,
            ...error.members,
          });
        }
        unmodelled.push(`${operation}: ${(error as Error).message}`);
        const type = error instanceof NotModelledError ? 'NotModelled' : 'InternalServerError';
        return respond(500, { __type: `com.amazonaws.dynamodb.v20120810#${type}`, message: (error as Error).message });
      }
    },
    updateHttpClientConfig() {},
    httpHandlerConfigs: () => ({}),
    destroy() {},
  };
}

/**
 * The SDK's default HTTP handler diverted to `handler` for one host: every DynamoDB and DynamoDB Streams
 * client built without a handler instance of its own — `createDynamoDBClient` and `createStreamsClient`
 * give only the handler's options, so the SDK builds its `NodeHttpHandler` — sends its requests for
 * `endpoint` to `handler`, and any other request over the network as before (a test's unreachable port
 * still refuses). For the code that builds its own clients from `DYNAMODB_ENDPOINT`, which no
 * `requestHandler` option reaches; lib/ is not changed. The answer comes on a later turn of the event
 * loop, as a socket's would. Returns the undo.
 *
 * It patches the `NodeHttpHandler` of the module registry it runs in: under Jest, that test file's.
 */
export function divertDefaultHandler(endpoint: string, handler: Pick<MemoryRequestHandler, 'handle'>): () => void {
  const host = new URL(endpoint).hostname;
  const prototype = NodeHttpHandler.prototype;
  const original = prototype.handle;
  prototype.handle = async function handleDiverted(
    this: NodeHttpHandler,
    ...[request, options]: Parameters<typeof original>
  ) {
    if (request.hostname !== host) return original.call(this, request, options);
    await new Promise<void>((resolve) => setImmediate(resolve));
    return handler.handle(request) as ReturnType<typeof original>;
  };
  return function undoDivert() {
    prototype.handle = original;
  };
}

const utf8 = new TextDecoder();

function header(request: HttpRequest, name: string): string | undefined {
  for (const [key, value] of Object.entries(request.headers)) if (key.toLowerCase() === name) return value;
  return undefined;
}

function respond(statusCode: number, payload: Record<string, unknown>): { response: HttpResponse } {
  return {
    response: {
      statusCode,
      headers: { 'content-type': 'application/x-amz-json-1.0' },
      body: Buffer.from(JSON.stringify(payload)),
    },
  };
}
