// Vercel AI SDK tools (`generateText({ tools })`, `streamText`), without a dependency on `ai`: the caller
// hands in the SDK's own `jsonSchema`, and gets plain objects of the SDK's `Tool` shape.
import type { ToolDescription } from '../api/description';
import { type AgentAnswer, answerToolCall, modelInputSchema, type ToolCaller } from './agent';

/** What the AI SDK passes a tool's `execute` besides its input (a subset of its `ToolExecutionOptions`). */
export interface AiSdkExecutionOptions {
  /** The AI SDK's id of this tool call: the intent's key. */
  readonly toolCallId: string;
  readonly abortSignal?: AbortSignal;
}

/** A tool in the AI SDK's shape: `inputSchema` is whatever the SDK's `jsonSchema` returned. */
export interface AiSdkTool<S> {
  readonly description: string;
  readonly inputSchema: S;
  readonly execute: (input: unknown, options: AiSdkExecutionOptions) => Promise<AgentAnswer>;
}

/** What `aiSdkTools` needs from the `ai` package. */
export interface AiSdkParts<S> {
  /**
   * The AI SDK's `jsonSchema` (`import { jsonSchema } from 'ai'`). Typed to take anything (`never`):
   * the SDK types its argument as `JSONSchema7`, a type this package does not depend on.
   */
  readonly jsonSchema: (schema: never) => S;
}

/**
 * The listing (`client.listTools()`) as an AI SDK tool set: each tool's `execute` runs the call through
 * the client with the SDK's `toolCallId` as the intent's key, so the SDK running a tool call twice
 * (a retried step, a resumed stream) causes one effect. `execute` resolves with the `AgentAnswer` —
 * a refusal or `gave_up` is an answer the model reads, not a thrown error.
 *
 *     const tools = aiSdkTools(client, await client.listTools(), { jsonSchema });
 *     await generateText({ model, tools, prompt });
 */
export function aiSdkTools<S>(
  client: ToolCaller,
  listing: readonly ToolDescription[],
  parts: AiSdkParts<S>,
): Record<string, AiSdkTool<S>> {
  return Object.fromEntries(
    listing.map(function aiSdkTool(tool): [string, AiSdkTool<S>] {
      return [
        tool.name,
        {
          description: tool.description,
          // The server's own JSON Schema, handed to the SDK's converter as the plain object it is.
          inputSchema: parts.jsonSchema(modelInputSchema(tool) as never),
          execute: function executeThroughClient(input, { toolCallId, abortSignal }) {
            return answerToolCall(client, { tool: tool.name, input, toolCallId, signal: abortSignal });
          },
        },
      ];
    }),
  );
}
