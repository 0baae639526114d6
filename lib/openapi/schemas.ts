import * as z from 'zod/mini';
import type { JsonObject } from '../idempotency/definition';
import { operationAnswer } from '../reads/answers';
import { jsonSchemaOf } from '../tools/catalog';

// The answers that are not a tool's nor an app's read's: `get_operation`, the listing, the MCP endpoint's and the edge's. The
// tools' own schemas (input, receipt, pending, errors) come from `lib/tools/catalog.ts`.

/** `GET /health`. */
const health = z.strictObject({ ok: z.literal(true) });

/** One entry of `GET /tools` (`ToolDescription`): a tool as agents see it. */
const toolDescription = z.strictObject({
  name: z.string(),
  description: z.string(),
  input_schema: z.looseObject({}).check(z.describe('JSON Schema 2020-12 of the body, `idempotency_key` included.')),
  output_schema: z.looseObject({}).check(z.describe('JSON Schema 2020-12 of the answer, with the receipt.')),
  annotations: z.strictObject({
    readOnlyHint: z.literal(false),
    destructiveHint: z.boolean(),
    idempotentHint: z.literal(true),
    openWorldHint: z.boolean(),
  }),
  idempotency: z.strictObject({
    client_key: z.literal(true),
    client_key_ttl_seconds: z.int(),
    natural_key: z.nullable(z.array(z.string())),
    dedupe_window_seconds: z.nullable(z.int()),
  }),
});

/** `GET /tools`. */
const toolListing = z.strictObject({ tools: z.array(toolDescription) });

/** RFC 9728 protected resource metadata (its other members may be added). */
const protectedResourceMetadata = z.looseObject({
  resource: z.string(),
  authorization_servers: z.array(z.string()),
  bearer_methods_supported: z.optional(z.array(z.string())),
  resource_name: z.optional(z.string()),
});

/** A JSON-RPC 2.0 message, as MCP's Streamable HTTP transport carries it; MCP defines the rest. */
const jsonRpcMessage = z.looseObject({
  jsonrpc: z.literal('2.0'),
  id: z.optional(z.nullable(z.union([z.string(), z.int()]))),
  method: z.optional(z.string()),
  params: z.optional(z.looseObject({})),
  result: z.optional(z.looseObject({})),
  error: z.optional(z.looseObject({ code: z.int(), message: z.string() })),
});

/** What API Gateway answers by itself (its authorizer's 401, a crashed or throttled function): not the API's shape. */
const gatewayMessage = z.strictObject({ message: z.string() });

/** The shared schemas that are not a tool's, by their name under `components/schemas`. */
export const API_SCHEMAS = {
  Health: jsonSchemaOf(health),
  ToolListing: jsonSchemaOf(toolListing),
  OperationAnswer: jsonSchemaOf(operationAnswer),
  ProtectedResourceMetadata: jsonSchemaOf(protectedResourceMetadata),
  JsonRpcMessage: jsonSchemaOf(jsonRpcMessage),
  GatewayMessage: jsonSchemaOf(gatewayMessage),
  OpenApiDocument: jsonSchemaOf(z.looseObject({ openapi: z.string() })),
} as const satisfies Record<string, JsonObject>;

export type ApiSchemaName = keyof typeof API_SCHEMAS;
