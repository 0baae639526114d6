// OpenAI Agents JS: `MCPServerStreamableHttp` on an `Agent`, run by the SDK's own `run()`. What reaches the
// model is read where the model gets it: the `function_call_result` item of the next model request (a
// scripted model asks for the call, then reads its own input). `--structured` sets `useStructuredContent`,
// with which the SDK hands the model `structuredContent` instead of `content` for results that are not
// errors. `--strict` sets the agent's `mcpConfig.convertSchemasToStrict`, with which the SDK offers the MCP
// tools as `strict: true` function tools (every field required, optional ones nullable,
// `additionalProperties: false`) instead of `strict: false` with `additionalProperties: true`.
import { Agent, MCPServerStreamableHttp, run as runAgent, setTracingDisabled, Usage } from '@openai/agents';
import { run, settings } from './scenario.mjs';

setTracingDisabled(true); // no traces leave the machine
const structured = process.argv.includes('--structured');
const strict = process.argv.includes('--strict');
const { url, token, keys } = settings();

/**
 * A connection per run: retrysafe's /mcp is stateless (no Mcp-Session-Id), and without a session the SDK
 * lists the tools afresh on every run and refuses a listing another run's listing overtook ("MCP tool
 * listing became stale before it completed") — so two runs in flight at once cannot share one server.
 * `sent` collects the arguments the SDK sends the server, after its own handling of the model's.
 */
async function connected() {
  const server = new MCPServerStreamableHttp({
    url,
    name: 'retrysafe',
    requestInit: { headers: { authorization: `Bearer ${token}` } },
    useStructuredContent: structured,
  });
  await server.connect();
  const sent = [];
  for (const method of ['callTool', 'callToolResult']) {
    const original = server[method]?.bind(server);
    if (!original) continue;
    server[method] = (name, args, ...rest) => {
      sent.push(args);
      return original(name, args, ...rest);
    };
  }
  return { server, sent };
}

let calls = 0;
/** The tools as the last model request offered them: the SDK's definitions (name, parameters, strict). */
let offered = [];

/** A model that asks for one call, then reads what its next request carries for that call. */
function scriptedModel(name, args, callId, handed) {
  return {
    async getResponse(request) {
      offered = request.tools;
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

/** One run in which the model calls `name` with `args`: what it was handed, and what the SDK sent the server. */
async function call(name, args) {
  const callId = `call_${++calls}`;
  let output;
  const { server, sent } = await connected();
  const agent = new Agent({
    name: 'retrysafe-test',
    instructions: 'Use the tools.',
    model: scriptedModel(name, args, callId, (handed) => {
      output = handed;
    }),
    mcpServers: [server],
    ...(strict ? { mcpConfig: { convertSchemasToStrict: true } } : {}),
  });
  try {
    await runAgent(agent, 'Go.', { maxTurns: 3 });
  } finally {
    await server.close();
  }
  return { handed: output, sent };
}

async function see(name, args) {
  return (await call(name, args)).handed;
}

/** The tools as the server lists them (the SDK's MCP listing, before it makes function tools of them). */
async function listed() {
  const { server } = await connected();
  try {
    return (await server.listTools()).map(({ name, inputSchema }) => ({ name, inputSchema }));
  } finally {
    await server.close();
  }
}

await run({
  async tools() {
    await see('get_invoice', { invoice_id: 'inv_none' }); // one turn, to read what the model is offered
    return offered.map((tool) => tool.name);
  },
  see,
  // Optional fields filled with null, as a strict model leaves a field out, then the same calls with the
  // fields omitted; and a key the schema does not have.
  async more() {
    const invoice = { idempotency_key: `${keys}-null-invoice`, customer: 'cus_null', amount: 500 };
    const ticket = { idempotency_key: `${keys}-null-ticket`, title: 'A body left out' };
    return {
      listed: await listed(),
      offered,
      nulls: {
        invoice: await call('create_invoice', { ...invoice, currency: null }),
        invoiceOmitted: await call('create_invoice', invoice),
        ticket: await call('create_ticket', { ...ticket, body: null }),
        ticketOmitted: await call('create_ticket', ticket),
      },
      extraKey: await call('create_invoice', { ...invoice, idempotency_key: `${keys}-extra`, note: 'rush' }),
    };
  },
  close: async () => {},
});
