import { UNAVAILABLE_RETRY_AFTER_MS } from '../api/next-step';
import { type ApiEntryName, apiRoutes, INVOCATION_TIMEOUT_SECONDS, type RouteDefinition } from '../api/routes';
import { HTTP_STATUS, type HttpErrorCode, MAX_BODY_BYTES } from '../api/status';
import { clientKeySchema, IDEMPOTENCY_KEY_FIELD, type JsonObject } from '../idempotency/definition';
import { foundAnswer } from '../reads/answers';
import { describeTool, errorAnswer, jsonSchemaOf, pendingAnswer, receiptAnswer } from '../tools/catalog';
import type { AnyReadModule } from '../tools/read-module';
import type { AnyToolModule } from '../tools/tool-module';
import { API_SCHEMAS, type ApiSchemaName } from './schemas';

/** What `openApiDocument` names and where it says the API is. */
export interface OpenApiOptions {
  /**
   * The API's base URL (`https://….execute-api.….amazonaws.com`, `http://127.0.0.1:3000`), listed as its
   * one server.
   * @default undefined: no `servers`, so paths resolve against the URL the document was fetched from
   */
  readonly serverUrl?: string;
  /** `info.title`. @default 'retrysafe' */
  readonly title?: string;
  /** `info.version`: the version of the API the document describes (the package's, for `bin/openapi.ts`). @default 'unversioned' */
  readonly version?: string;
  /**
   * The app's own reads (`defineReadModule`: `GET` routes besides `get_operation`), each documented
   * from its definition: its path parameters, its answer's schema and its refusals.
   * @default none
   */
  readonly reads?: readonly AnyReadModule[];
}

export const OPENAPI_DEFAULTS = { title: 'retrysafe', version: 'unversioned' } as const;

type Method = 'get' | 'post' | 'delete';
type Content = Readonly<Record<'application/json', { readonly schema: JsonObject }>>;

export interface OpenApiHeader {
  readonly description: string;
  readonly required?: boolean;
  readonly schema: JsonObject;
}

export interface OpenApiResponse {
  readonly description: string;
  readonly headers?: Readonly<Record<string, OpenApiHeader>>;
  readonly content?: Content;
}

export interface OpenApiParameter {
  readonly name: string;
  readonly in: 'path' | 'header';
  readonly required: boolean;
  readonly description: string;
  readonly schema: JsonObject;
}

export interface OpenApiOperation {
  readonly operationId: string;
  readonly summary: string;
  readonly description?: string;
  /** `[]` on a public route; the bearer JWT everywhere else. */
  readonly security: readonly Readonly<Record<string, readonly string[]>>[];
  readonly parameters?: readonly (OpenApiParameter | { readonly $ref: string })[];
  readonly requestBody?: { readonly required: boolean; readonly description?: string; readonly content: Content };
  readonly responses: Readonly<Record<string, OpenApiResponse>>;
  /** On a write: which keys protect the tool (`x-retrysafe-idempotency`) and its MCP annotations. */
  readonly [extension: `x-${string}`]: unknown;
}

export type OpenApiPathItem = Partial<Record<Method, OpenApiOperation>>;

/** An OpenAPI 3.1 document: what `openApiDocument` returns, ready for `JSON.stringify`. */
export interface OpenApiDocument {
  readonly openapi: '3.1.0';
  readonly info: { readonly title: string; readonly version: string; readonly description: string };
  readonly servers?: readonly { readonly url: string }[];
  readonly paths: Readonly<Record<string, OpenApiPathItem>>;
  readonly components: {
    readonly schemas: Readonly<Record<string, JsonObject>>;
    readonly parameters: Readonly<Record<string, OpenApiParameter>>;
    readonly securitySchemes: Readonly<Record<string, JsonObject>>;
  };
}

/** The security scheme's name under `components/securitySchemes`. */
export const BEARER_SCHEME = 'bearer';

/** What each error code tells a caller, in the response that carries it; the compiler wants every code. */
const ERROR_DESCRIPTIONS: Readonly<Record<HttpErrorCode, string>> = {
  invalid_args:
    '`invalid_args`: bad, missing or unknown fields, a missing key, malformed JSON; the message names the field to fix.',
  unauthorized: '`unauthorized`: no bearer token, or not a valid one (signature, issuer, audience, exp, tenant, sub).',
  forbidden: '`forbidden`: a foreign Host or Origin on the loopback server (local only).',
  not_found: '`not_found`: no such object for the caller (another tenant’s or user’s is not found either).',
  method_not_allowed: '`method_not_allowed`: stateless MCP has no stream to GET and no session to DELETE.',
  payload_too_large: `\`payload_too_large\`: the body is over ${MAX_BODY_BYTES} bytes.`,
  conflict: '`conflict`: the key was used with other arguments. Mint a new key only for a new intent.',
  internal: '`internal`: anything unexpected; the message is `internal error`, the cause is logged.',
  unavailable: '`unavailable`: a store is unavailable; retry with the same key after `Retry-After`.',
  timeout: `\`timeout\`: no answer within the invocation timeout (${INVOCATION_TIMEOUT_SECONDS} s); retry with the same key.`,
};

/** Where API Gateway answers by itself, in its own shape. */
function gatewayAnswers(code: HttpErrorCode, auth: RouteDefinition['auth']): boolean {
  return (
    code === 'internal' ||
    code === 'unavailable' ||
    code === 'timeout' ||
    (code === 'unauthorized' && auth === 'gateway')
  );
}

const GATEWAY_NOTE =
  ' Deployed, API Gateway may answer this status itself (its JWT authorizer, a function that crashed, timed out or was throttled), with its own body `{ message }`.';

/** The client key's JSON Schema, from the schema the runtime validates keys with. */
const KEY_SCHEMA = jsonSchemaOf(clientKeySchema);

const IDEMPOTENCY_KEY_HEADER: OpenApiParameter = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description: `The client key, as the IETF Idempotency-Key draft (a quoted string, \`"k1"\`) or Stripe (bare, \`k1\`) sends it: an alternative to the body's \`${IDEMPOTENCY_KEY_FIELD}\`, which the body may then omit. Both present and different: 400 \`invalid_args\`.`,
  schema: {
    anyOf: [
      KEY_SCHEMA,
      { type: 'string', pattern: '^"[\\x20-\\x7E]+"$', maxLength: (KEY_SCHEMA.maxLength as number) + 2 },
    ],
  },
};

const WRITE_BODY_DESCRIPTION = `The tool's arguments, flat, with \`${IDEMPOTENCY_KEY_FIELD}\`: required unless the \`Idempotency-Key\` header carries the key. OpenAPI cannot make a body field depend on a header, so the schema requires it: the form agents are told to send, and the one \`GET /tools\` and MCP list.`;

/** `Retry-After`, in whole seconds, as `lib/http/status.ts` sends it. */
function retryAfterHeader(description: string, required: boolean): OpenApiHeader {
  return { description, required, schema: { type: 'integer', minimum: 1 } };
}

function schemaRef(name: string): JsonObject {
  return { $ref: `#/components/schemas/${name}` };
}

function json(schema: JsonObject): Content {
  return { 'application/json': { schema } };
}

/** `invalid_args` → `InvalidArgs`. */
function pascal(snake: string): string {
  return snake.replace(/(^|_)([a-z0-9])/g, (_match, _separator, letter: string) => letter.toUpperCase());
}

/** The first sentence of a description, as an operation's summary. */
function firstSentence(text: string): string {
  return /^.*?[.!?](?=\s|$)/.exec(text)?.[0] ?? text;
}

/**
 * A generated schema as it sits at `components/schemas/<name>`: without `$schema`, since an OpenAPI
 * 3.1 document's default dialect (no `jsonSchemaDialect` is set) is JSON Schema 2020-12 with OpenAPI's
 * few keywords added, so the schema means the same there and the document has one dialect throughout;
 * and with its own `#…` references (zod's `$defs`, a recursive receipt) rebased onto where it now sits,
 * since inside the document `#` is the document's root.
 */
function placed(name: string, schema: JsonObject): JsonObject {
  const { $schema: _dialect, ...rest } = schema;
  return rebased(rest, `#/components/schemas/${name}`) as JsonObject;
}

function rebased(value: unknown, base: string): unknown {
  if (Array.isArray(value)) return value.map((item) => rebased(item, base));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [
      key,
      key === '$ref' && typeof item === 'string' && item.startsWith('#')
        ? `${base}${item.slice(1)}`
        : rebased(item, base),
    ]),
  );
}

/** The document's `components/schemas`, filled as operations refer to them. */
class SchemaComponents {
  readonly schemas: Record<string, JsonObject> = {};

  /** Places `schema` under `name` and refers to it; a name given twice must mean the same schema. */
  add(name: string, schema: JsonObject): JsonObject {
    const component = placed(name, schema);
    const existing = this.schemas[name];
    if (existing && JSON.stringify(existing) !== JSON.stringify(component)) {
      throw new Error(`openapi: two different schemas are named ${name}`);
    }
    this.schemas[name] = component;
    return schemaRef(name);
  }

  api(name: ApiSchemaName): JsonObject {
    return this.add(name, API_SCHEMAS[name]);
  }
}

/**
 * The error responses of a route that can answer `codes`: one per status `HTTP_STATUS` maps them to,
 * each with the error shape whose `code` is limited to the codes that status carries there.
 */
function errorResponses(
  codes: readonly HttpErrorCode[],
  auth: RouteDefinition['auth'],
  components: SchemaComponents,
  /** Whether its 401 carries a `WWW-Authenticate` challenge worth documenting (the MCP endpoint's). */
  challenges = false,
): Record<string, OpenApiResponse> {
  const byStatus = new Map<number, HttpErrorCode[]>();
  for (const code of codes) byStatus.set(HTTP_STATUS[code], [...(byStatus.get(HTTP_STATUS[code]) ?? []), code]);
  const responses: Record<string, OpenApiResponse> = {};
  for (const [status, carried] of byStatus) {
    const [first, ...rest] = carried as [HttpErrorCode, ...HttpErrorCode[]];
    const ours = components.add(`${carried.map(pascal).join('Or')}Error`, jsonSchemaOf(errorAnswer([first, ...rest])));
    const gateway = carried.some((code) => gatewayAnswers(code, auth));
    const headers: Record<string, OpenApiHeader> = {};
    if (carried.includes('unavailable')) {
      headers['Retry-After'] = retryAfterHeader(
        `Seconds to wait before retrying (${UNAVAILABLE_RETRY_AFTER_MS / 1000}); sent with every \`unavailable\`.`,
        false,
      );
    }
    if (carried.includes('unauthorized') && challenges) {
      headers['WWW-Authenticate'] = {
        description:
          'API Gateway’s JWT authorizer: `Bearer` with `error="invalid_token"` and why for a bad token. The MCP function itself (a token the authorizer let through that names no caller): `Bearer resource_metadata="…/.well-known/oauth-protected-resource/mcp"` (RFC 9728), `error="invalid_token"`. MCP clients find the metadata at that well-known path when the challenge does not name it.',
        required: false,
        schema: { type: 'string' },
      };
    }
    responses[String(status)] = {
      description: carried.map((code) => ERROR_DESCRIPTIONS[code]).join(' ') + (gateway ? GATEWAY_NOTE : ''),
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
      content: json(gateway ? { anyOf: [ours, components.api('GatewayMessage')] } : ours),
    };
  }
  return responses;
}

/**
 * The path parameters a route's `{placeholders}` name, described — the API's own (`tool`, `key`), or a
 * read's arguments (`args`: their JSON Schema's properties); a placeholder without one is refused.
 */
function pathParameters(path: string, tools: readonly AnyToolModule[], args: JsonObject = {}): OpenApiParameter[] {
  const properties = (args.properties ?? {}) as Readonly<Record<string, JsonObject>>;
  const own = Object.fromEntries(
    Object.entries(properties).map(([name, { description, ...schema }]) => [
      name,
      { description: typeof description === 'string' ? description : name, schema },
    ]),
  );
  const known: Readonly<Record<string, Omit<OpenApiParameter, 'name' | 'in' | 'required'>>> = {
    ...own,
    tool: {
      description: 'The write tool the key was used with.',
      schema: { type: 'string', ...(tools.length > 0 ? { enum: tools.map((tool) => tool.name) } : {}) },
    },
    key: { description: `The \`${IDEMPOTENCY_KEY_FIELD}\` of the call.`, schema: KEY_SCHEMA },
  };
  return [...path.matchAll(/\{([^}]+)\}/g)].map(([, name = '']) => {
    const described = known[name];
    if (!described) throw new Error(`openapi: no description of the path parameter {${name}} in ${path}`);
    return { name, in: 'path', required: true, ...described };
  });
}

/** The security a route's `auth` asks for: the bearer JWT, checked by API Gateway or the function, or none. */
function securityOf(route: RouteDefinition): OpenApiOperation['security'] {
  return route.auth === 'public' ? [] : [{ [BEARER_SCHEME]: [] }];
}

/** What a write can answer besides its receipt and pending: its 4xx and 5xx, by code. */
const WRITE_ERRORS = [
  'invalid_args',
  'unauthorized',
  'not_found',
  'payload_too_large',
  'conflict',
  'internal',
  'unavailable',
  'timeout',
] as const satisfies readonly HttpErrorCode[];

/** What a read of the stores can answer besides its 200. */
const STORE_READ_ERRORS = [
  'unauthorized',
  'not_found',
  'internal',
  'unavailable',
  'timeout',
] as const satisfies readonly HttpErrorCode[];

/** What builds one operation: the route, the API's tools, and the components it refers to. */
type OperationBuilder = (
  route: RouteDefinition,
  tools: readonly AnyToolModule[],
  components: SchemaComponents,
) => OpenApiOperation;

/** `POST /tools/{name}`: the tool's body, its answers, and which keys protect it. */
function writeOperation(tool: AnyToolModule, route: RouteDefinition, components: SchemaComponents): OpenApiOperation {
  const described = describeTool(tool);
  return {
    operationId: tool.name,
    summary: firstSentence(described.description),
    description: described.description,
    security: securityOf(route),
    parameters: [{ $ref: '#/components/parameters/IdempotencyKey' }],
    requestBody: {
      required: true,
      description: WRITE_BODY_DESCRIPTION,
      content: json(components.add(`${tool.name}_input`, described.input_schema)),
    },
    responses: {
      200: {
        description:
          'Executed (`idempotent: false`), or a replay of the first execution (`idempotent: true`, the identical receipt): by the client key, or by the natural key or dedupe window whatever the key.',
        headers: {
          'Idempotent-Replayed': {
            description: '`true` on a replay; absent on the first execution.',
            required: false,
            schema: { type: 'string', const: 'true' },
          },
        },
        content: json(components.add(`${tool.name}_answer`, jsonSchemaOf(receiptAnswer(tool.receipt)))),
      },
      202: {
        description:
          'The first call with this key is still running: call again with the same key and arguments (or poll `GET /tools/{tool}/operations/{key}`) after `retry_after_ms`.',
        headers: { 'Retry-After': retryAfterHeader('Seconds to wait, `retry_after_ms` rounded up.', true) },
        content: json(components.add('PendingAnswer', jsonSchemaOf(pendingAnswer))),
      },
      ...errorResponses(WRITE_ERRORS, route.auth, components),
    },
    'x-retrysafe-idempotency': described.idempotency,
    'x-retrysafe-annotations': described.annotations,
  };
}

/** A read: a 200 with `schema`, and the errors in `codes`. */
function readOf(
  operationId: string,
  summary: string,
  schema: ApiSchemaName,
  codes: readonly HttpErrorCode[],
): OperationBuilder {
  return function buildRead(route, tools, components) {
    const parameters = pathParameters(route.path, tools);
    return {
      operationId,
      summary,
      security: securityOf(route),
      ...(parameters.length > 0 ? { parameters } : {}),
      responses: {
        200: { description: summary, content: json(components.api(schema)) },
        ...errorResponses(codes, route.auth, components),
      },
    };
  };
}

/**
 * `GET <path>` of an app's own read (`defineReadModule`): its arguments as path parameters, its answer's
 * schema (`<Name>Answer`, a leading `get_` dropped), and what a read of the stores can refuse.
 */
function readModuleOperation(
  read: AnyReadModule,
  route: RouteDefinition,
  tools: readonly AnyToolModule[],
  components: SchemaComponents,
): OpenApiOperation {
  const parameters = pathParameters(route.path, tools, jsonSchemaOf(read.args, 'input'));
  const answer = `${pascal(read.name.replace(/^get_/, ''))}Answer`;
  return {
    operationId: read.name,
    summary: firstSentence(read.description),
    description: read.description,
    security: securityOf(route),
    ...(parameters.length > 0 ? { parameters } : {}),
    responses: {
      200: {
        description: firstSentence(read.description),
        content: json(components.add(answer, jsonSchemaOf(foundAnswer(read.found)))),
      },
      ...errorResponses(STORE_READ_ERRORS, route.auth, components),
    },
  };
}

/** `/mcp` and its RFC 9728 metadata: one entry, told apart by method and auth. */
const mcpOperation: OperationBuilder = function buildMcp(route, _tools, components) {
  const method = route.method.toLowerCase();
  if (route.auth === 'public') {
    return {
      operationId: `get${route.path.replace(/[^a-z0-9]+/g, '_')}`,
      summary: 'RFC 9728 metadata of the MCP resource: its authorization server (the JWT issuer).',
      security: [],
      responses: {
        200: {
          description: 'The protected resource metadata.',
          content: json(components.api('ProtectedResourceMetadata')),
        },
      },
    };
  }
  if (route.method !== 'POST') {
    return {
      operationId: `mcp_${method}`,
      summary: 'Not served: stateless MCP answers POST only.',
      security: securityOf(route),
      responses: errorResponses(['unauthorized', 'method_not_allowed'], route.auth, components),
    };
  }
  const message = components.api('JsonRpcMessage');
  return {
    operationId: 'mcp',
    summary: 'MCP over Streamable HTTP: JSON-RPC, stateless, JSON responses.',
    description:
      'The same tools as the REST routes (and the reads: the app’s own and `get_operation`), spoken as MCP: `initialize`, `tools/list`, `tools/call`. Send `Accept: application/json, text/event-stream`. API Gateway’s JWT authorizer checks the token, as on every other route: a request without a valid one never reaches the MCP function. MCP clients find the authorization server in the RFC 9728 metadata at `/.well-known/oauth-protected-resource/mcp`.',
    security: securityOf(route),
    requestBody: { required: true, description: 'One JSON-RPC message.', content: json(message) },
    responses: {
      200: { description: 'The JSON-RPC response.', content: json(message) },
      202: { description: 'A notification or response was accepted; no body.' },
      '4XX': {
        description: 'The MCP transport refused the request (JSON-RPC, Accept or Content-Type).',
        content: json(message),
      },
      ...errorResponses(
        ['unauthorized', 'payload_too_large', 'internal', 'unavailable', 'timeout'],
        route.auth,
        components,
        true,
      ),
    },
  };
};

/**
 * The operation of each entry point that is not a tool; `not_found` has none (it answers what no route
 * matches). The type wants a line per entry, so a new entry point cannot be left undocumented.
 */
const API_OPERATIONS: Readonly<Record<ApiEntryName, OperationBuilder | null>> = {
  health: readOf('health', 'The API is up. No token.', 'Health', []),
  list_tools: readOf(
    'list_tools',
    'Every write tool: its JSON Schemas, MCP annotations and the keys that protect it.',
    'ToolListing',
    ['unauthorized', 'internal'],
  ),
  get_operation: readOf(
    'get_operation',
    "The caller's own record of a key: completed with its receipt, pending, or abandoned.",
    'OperationAnswer',
    STORE_READ_ERRORS,
  ),
  not_found: null,
  mcp: mcpOperation,
  openapi: readOf(
    'get_openapi',
    'This document: every route derived from the app’s tools and reads. No token.',
    'OpenApiDocument',
    [],
  ),
};

/**
 * The OpenAPI 3.1 document of an API serving `tools`: every route `routesFor(tools)` gives, so a tool
 * added to the app's list is documented without a line here. Schemas come from the same zod schemas the
 * handlers validate with; error statuses from `HTTP_STATUS`.
 */
export function openApiDocument(tools: readonly AnyToolModule[], options: OpenApiOptions = {}): OpenApiDocument {
  const components = new SchemaComponents();
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const paths: Record<string, OpenApiPathItem> = {};
  const operationIds = new Set<string>();
  const reads = options.reads ?? [];
  const readsByName = new Map(reads.map((read) => [read.name, read]));
  for (const route of apiRoutes(tools, reads)) {
    // An API entry first: a tool named like one (`health`) then shows as an operationId taken twice.
    const build = Object.hasOwn(API_OPERATIONS, route.entry) ? API_OPERATIONS[route.entry as ApiEntryName] : undefined;
    const read = build === undefined ? readsByName.get(route.entry) : undefined;
    const tool = build === undefined && read === undefined ? byName.get(route.entry) : undefined;
    const operation = tool
      ? writeOperation(tool, route, components)
      : read
        ? readModuleOperation(read, route, tools, components)
        : build?.(route, tools, components);
    if (!operation) throw new Error(`openapi: no operation for ${route.method} ${route.path} (${route.entry})`);
    if (operationIds.has(operation.operationId)) {
      throw new Error(`openapi: two operations are named ${operation.operationId} (a tool named like a read?)`);
    }
    operationIds.add(operation.operationId);
    paths[route.path] = { ...paths[route.path], [route.method.toLowerCase()]: operation };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: options.title ?? OPENAPI_DEFAULTS.title,
      version: options.version ?? OPENAPI_DEFAULTS.version,
      description: [
        "Idempotent agent tools: a write's retry is a read of the first write.",
        `Every write takes an \`${IDEMPOTENCY_KEY_FIELD}\`: one per intent, the same on every retry of it. The same key with the same arguments answers the first receipt (\`idempotent: true\`, header \`Idempotent-Replayed: true\`); with other arguments, 422 \`conflict\`.`,
        'Every route but `GET /health` and the OAuth metadata needs a bearer JWT; tenant and user come from its claims, never from the body. A request no route matches answers 401 without a token, else 404 `not_found`.',
        'Errors are `{ ok: false, error: { code, message } }`, the message naming the field to fix.',
      ].join('\n\n'),
    },
    ...(options.serverUrl === undefined ? {} : { servers: [{ url: options.serverUrl }] }),
    paths,
    components: {
      schemas: components.schemas,
      parameters: { IdempotencyKey: IDEMPOTENCY_KEY_HEADER },
      securitySchemes: {
        [BEARER_SCHEME]: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'RS256, from the configured issuer and audience; the tenant claim (`tenant_id` by default) and `sub` name the caller.',
        },
      },
    },
  };
}
