// A tool as an AgentCore Gateway lists it: the name, description and input schema of the JSON Schema the
// app already derives for MCP and OpenAPI (`describeTool`: the tool's zod schema plus the required
// `idempotency_key`), in the shape a Lambda target's inline tool schema takes.
//
// That shape (CloudFormation's `AWS::BedrockAgentCore::GatewayTarget` `SchemaDefinition`, read from
// aws-cdk-lib's generated `CfnGatewayTarget.SchemaDefinitionProperty`) holds `type`, `description`,
// `properties`, `required` and `items` — nothing else. The rest of JSON Schema (lengths, patterns,
// bounds, formats, defaults, `additionalProperties`) is not listed to agents through the gateway; the
// tool's function still checks every argument with the tool's own schema, and refuses what it breaks
// (`invalid_args`, naming the field).

import type * as z from 'zod/mini';
import { describeTool, jsonSchemaOf } from '../tools/catalog';
import type { AnyToolModule } from '../tools/tool-module';

/** A JSON Schema as the gateway's tool schema takes it (`CfnGatewayTarget.SchemaDefinitionProperty`). */
export interface GatewaySchema {
  readonly type: string;
  readonly description?: string;
  readonly properties?: Readonly<Record<string, GatewaySchema>>;
  readonly required?: readonly string[];
  readonly items?: GatewaySchema;
}

/** A tool as a Lambda target's inline tool schema lists it (`CfnGatewayTarget.ToolDefinitionProperty`). */
export interface GatewayToolDefinition {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: GatewaySchema;
}

/** The JSON types the gateway's schema names (JSON Schema's own, `null` aside). */
const GATEWAY_TYPES = ['object', 'array', 'string', 'number', 'integer', 'boolean'] as const;

interface JsonSchemaNode {
  readonly type?: unknown;
  readonly description?: unknown;
  readonly properties?: Readonly<Record<string, JsonSchemaNode>>;
  readonly required?: readonly string[];
  readonly items?: JsonSchemaNode;
}

/**
 * One JSON Schema node in the gateway's shape, or a problem naming where it is (`at`): a node without
 * one type the gateway can name (a union, `anyOf`, a `null` alone) cannot be listed.
 */
function toGatewaySchema(node: JsonSchemaNode, at: string, problems: string[]): GatewaySchema {
  const types = [node.type].flat().filter((type) => type !== 'null');
  const [type] = types;
  if (types.length !== 1 || !GATEWAY_TYPES.includes(type as (typeof GATEWAY_TYPES)[number])) {
    problems.push(`${at}: has no single JSON type a gateway tool schema can name (${JSON.stringify(node.type)})`);
  }
  const properties = node.properties
    ? Object.fromEntries(
        Object.entries(node.properties).map(([name, child]) => [
          name,
          toGatewaySchema(child, `${at}.${name}`, problems),
        ]),
      )
    : undefined;
  return {
    type: String(type),
    ...(typeof node.description === 'string' ? { description: node.description } : {}),
    ...(properties ? { properties } : {}),
    ...(node.required && node.required.length > 0 ? { required: [...node.required] } : {}),
    ...(node.items ? { items: toGatewaySchema(node.items, `${at}[]`, problems) } : {}),
  };
}

/** What the gateway lists of a read: its module's name, description and arguments (`defineReadModule`). */
export interface GatewayListedRead {
  readonly name: string;
  readonly description?: string;
  readonly args?: z.ZodMiniType;
}

/**
 * Each tool, then each read, as the gateway lists it, from their own JSON Schema (a read's: its arguments,
 * as MCP lists it); throws one error naming every argument the gateway's schema cannot carry.
 */
export function gatewayToolDefinitions(
  tools: readonly AnyToolModule[],
  reads: readonly GatewayListedRead[] = [],
): GatewayToolDefinition[] {
  const problems: string[] = [];
  const definitions = tools.map((tool) => {
    const described = describeTool(tool);
    return {
      name: described.name,
      description: described.description,
      inputSchema: toGatewaySchema(described.input_schema as JsonSchemaNode, `tools.${tool.name}`, problems),
    };
  });
  for (const read of reads) {
    if (!read.args || typeof read.description !== 'string') {
      problems.push(`reads.${read.name}: no args or description to list (a read made with defineReadModule has both)`);
      continue;
    }
    definitions.push({
      name: read.name,
      description: read.description,
      inputSchema: toGatewaySchema(jsonSchemaOf(read.args, 'input') as JsonSchemaNode, `reads.${read.name}`, problems),
    });
  }
  if (problems.length > 0) throw new Error(`Retrysafe: agentCoreGateway: ${problems.join('; ')}`);
  return definitions;
}
