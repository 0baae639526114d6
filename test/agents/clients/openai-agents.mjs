// OpenAI Agents JS: `MCPServerStreamableHttp` on an `Agent`, run by the SDK's own `run()`. What reaches the
// model is read where the model gets it: the `function_call_result` item of the next model request (a
// scripted model asks for the call, then reads its own input). `--structured` sets `useStructuredContent`,
// with which the SDK hands the model `structuredContent` instead of `content` for results that are not
// errors.
import { Agent, MCPServerStreamableHttp, run as runAgent, setTracingDisabled, Usage } from '@openai/agents';
import { run, settings } from './scenario.mjs';

setTracingDisabled(true); // no traces leave the machine
const structured = process.argv.includes('--structured');
const { url, token } = settings();

/**
 * A connection per run: retrysafe's /mcp is stateless (no Mcp-Session-Id), and without a session the SDK
 * lists the tools afresh on every run and refuses a listing another run's listing overtook ("MCP tool
 * listing became stale before it completed") — so two runs in flight at once cannot share one server.
 */
async function connected() {
  const server = new MCPServerStreamableHttp({
    url,
    name: 'retrysafe',
    requestInit: { headers: { authorization: `Bearer ${token}` } },
    useStructuredContent: structured,
  });
  await server.connect();
  return server;
}

let calls = 0;
/** The tools as the last model request offered them. */
let offered = [];

/** A model that asks for one call, then reads what its next request carries for that call. */
function scriptedModel(name, args, callId, handed) {
  return {
    async getResponse(request) {
      offered = request.tools.map((tool) => tool.name);
      const result = Array.isArray(request.input)
        ? request.input.find((item) => item.type === 'function_call_result' && item.callId === callId)
        : undefined;
      if (result) {
        handed(result.output);
        return {
          usage: new Usage(),
          output: [
            { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok' }] },
          ],
        };
      }
      return {
        usage: new Usage(),
        output: [{ type: 'function_call', callId, name, arguments: JSON.stringify(args), status: 'completed' }],
      };
    },
    // biome-ignore lint/correctness/useYield: never streamed
    async *getStreamedResponse() {
      throw new Error('not streamed');
    },
  };
}

async function see(name, args) {
  const callId = `call_${++calls}`;
  let output;
  const server = await connected();
  const agent = new Agent({
    name: 'retrysafe-test',
    instructions: 'Use the tools.',
    model: scriptedModel(name, args, callId, (handed) => {
      output = handed;
    }),
    mcpServers: [server],
  });
  try {
    await runAgent(agent, 'Go.', { maxTurns: 3 });
  } finally {
    await server.close();
  }
  return output;
}

await run({
  async tools() {
    await see('get_invoice', { invoice_id: 'inv_none' }); // one turn, to read what the model is offered
    return offered;
  },
  see,
  close: async () => {},
});
