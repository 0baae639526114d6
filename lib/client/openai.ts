// OpenAI's tool formats, for both of its APIs: Chat Completions (`tools: [{ type: 'function', function }]`,
// also spoken by most OpenAI-compatible servers) and the Responses API (`tools: [{ type: 'function', name }]`).
// Plain objects: nothing from the `openai` package is loaded.
import type { ToolDescription } from '../api/description';
import { type AgentAnswer, answerToolCall, modelInputSchema, type ToolCaller } from './agent';
import { strictParameters } from './strict-schema';
import type { JsonObject } from './types';

/** A tool in Chat Completions' `tools`: strict (Structured Outputs), so the model's arguments match the schema. */
export interface OpenAiChatTool {
  readonly type: 'function';
  readonly function: {
    readonly name: string;
    readonly description: string;
    readonly parameters: JsonObject;
    /** True unless the tool's schema says something strict mode cannot (see `strictParameters`). */
    readonly strict: boolean;
  };
}

/** A tool call in an assistant message of Chat Completions (`message.tool_calls[]`). */
export interface OpenAiChatToolCall {
  readonly id: string;
  readonly type?: 'function';
  readonly function: { readonly name: string; readonly arguments: string };
}

/** The `role: 'tool'` message that answers a tool call. */
export interface OpenAiToolMessage {
  readonly role: 'tool';
  readonly tool_call_id: string;
  /** The `AgentAnswer` as JSON text. */
  readonly content: string;
}

/**
 * A tool in the Responses API's `tools`: strict. Optional fields (a currency's default, `idempotency_key`)
 * are required and nullable there; the server reads `null` as the field left out.
 */
export interface OpenAiResponsesTool {
  readonly type: 'function';
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonObject;
  /** True unless the tool's schema says something strict mode cannot (see `strictParameters`). */
  readonly strict: boolean;
}

/** A `function_call` output item of the Responses API. */
export interface OpenAiFunctionCall {
  readonly type: 'function_call';
  /** The id that links the call to its output: the intent's key. (`id`, the item's own id, is not used.) */
  readonly call_id: string;
  readonly name: string;
  readonly arguments: string;
}

/** The `function_call_output` input item that answers a function call. */
export interface OpenAiFunctionCallOutput {
  readonly type: 'function_call_output';
  readonly call_id: string;
  /** The `AgentAnswer` as JSON text. */
  readonly output: string;
}

/** A tool's parameters for OpenAI: strict when strict mode can say them, else as listed, non-strict. */
function openAiParameters(tool: ToolDescription): { parameters: JsonObject; strict: boolean } {
  const listed = modelInputSchema(tool);
  const strict = strictParameters(listed);
  return strict ? { parameters: strict, strict: true } : { parameters: listed, strict: false };
}

/** The listing (`client.listTools()`) as Chat Completions tools. */
export function openAiChatTools(listing: readonly ToolDescription[]): OpenAiChatTool[] {
  return listing.map(function chatTool(tool) {
    return {
      type: 'function',
      function: { name: tool.name, description: tool.description, ...openAiParameters(tool) },
    };
  });
}

/** The listing as Responses API tools. */
export function openAiResponsesTools(listing: readonly ToolDescription[]): OpenAiResponsesTool[] {
  return listing.map(function responsesTool(tool) {
    return {
      type: 'function',
      name: tool.name,
      description: tool.description,
      ...openAiParameters(tool),
    };
  });
}

/**
 * Runs a Chat Completions tool call — its `id` is the intent's key — and returns the `role: 'tool'`
 * message to append to the conversation, and the answer as an object for the caller's own code.
 */
export async function runOpenAiChatToolCall(
  client: ToolCaller,
  toolCall: OpenAiChatToolCall,
  options: { readonly signal?: AbortSignal } = {},
): Promise<{ readonly message: OpenAiToolMessage; readonly answer: AgentAnswer }> {
  const answer = await answerToolCall(client, {
    tool: toolCall.function.name,
    input: toolCall.function.arguments,
    toolCallId: toolCall.id,
    signal: options.signal,
  });
  return { message: { role: 'tool', tool_call_id: toolCall.id, content: JSON.stringify(answer) }, answer };
}

/**
 * Runs a Responses API function call — its `call_id` is the intent's key — and returns the
 * `function_call_output` item for the next request's input, and the answer as an object.
 */
export async function runOpenAiFunctionCall(
  client: ToolCaller,
  functionCall: OpenAiFunctionCall,
  options: { readonly signal?: AbortSignal } = {},
): Promise<{ readonly item: OpenAiFunctionCallOutput; readonly answer: AgentAnswer }> {
  const answer = await answerToolCall(client, {
    tool: functionCall.name,
    input: functionCall.arguments,
    toolCallId: functionCall.call_id,
    signal: options.signal,
  });
  return {
    item: { type: 'function_call_output', call_id: functionCall.call_id, output: JSON.stringify(answer) },
    answer,
  };
}
