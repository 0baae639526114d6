// OpenAI's rules for strict function calling (Structured Outputs), written down as a checker, so a test can
// hold every tool the OpenAI adapter produces against them. Source: OpenAI API docs, "Structured model
// outputs" → "Supported schemas" (platform.openai.com/docs/guides/structured-outputs#supported-schemas), and
// "Function calling" → "Strict mode" (platform.openai.com/docs/guides/function-calling#strict-mode):
//  1. the root is an object, not `anyOf`;
//  2. every object sets `additionalProperties: false`;
//  3. every property is listed in `required` (optional fields are emulated with a union with `null`);
//  4. only these keywords: type, properties, required, additionalProperties, items, enum, const, anyOf,
//     $defs, $ref, description; for strings pattern and format (date-time, time, date, duration, email,
//     hostname, ipv4, ipv6, uuid); for numbers multipleOf, minimum, maximum, exclusiveMinimum,
//     exclusiveMaximum; for arrays minItems, maxItems. Not supported, among others: default, minLength,
//     maxLength, allOf, oneOf, not, if/then/else, patternProperties, $schema;
//  5. types: string, number, integer, boolean, object, array, null;
//  6. at most 5,000 object properties in all and 10 levels of nesting; at most 1,000 enum values in all;
//     at most 120,000 characters across property names, definition names, enum and const values;
//  7. a `pattern` in the supported regex subset: no lookaround, no backreferences.

const KEYWORDS = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'anyOf',
  '$defs',
  '$ref',
  'description',
  'pattern',
  'format',
  'multipleOf',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minItems',
  'maxItems',
]);
const FORMATS = new Set(['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uuid']);
const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);

type Node = Record<string, unknown>;

function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Every rule the schema breaks, as `path: problem`; empty when strict mode accepts it. */
export function strictModeProblems(schema: unknown): string[] {
  const problems: string[] = [];
  const totals = { properties: 0, enumValues: 0, characters: 0 };
  if (!isNode(schema) || schema.type !== 'object' || 'anyOf' in schema) problems.push('$: the root must be an object');

  function visit(node: unknown, path: string, depth: number): void {
    if (!isNode(node)) {
      problems.push(`${path}: not a schema object`);
      return;
    }
    if (depth > 10) problems.push(`${path}: nested deeper than 10 levels`);
    for (const keyword of Object.keys(node)) {
      if (!KEYWORDS.has(keyword)) problems.push(`${path}: keyword ${keyword} is not supported`);
    }
    const types = Array.isArray(node.type) ? node.type : node.type === undefined ? [] : [node.type];
    if (types.length === 0 && !['anyOf', '$ref', 'enum', 'const'].some((keyword) => keyword in node)) {
      problems.push(`${path}: no type`);
    }
    for (const type of types) if (!TYPES.has(type as string)) problems.push(`${path}: type ${String(type)}`);
    if (typeof node.format === 'string' && !FORMATS.has(node.format)) {
      problems.push(`${path}: format ${node.format} is not supported`);
    }
    if (typeof node.pattern === 'string' && /\(\?<?[=!]|\\[1-9]|\\k</.test(node.pattern)) {
      problems.push(`${path}: pattern uses lookaround or a backreference`);
    }
    if (Array.isArray(node.enum)) {
      totals.enumValues += node.enum.length;
      for (const value of node.enum) if (typeof value === 'string') totals.characters += value.length;
    }
    if (typeof node.const === 'string') totals.characters += node.const.length;
    if (types.includes('object') || isNode(node.properties)) {
      if (node.additionalProperties !== false) problems.push(`${path}: additionalProperties must be false`);
      const properties = isNode(node.properties) ? node.properties : {};
      const required = new Set(Array.isArray(node.required) ? node.required : []);
      for (const [name, property] of Object.entries(properties)) {
        totals.properties += 1;
        totals.characters += name.length;
        if (!required.has(name)) problems.push(`${path}.${name}: not in required`);
        visit(property, `${path}.${name}`, depth + 1);
      }
    }
    if (node.items !== undefined) visit(node.items, `${path}[]`, depth + 1);
    if (Array.isArray(node.anyOf)) {
      for (const [i, branch] of node.anyOf.entries()) visit(branch, `${path}.anyOf[${i}]`, depth);
    }
    if (isNode(node.$defs)) {
      for (const [name, def] of Object.entries(node.$defs)) {
        totals.characters += name.length;
        visit(def, `${path}.$defs.${name}`, depth);
      }
    }
  }

  visit(schema, '$', 1);
  if (totals.properties > 5_000) problems.push(`$: ${totals.properties} properties (at most 5,000)`);
  if (totals.enumValues > 1_000) problems.push(`$: ${totals.enumValues} enum values (at most 1,000)`);
  if (totals.characters > 120_000) problems.push(`$: ${totals.characters} characters of names and values`);
  return problems;
}
