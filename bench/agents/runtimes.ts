import { Agent, tool as agentsTool, run as runAgent, setTracingDisabled, Usage } from '@openai/agents';
import { tool as aiTool, generateText, jsonSchema, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { MAX_MODEL_TURNS, type ModelTurn, type ScriptedModel } from './agent';
import type { ToolName } from './approaches';
import type { Surface } from './entries';
import type { IntentTransport } from './transport';

setTracingDisabled(true); // no traces leave the machine

/** The agent frameworks that run the loop: the model is scripted, the loop, tool runs and hand-over are theirs. */
export const RUNTIMES = ['openai-agents', 'ai-sdk'] as const;
export type Runtime = (typeof RUNTIMES)[number];

/**
 * How each runtime's tools reach the functions: OpenAI Agents JS over MCP (a JSON-RPC `tools/call` to the
 * approach's MCP function), the AI SDK over REST (`POST /tools/{tool}` to the tool's function).
 */
export const SURFACES: Readonly<Record<Runtime, Surface>> = { 'openai-agents': 'mcp', 'ai-sdk': 'rest' };

type JsonSchema = { type: 'object'; properties: Record<string, unknown>; required: string[] };
const KEY = { type: 'string', description: 'A new UUID for each new action; the same one to retry it.' };

/** The tools as the agent is offered them: the same for every approach. */
const TOOL_SCHEMAS: Record<ToolName, { description: string; parameters: JsonSchema }> = {
  refund: {
    description: 'Refund an invoice in full.',
    parameters: {
      type: 'object',
      properties: { idempotency_key: KEY, invoice_id: { type: 'string' }, amount: { type: 'integer' } },
      required: ['idempotency_key', 'invoice_id', 'amount'],
    },
  },
  create_ticket: {
    description: 'Open a support ticket.',
    parameters: {
      type: 'object',
      properties: { idempotency_key: KEY, title: { type: 'string' }, body: { type: 'string' } },
      required: ['idempotency_key', 'title'],
    },
  },
  send_email: {
    description: 'Send an email.',
    parameters: {
      type: 'object',
      properties: {
        idempotency_key: KEY,
        to: { type: 'string' },
        subject: { type: 'string' },
        body: { type: 'string' },
      },
      required: ['idempotency_key', 'to', 'subject', 'body'],
    },
  },
};

/** Runs one intent's agent loop in `runtime` until the scripted model gives its final answer. */
export function runIntent(runtime: Runtime, model: ScriptedModel, transport: IntentTransport): Promise<void> {
  model.onTurn = (calls) => transport.beginTurn(calls);
  return runtime === 'openai-agents' ? viaOpenAIAgents(model, transport) : viaAiSdk(model, transport);
}

/** The text a tool hands the framework: the function's JSON answer. */
async function answered(transport: IntentTransport, callId: string, name: ToolName, input: unknown): Promise<string> {
  return JSON.stringify(await transport.call(callId, name, input as Record<string, unknown>));
}

/** Text out of a hand-over item: a string, `{ type: 'text', text }`, `{ type: 'text' | 'json', value }`, or a list. */
function textOf(output: unknown): string {
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) return output.map(textOf).join('');
  if (output && typeof output === 'object') {
    const item = output as { text?: unknown; value?: unknown; type?: string };
    if (typeof item.text === 'string') return item.text;
    if (item.type === 'json') return JSON.stringify(item.value);
    if (item.value !== undefined) return textOf(item.value);
  }
  return JSON.stringify(output);
}

/**
 * OpenAI Agents JS: an `Agent` with one function tool, run by the SDK's `run()`; the model reads what
 * the SDK hands it as `function_call_result` items of its next request. Parallel calls of one turn are
 * the SDK's to run.
 */
async function viaOpenAIAgents(model: ScriptedModel, transport: IntentTransport): Promise<void> {
  const name = model.plan.tool;
  const schema = TOOL_SCHEMAS[name];
  const tools = [
    agentsTool({
      name,
      description: schema.description,
      parameters: { ...schema.parameters, additionalProperties: true },
      strict: false,
      execute: (input, _context, details) => answered(transport, details?.toolCall?.callId ?? '', name, input),
    }),
  ];
  const scripted = {
    async getResponse(request: { input: unknown }) {
      const handed = new Map<string, string>();
      for (const item of Array.isArray(request.input) ? request.input : []) {
        if (item?.type === 'function_call_result') handed.set(item.callId, textOf(item.output));
      }
      return { usage: new Usage(), output: agentsOutput(model.next(handed)) };
    },
    // biome-ignore lint/correctness/useYield: never streamed
    async *getStreamedResponse() {
      throw new Error('not streamed');
    },
  };
  const agent = new Agent({ name: 'bench', instructions: 'Use the tools.', model: scripted as never, tools });
  await runAgent(agent, `Do it: ${name}.`, { maxTurns: MAX_MODEL_TURNS + 1 });
}

function agentsOutput(turn: ModelTurn) {
  if ('final' in turn) {
    return [
      {
        type: 'message' as const,
        role: 'assistant' as const,
        status: 'completed' as const,
        content: [{ type: 'output_text' as const, text: turn.final }],
      },
    ];
  }
  return turn.calls.map((call) => ({
    type: 'function_call' as const,
    callId: call.callId,
    name: call.name,
    arguments: JSON.stringify(call.args),
    status: 'completed' as const,
  }));
}

const USAGE = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/**
 * The AI SDK: `generateText` with one tool and a mock language model; the model reads the tool-result
 * parts of its next prompt. Parallel calls of one step are the SDK's to run.
 */
async function viaAiSdk(model: ScriptedModel, transport: IntentTransport): Promise<void> {
  const name = model.plan.tool;
  const schema = TOOL_SCHEMAS[name];
  const tools = {
    [name]: aiTool({
      description: schema.description,
      inputSchema: jsonSchema<Record<string, unknown>>(schema.parameters as Parameters<typeof jsonSchema>[0]),
      execute: (input, { toolCallId }) => answered(transport, toolCallId, name, input),
    }),
  };
  const scripted = new MockLanguageModelV3({
    async doGenerate({ prompt }) {
      const handed = new Map<string, string>();
      for (const message of prompt) {
        if (message.role !== 'tool') continue;
        for (const part of message.content) {
          if (part.type === 'tool-result') handed.set(part.toolCallId, textOf(part.output));
        }
      }
      const turn = model.next(handed);
      if ('final' in turn) {
        return {
          content: [{ type: 'text', text: turn.final }],
          finishReason: { unified: 'stop', raw: undefined },
          usage: USAGE,
          warnings: [],
        };
      }
      return {
        content: turn.calls.map((call) => ({
          type: 'tool-call' as const,
          toolCallId: call.callId,
          toolName: call.name,
          input: JSON.stringify(call.args),
        })),
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage: USAGE,
        warnings: [],
      };
    },
  });
  await generateText({ model: scripted, tools, prompt: `Do it: ${name}.`, stopWhen: stepCountIs(MAX_MODEL_TURNS + 1) });
}
