import { jsonSchemaOf } from '../tools/catalog';
import type { AnyToolModule } from '../tools/tool-module';

type Schema = {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  minimum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  format?: string;
  pattern?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  minItems?: number;
  anyOf?: Schema[];
};

/** A value the schema may accept: its default, first enum value, or a placeholder of its type. */
function sampleOf(name: string, schema: Schema): unknown {
  if (schema.default !== undefined) return schema.default;
  if (schema.const !== undefined) return schema.const;
  if (schema.enum?.length) return schema.enum[0];
  if (schema.anyOf?.length) return sampleOf(name, schema.anyOf[0]!);
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'integer':
    case 'number':
      return schema.minimum ?? (schema.exclusiveMinimum === undefined ? 1 : schema.exclusiveMinimum + 1);
    case 'boolean':
      return false;
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () => sampleOf(name, schema.items ?? {}));
    case 'object':
      return Object.fromEntries(
        (schema.required ?? []).map((key) => [key, sampleOf(key, schema.properties?.[key] ?? {})]),
      );
    default: {
      if (schema.format === 'email') return 'ada@example.com';
      const text = `${name.replace(/_/g, '-')}-1`;
      return text.length >= (schema.minLength ?? 0) ? text : text.padEnd(schema.minLength ?? 0, 'x');
    }
  }
}

/**
 * Arguments for a first call of `tool`, for the line `retrysafe dev` prints: its required fields filled
 * from its JSON Schema, with `idempotency_key: "k1"` — and checked against the tool's own schema, so the
 * printed line is one the tool accepts. Undefined when no such guess passes (the line then says to fill
 * them in).
 */
export function sampleArguments(tool: AnyToolModule): Record<string, unknown> | undefined {
  const schema = jsonSchemaOf(tool.args, 'input') as Schema;
  const args = { idempotency_key: 'k1', ...(sampleOf('args', { ...schema, type: 'object' }) as object) };
  const { idempotency_key: _key, ...rest } = args;
  return tool.args.safeParse(rest).success ? args : undefined;
}
