// `retrysafe types`: an app's tools' argument and receipt types as plain TypeScript, for an agent app that
// types its client (`new RetrysafeClient<AppTools>(…)`) without the tools' code, zod or any server package.
// The types are read from the same JSON Schema the tools are listed with (zod's, as `GET /tools` and MCP's
// `tools/list` give it): arguments as a caller may send them (`io: 'input'`: a field with a default is
// optional), receipts as `execute` returns them.
import { jsonSchemaOf } from '../tools/catalog';
import type { AnyToolModule } from '../tools/tool-module';

/** The part of JSON Schema 2020-12 zod writes for a tool's arguments and receipt. */
interface JsonSchema {
  readonly type?: string | readonly string[];
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: boolean | JsonSchema;
  readonly items?: JsonSchema;
  readonly prefixItems?: readonly JsonSchema[];
  readonly enum?: readonly unknown[];
  readonly const?: unknown;
  readonly anyOf?: readonly JsonSchema[];
  readonly oneOf?: readonly JsonSchema[];
  readonly allOf?: readonly JsonSchema[];
  readonly description?: string;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** A property name as TypeScript spells it: bare when it can be, else quoted. */
function propertyName(name: string): string {
  return IDENTIFIER.test(name) ? name : literal(name);
}

/** A JSDoc comment for `text` at `indent`, or nothing. */
function docComment(text: string | undefined, indent: string): string {
  if (!text) return '';
  return `${indent}/** ${text.replaceAll('*/', '*\\/').replaceAll('\n', ' ')} */\n`;
}

/** A JSON value as a TypeScript literal type, strings single-quoted (as the formatter writes them). */
function literal(value: unknown): string {
  if (typeof value !== 'string') return JSON.stringify(value);
  return `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
}

function union(types: readonly string[]): string {
  const distinct = [...new Set(types)];
  return distinct.length === 1 ? distinct[0]! : distinct.map((t) => (t.includes('\n') ? `(${t})` : t)).join(' | ');
}

function scalar(type: string, schema: JsonSchema, indent: string): string {
  switch (type) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array':
      if (schema.prefixItems) return `[${schema.prefixItems.map((item) => typeOf(item, indent)).join(', ')}]`;
      return schema.items ? `Array<${typeOf(schema.items, indent)}>` : 'unknown[]';
    case 'object':
      return objectType(schema, indent);
    default:
      return 'unknown';
  }
}

function objectType(schema: JsonSchema, indent: string): string {
  const inner = `${indent}  `;
  const required = new Set(schema.required ?? []);
  const lines = Object.entries(schema.properties ?? {}).map(
    ([name, property]) =>
      `${docComment(property.description, inner)}${inner}${propertyName(name)}${required.has(name) ? '' : '?'}: ${typeOf(property, inner)};`,
  );
  const extra = schema.additionalProperties;
  if (extra !== false && extra !== undefined) {
    lines.push(`${inner}[key: string]: ${extra === true ? 'unknown' : typeOf(extra, inner)};`);
  } else if (extra === undefined && schema.properties === undefined) {
    lines.push(`${inner}[key: string]: unknown;`);
  }
  return lines.length === 0 ? 'Record<string, never>' : `{\n${lines.join('\n')}\n${indent}}`;
}

/** The TypeScript type of values `schema` accepts, written at `indent`. */
function typeOf(schema: JsonSchema, indent: string): string {
  if (schema.const !== undefined) return literal(schema.const);
  if (schema.enum) return union(schema.enum.map(literal));
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return union(alternatives.map((alternative) => typeOf(alternative, indent)));
  if (schema.allOf) return schema.allOf.map((part) => typeOf(part, indent)).join(' & ');
  if (schema.type === undefined) return 'unknown';
  const types = typeof schema.type === 'string' ? [schema.type] : schema.type;
  return union(types.map((type) => scalar(type, schema, indent)));
}

export interface ToolTypesSource {
  /** The exported type's name. */
  readonly name: string;
  /** Where `ToolTypes` is imported from: `retrysafe/client` in an app. */
  readonly importFrom: string;
  /** The first lines' comment: what generated the file, from what. */
  readonly header: string;
}

/**
 * The source of a TypeScript module that exports one type mapping each tool's name to its
 * `ToolTypes<args, receipt>` — plain types, nothing imported but `ToolTypes` (a type). A tool without a
 * receipt schema gets a JSON object receipt.
 */
export function toolTypesSource(tools: readonly AnyToolModule[], source: ToolTypesSource): string {
  const entries = tools.map((tool) => {
    const args = jsonSchemaOf(tool.args, 'input') as JsonSchema;
    const receipt = tool.receipt ? typeOf(jsonSchemaOf(tool.receipt) as JsonSchema, '  ') : 'JsonObject';
    return `${docComment(tool.description, '  ')}  readonly ${propertyName(tool.name)}: ToolTypes<\n    ${typeOf(args, '    ')},\n    ${receipt.replaceAll('\n', '\n  ')}\n  >;`;
  });
  const imports = tools.some((tool) => !tool.receipt) ? 'JsonObject, ToolTypes' : 'ToolTypes';
  return `${source.header
    .split('\n')
    .map((line) => `// ${line}`.trimEnd())
    .join(
      '\n',
    )}\nimport type { ${imports} } from '${source.importFrom}';\n\n// A type alias, not an interface: it must satisfy the client's ToolMap (an index signature).\nexport type ${source.name} = {\n${entries.join('\n')}\n};\n`;
}
