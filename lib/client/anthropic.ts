// Anthropic's Messages API tool format (`tools: [{ name, description, input_schema }]`). Plain objects:
// nothing from `@anthropic-ai/sdk` is loaded.
import type { ToolDescription } from '../api/description';
import { type AgentAnswer, answerToolCall, modelInputSchema, type ToolCaller } from './agent';
import type { JsonObject } from './types';

/** A tool in the Messages API's `tools`. */
export interface AnthropicTool {
  readonly name: string;
  readonly description: string;
  readonly input_schema: JsonObject;
}

/** A `tool_use` content block of an assistant message. */
export interface AnthropicToolUse {
  readonly type: 'tool_use';
  /** The tool call's id: the intent's key. */
  readonly id: string;
  readonly name: string;
  readonly input: unknown;
}

/** The `tool_result` content block that answers a `tool_use`, for the next user message. */
export interface AnthropicToolResult {
  readonly type: 'tool_result';
  readonly tool_use_id: string;
  /** The `AgentAnswer` as JSON text. */
  readonly content: string;
  /** True for every answer but a receipt, so the model reads it as a failed call. */
  readonly is_error: boolean;
}

/** The listing (`client.listTools()`) as Messages API tools. */
export function anthropicTools(listing: readonly ToolDescription[]): AnthropicTool[] {
  return listing.map(function anthropicTool(tool) {
    return { name: tool.name, description: tool.description, input_schema: modelInputSchema(tool) };
  });
}

/**
 * Runs a `tool_use` block — its `id` is the intent's key — and returns the `tool_result` block for the
 * next user message, and the answer as an object for the caller's own code.
 */
export async function runAnthropicToolUse(
  client: ToolCaller,
  toolUse: AnthropicToolUse,
  options: { readonly signal?: AbortSignal } = {},
): Promise<{ readonly block: AnthropicToolResult; readonly answer: AgentAnswer }> {
  const answer = await answerToolCall(client, {
    tool: toolUse.name,
    input: toolUse.input,
    toolCallId: toolUse.id,
    signal: options.signal,
  });
  return {
    block: { type: 'tool_result', tool_use_id: toolUse.id, content: JSON.stringify(answer), is_error: !answer.ok },
    answer,
  };
}
