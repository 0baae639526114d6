// The AI SDK's MCP client (`@ai-sdk/mcp`, for `ai` 6): `createMCPClient` over Streamable HTTP, its tools
// run by `generateText`. What reaches the model is read where the model gets it: the tool-result part of
// the prompt of the step after the call (a mock model asks for the call, then reads its own prompt).
import { createMCPClient } from '@ai-sdk/mcp';
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { run, settings } from './scenario.mjs';

const { url, token } = settings();
const client = await createMCPClient({
  transport: { type: 'http', url, headers: { authorization: `Bearer ${token}` } },
});
const tools = await client.tools();

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};
let calls = 0;

/** One agent turn: the model calls `name` with `args`; answers the tool result its next prompt carries. */
async function see(name, args) {
  const toolCallId = `call_${++calls}`;
  let handed;
  const model = new MockLanguageModelV3({
    async doGenerate({ prompt }) {
      const result = prompt
        .filter((message) => message.role === 'tool')
        .flatMap((message) => message.content)
        .find((part) => part.type === 'tool-result' && part.toolCallId === toolCallId);
      if (result) {
        handed = result.output;
        return {
          content: [{ type: 'text', text: 'ok' }],
          finishReason: { unified: 'stop', raw: undefined },
          usage,
          warnings: [],
        };
      }
      return {
        content: [{ type: 'tool-call', toolCallId, toolName: name, input: JSON.stringify(args) }],
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage,
        warnings: [],
      };
    },
  });
  await generateText({ model, tools, prompt: 'Go.', stopWhen: stepCountIs(3) });
  return handed;
}

await run({
  tools: async () => Object.keys(tools),
  see,
  close: () => client.close(),
});
