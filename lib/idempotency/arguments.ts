import { en } from 'zod/locales';
import * as z from 'zod/mini';
import { InvalidArgsError } from './errors';
import type { ToolDefinition } from './tool';

// zod/mini (chosen for Lambda bundle size) ships no messages: English, loaded once, where input is parsed.
z.config(en());

/** The argument every write carries. */
export const IDEMPOTENCY_KEY_FIELD = 'idempotency_key';

/** A client key: 1–255 printable ASCII characters (0x20–0x7E), as Stripe and the IETF draft allow. */
export const clientKeySchema = z
  .string({ error: 'required, a string of 1-255 printable ASCII characters' })
  .check(
    z.minLength(1, 'must not be empty'),
    z.maxLength(255, 'must be at most 255 characters'),
    z.regex(/^[\x20-\x7E]+$/, 'must be printable ASCII (0x20-0x7E)'),
  );

/**
 * `field: problem` for the first problem zod found, naming the field a caller must fix — the one way
 * every input retrysafe validates (tool arguments, MCP reads, operator requests) explains a refusal.
 */
export function fieldProblem(error: z.core.$ZodError, fallbackField: string): string {
  const issue = error.issues[0];
  if (!issue) return `${fallbackField}: invalid`;
  if (issue.code === 'unrecognized_keys') return `${issue.keys.join(', ')}: unknown field`;
  const field = issue.path.length > 0 ? issue.path.map(String).join('.') : fallbackField;
  return `${field}: ${issue.message}`;
}

/** The object schema under optional / default / nullable wrappers, if `schema` is one. */
function objectShape(schema: z.ZodMiniType): Record<string, z.ZodMiniType> | undefined {
  let def = schema._zod.def as { type: string; innerType?: z.ZodMiniType; shape?: Record<string, z.ZodMiniType> };
  while (def.innerType && (def.type === 'optional' || def.type === 'default' || def.type === 'nullable')) {
    def = def.innerType._zod.def as typeof def;
  }
  return def.type === 'object' ? def.shape : undefined;
}

/** The element schema of an array under the same wrappers, if `schema` is one. */
function arrayElement(schema: z.ZodMiniType): z.ZodMiniType | undefined {
  let def = schema._zod.def as { type: string; innerType?: z.ZodMiniType; element?: z.ZodMiniType };
  while (def.innerType && (def.type === 'optional' || def.type === 'default' || def.type === 'nullable')) {
    def = def.innerType._zod.def as typeof def;
  }
  return def.type === 'array' ? def.element : undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * `value` with `null` removed from every optional field that does not take `null` itself, at any depth:
 * OpenAI's strict function calling makes a model fill every field, and `null` is how it leaves one out.
 * So `{ currency: null }` is `{}` — the same arguments, the same fingerprint, the default applied. A
 * value with no such null comes back as it was (the same object).
 */
function withoutAbsentNulls(schema: z.ZodMiniType, value: unknown): unknown {
  const element = Array.isArray(value) ? arrayElement(schema) : undefined;
  if (element) {
    let copy: unknown[] | undefined;
    for (const [i, item] of (value as unknown[]).entries()) {
      const stripped = withoutAbsentNulls(element, item);
      if (stripped === item) continue;
      copy ??= [...(value as unknown[])];
      copy[i] = stripped;
    }
    return copy ?? value;
  }
  const shape = isPlainObject(value) ? objectShape(schema) : undefined;
  if (!shape) return value;
  const fields = value as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined;
  for (const [name, field] of Object.entries(fields)) {
    const fieldSchema = Object.hasOwn(shape, name) ? shape[name] : undefined;
    if (field === undefined || fieldSchema === undefined) continue;
    if (field === null) {
      if (fieldSchema.safeParse(null).success || !fieldSchema.safeParse(undefined).success) continue;
      copy ??= { ...fields };
      delete copy[name];
      continue;
    }
    const stripped = withoutAbsentNulls(fieldSchema, field);
    if (stripped === field) continue;
    copy ??= { ...fields };
    copy[name] = stripped;
  }
  return copy ?? value;
}

export interface ParsedCall<A> {
  readonly clientKey: string;
  readonly args: A;
}

/**
 * Splits a raw call into its client key and validated arguments. Unknown fields are refused, so a
 * typo never silently becomes a default. Throws {@link InvalidArgsError} naming the field.
 */
export function parseCall<S extends z.ZodMiniObject>(tool: ToolDefinition<S>, input: unknown): ParsedCall<z.output<S>> {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new InvalidArgsError('arguments: expected a JSON object');
  }
  const { [IDEMPOTENCY_KEY_FIELD]: rawKey, ...rest } = input as Record<string, unknown>;
  const key = clientKeySchema.safeParse(rawKey);
  if (!key.success) throw new InvalidArgsError(fieldProblem(key.error, IDEMPOTENCY_KEY_FIELD));
  const args = tool.args.safeParse(withoutAbsentNulls(tool.args, rest));
  if (!args.success) throw new InvalidArgsError(fieldProblem(args.error, 'arguments'));
  return { clientKey: key.data, args: args.data as z.output<S> };
}
