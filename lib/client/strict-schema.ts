// A tool's input schema as OpenAI's strict function calling (Structured Outputs) accepts it. Strict mode
// takes a subset of JSON Schema: every property listed in `required` (an optional one as nullable),
// `additionalProperties: false` on every object, and only some keywords — one tool outside the subset fails
// the whole request. The server accepts `null` for an optional field as the field left out, so the nullable
// fields a strict model must fill mean what leaving them out means.
import type { JsonObject, JsonValue } from './types';

/** String formats strict mode supports; any other `format` is dropped (its meaning goes to the description). */
export const STRICT_STRING_FORMATS = [
  'date-time',
  'time',
  'date',
  'duration',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'uuid',
];

/** The keywords strict mode accepts; anything else is folded into the description or dropped. */
export const STRICT_KEYWORDS = [
  'type',
  'description',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'anyOf',
  '$defs',
  '$ref',
  'pattern',
  'format',
  'multipleOf',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minItems',
  'maxItems',
] as const;

const KEPT = new Set<string>(STRICT_KEYWORDS);

/**
 * Keywords whose loss does not change which values the server accepts — it checks them — as long as the
 * model is told: said in the description (lengths, a default, a format), or annotations only.
 */
const FOLDED = new Set([
  'minLength',
  'maxLength',
  'default',
  'format',
  '$schema',
  'title',
  'examples',
  'deprecated',
  'readOnly',
  'writeOnly',
  '$comment',
  '$id',
]);

/** Thrown when a schema says something strict mode cannot (a record, a tuple, `oneOf`, any value). */
class NotExpressible extends Error {}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What the dropped keywords said, as words a model reads: "1-200 characters", "default: usd". */
function droppedMeaning(schema: JsonObject): string[] {
  const said: string[] = [];
  const { minLength, maxLength } = schema;
  if (typeof minLength === 'number' && typeof maxLength === 'number') said.push(`${minLength}-${maxLength} characters`);
  else if (typeof maxLength === 'number') said.push(`at most ${maxLength} characters`);
  else if (typeof minLength === 'number') said.push(`at least ${minLength} characters`);
  if (schema.default !== undefined) said.push(`default ${JSON.stringify(schema.default)}`);
  if (typeof schema.format === 'string' && !STRICT_STRING_FORMATS.includes(schema.format)) said.push(schema.format);
  return said;
}

/** One schema node in the subset: kept keywords only, meaning of the rest in its description. */
function strictNode(schema: JsonObject): JsonObject {
  const node: JsonObject = {};
  for (const [keyword, value] of Object.entries(schema)) {
    if (KEPT.has(keyword)) node[keyword] = value;
    else if (!FOLDED.has(keyword)) throw new NotExpressible(keyword);
  }
  // A node that takes any value, or an open map (`additionalProperties` a schema): nothing strict can say.
  if (
    node.type === undefined &&
    node.anyOf === undefined &&
    node.$ref === undefined &&
    node.enum === undefined &&
    node.const === undefined
  ) {
    throw new NotExpressible('a node with no type');
  }
  if (node.additionalProperties !== undefined && node.additionalProperties !== false) {
    throw new NotExpressible('additionalProperties');
  }
  // A supported format says more than a regex, and strict mode's regex dialect is narrower than JavaScript's.
  if (typeof node.format === 'string') {
    if (STRICT_STRING_FORMATS.includes(node.format)) delete node.pattern;
    else delete node.format;
  }
  const said = droppedMeaning(schema);
  if (said.length > 0) {
    const base = typeof node.description === 'string' ? node.description.replace(/\.?$/, '.') : '';
    node.description = `${base} (${said.join('; ')})`.trim();
  }
  if (isObject(node.items)) node.items = strictNode(node.items);
  if (Array.isArray(node.anyOf))
    node.anyOf = node.anyOf.map((branch) => (isObject(branch) ? strictNode(branch) : branch));
  if (isObject(node.$defs)) {
    node.$defs = Object.fromEntries(
      Object.entries(node.$defs).map(([name, def]) => [name, isObject(def) ? strictNode(def) : def]),
    );
  }
  if (isObject(node.properties) || node.type === 'object') return strictObject(node);
  return node;
}

/** The same node, also accepting `null`: how strict mode says "optional". */
function nullable(node: JsonObject): JsonObject {
  if (typeof node.type === 'string' && node.const === undefined) {
    const widened: JsonObject = { ...node, type: [node.type, 'null'] };
    if (Array.isArray(node.enum)) widened.enum = [...node.enum, null];
    return widened;
  }
  const { description, ...rest } = node;
  return { ...(description === undefined ? {} : { description }), anyOf: [rest, { type: 'null' }] };
}

/** An object node: every property required (the optional ones nullable), no other keys. */
function strictObject(node: JsonObject): JsonObject {
  const properties = isObject(node.properties) ? node.properties : {};
  const required = new Set(Array.isArray(node.required) ? node.required : []);
  const strictProperties: JsonObject = {};
  for (const [name, property] of Object.entries(properties)) {
    if (!isObject(property)) continue;
    const strict = strictNode(property);
    strictProperties[name] = required.has(name) ? strict : nullable(strict);
  }
  return {
    ...node,
    properties: strictProperties,
    required: Object.keys(strictProperties),
    additionalProperties: false,
  };
}

/**
 * A tool's parameters as OpenAI strict mode accepts them: the same fields, each required — an optional
 * one as nullable (`null` is what leaving it out means, to the server too, at any depth) —
 * `additionalProperties: false` everywhere, and only supported keywords; what a dropped keyword said (a
 * length limit, a default) is kept as words in the field's description, and the server still checks it.
 * Undefined when the schema says something strict mode cannot (a record, a tuple, `oneOf`, a field that
 * takes any value): such a tool is offered non-strict rather than with another meaning.
 */
export function strictParameters(schema: JsonObject): JsonObject | undefined {
  try {
    return strictObject(strictNode({ ...schema, type: 'object' }));
  } catch (error) {
    if (error instanceof NotExpressible) return undefined;
    throw error;
  }
}
