import * as z from 'zod/mini';
import type { KeyKinds, ToolDescription } from '../api/description';
import { NEXT_ACTIONS } from '../api/next-step';
import type { ErrorCode, JsonObject, ToolDefinition } from '../idempotency/definition';
import { clientKeySchema, DEFAULT_TTL_SECONDS, IDEMPOTENCY_KEY_FIELD } from '../idempotency/definition';

export type { KeyKinds, ToolDescription } from '../api/description';

/** What a listing needs of a tool: no domain logic, no services. */
export type ToolListing = Pick<
  ToolDefinition,
  'name' | 'description' | 'args' | 'annotations' | 'naturalKey' | 'dedupeWindowSeconds' | 'ttlSeconds' | 'receipt'
>;

/** A JSON Schema generated from a zod schema, without the `$schema` line (it is embedded). */
export function jsonSchemaOf(schema: z.ZodMiniType, io: 'input' | 'output' = 'output'): JsonObject {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io }) as JsonObject;
  return rest;
}

/**
 * The client key's JSON Schema, generated from the schema the runtime validates keys with — on the first
 * listing, not at load: `z.toJSONSchema` was ~1.2 ms of the MCP function's cold start, and a call lists nothing.
 */
let keySchema: JsonObject | undefined;
function keyJsonSchema(): JsonObject {
  keySchema ??= jsonSchemaOf(clientKeySchema);
  return keySchema;
}

const ERROR_CODES = [
  'invalid_args',
  'not_found',
  'conflict',
  'unavailable',
  'internal',
] as const satisfies readonly ErrorCode[];

// The answers' schemas serve listings and the OpenAPI document, which a call never reads: each is built on
// first use (`z.lazy`, or a function), not when the module loads, where building them was part of a cold start.

/** A receipt of any shape: what a tool that declares none returns. */
function anyReceipt() {
  return z.record(z.string(), z.unknown());
}

/** What the caller should do next (`NextStep`): every answer carries it as `next`. */
export const nextStepSchema = z.lazy(() =>
  z
    .strictObject({
      action: z.enum(NEXT_ACTIONS),
      after_ms: z.optional(z.int().check(z.describe('For call_again: wait this long (ms) first.'))),
      poll: z.optional(
        z.strictObject({
          tool: z.literal('get_operation'),
          arguments: z.strictObject({ tool: z.string(), idempotency_key: z.string() }),
          path: z.optional(z.string().check(z.describe('The same read on the HTTP API (none for a key . or ..).'))),
        }),
      ),
      message: z.string().check(z.describe('One sentence saying what happened and what to do next.')),
    })
    .check(
      z.describe(
        'What to do next: none (done; a write must not be repeated), call_again (same arguments and idempotency_key, after after_ms), fix_arguments, use_original_arguments (a conflict), stop.',
      ),
    ),
);

/** A first execution's or a replay's answer (`idempotent` says which), carrying the tool's receipt. */
export function receiptAnswer(receipt: z.ZodMiniType = anyReceipt()) {
  return z.strictObject({
    ok: z.literal(true),
    idempotent: z.boolean(),
    key: z.string(),
    receipt,
    next: nextStepSchema,
  });
}

/** The answer of a call still in flight: ask again with the same key after `retry_after_ms`. */
export const pendingAnswer = z.lazy(() =>
  z.strictObject({
    ok: z.literal(false),
    status: z.literal('pending'),
    key: z.string(),
    retry_after_ms: z.int(),
    runs_anew: z.optional(
      z
        .literal(true)
        .check(
          z.describe(
            'No retrysafe attempt can finish this call before its record expires (a Powertools handler on the same table holds it, running or left unfinished, or too little time is left before its TTL): once its record expires a call with the same key runs it anew, which can act twice. Check the effect first.',
          ),
        ),
    ),
    queued: z.optional(
      z
        .literal(true)
        .check(
          z.describe(
            'Handed to the server to run in the background (a long-running tool): nothing ran yet; it starts within retry_after_ms.',
          ),
        ),
    ),
    next: nextStepSchema,
  }),
);

/** An error answer whose code is one of `codes` (the HTTP edge narrows them per status). */
export function errorAnswer(codes: readonly [string, ...string[]]) {
  return z.strictObject({
    ok: z.literal(false),
    idempotent: z.optional(
      z.boolean().check(z.describe("Present when the error is the call's stored outcome: its key answers the same.")),
    ),
    error: z.strictObject({ code: z.enum(codes), message: z.string() }),
    next: nextStepSchema,
  });
}

/**
 * The answer of every call (`ToolResult`) as a schema: a receipt, a call still in flight, or an error.
 * MCP wants an object at the root of an output schema, so the union sits under `type: "object"`.
 */
export function answerSchema(receipt: z.ZodMiniType = anyReceipt()): JsonObject {
  const answer = z.union([receiptAnswer(receipt), pendingAnswer, errorAnswer(ERROR_CODES)]);
  return { type: 'object', ...jsonSchemaOf(answer) };
}

/** Which keys protect a tool. */
export function keyKindsOf(tool: ToolListing): KeyKinds {
  return {
    client_key: true,
    client_key_ttl_seconds: tool.ttlSeconds ?? DEFAULT_TTL_SECONDS,
    natural_key: tool.naturalKey ? [...tool.naturalKey] : null,
    dedupe_window_seconds: tool.dedupeWindowSeconds ?? null,
  };
}

/**
 * A tool as agents see it: the JSON Schema of its input, generated from the same zod schema the runtime
 * validates with, plus the `idempotency_key` every write requires; its answer's schema; MCP annotations;
 * and which keys protect it.
 */
export function describeTool(tool: ToolListing): ToolDescription {
  const schema = jsonSchemaOf(tool.args, 'input') as JsonObject & {
    required?: string[];
    properties?: JsonObject;
  };
  return {
    name: tool.name,
    description: tool.description,
    input_schema: {
      ...schema,
      properties: {
        [IDEMPOTENCY_KEY_FIELD]: {
          ...keyJsonSchema(),
          description:
            'Required. Mint one key per intent and reuse it on every retry of that intent: the same key with the same arguments returns the first receipt (idempotent: true); with other arguments, a conflict. Never mint a new key to retry.',
        },
        ...(schema.properties ?? {}),
      },
      required: [IDEMPOTENCY_KEY_FIELD, ...(schema.required ?? [])],
    },
    output_schema: answerSchema(tool.receipt),
    annotations: annotationsOf(tool),
    idempotency: keyKindsOf(tool),
  };
}

/** A write's MCP annotations: never read-only, always idempotent, the tool's own hints. Cheap: no schema. */
export function annotationsOf(tool: Pick<ToolListing, 'annotations'>): ToolDescription['annotations'] {
  return { readOnlyHint: false, idempotentHint: true, ...tool.annotations };
}
