import { toJSONSchema } from 'zod/mini';
import type { JsonObject, ToolDefinition } from '../idempotency';
import { clientKeySchema, IDEMPOTENCY_KEY_FIELD } from '../idempotency';

/** A tool as agents see it (`GET /tools`), MCP-style. */
export interface ToolDescription {
  readonly name: string;
  readonly description: string;
  readonly input_schema: JsonObject;
  readonly annotations: {
    readonly readOnlyHint: false;
    readonly destructiveHint: boolean;
    readonly idempotentHint: true;
    readonly openWorldHint: boolean;
  };
}

/** The client key's JSON Schema, generated from the schema the runtime validates keys with. */
const { $schema: _dialect, ...KEY_SCHEMA } = toJSONSchema(clientKeySchema) as JsonObject;

/** What a listing needs of a tool: no domain logic, no services. */
export type ToolListing = Pick<ToolDefinition, 'name' | 'description' | 'args' | 'annotations'>;

/**
 * The JSON Schema of a tool's input, generated from the same zod schema the runtime validates with,
 * plus the `idempotency_key` every write requires.
 */
export function describeTool(tool: ToolListing): ToolDescription {
  const schema = toJSONSchema(tool.args, { io: 'input' }) as JsonObject & {
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
          ...(KEY_SCHEMA as JsonObject),
          description:
            'Required. The same key with the same arguments returns the first receipt; with other arguments, a conflict. Reuse it on every retry of one intent; mint a new one for a new intent.',
        },
        ...(schema.properties ?? {}),
      },
      required: [IDEMPOTENCY_KEY_FIELD, ...(schema.required ?? [])],
    },
    annotations: { readOnlyHint: false, idempotentHint: true, ...tool.annotations },
  };
}
