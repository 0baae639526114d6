// LangChain's MCP adapters: `MultiServerMCPClient` over Streamable HTTP, its tools run by LangGraph's
// `ToolNode` — the node `createReactAgent` runs tool calls with. What reaches the model is the `ToolMessage`
// the node adds to the conversation: its `content` (and `status`, `error` when the tool refused).
import { AIMessage } from '@langchain/core/messages';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { run, settings } from './scenario.mjs';

const { url, token } = settings();
const client = new MultiServerMCPClient({
  mcpServers: { retrysafe: { transport: 'http', url, headers: { authorization: `Bearer ${token}` } } },
});
const tools = await client.getTools();
const node = new ToolNode(tools);

let calls = 0;
async function see(name, args) {
  const call = { id: `call_${++calls}`, name, args };
  const { messages } = await node.invoke({ messages: [new AIMessage({ content: '', tool_calls: [call] })] });
  const [message] = messages;
  return { status: message.status, content: message.content };
}

await run({
  tools: async () => tools.map((tool) => tool.name),
  see,
  close: () => client.close(),
});
