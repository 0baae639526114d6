// An agent app in plain JavaScript (Node 20+, no TypeScript loader): it calls the tools of a retrysafe API
// through retrysafe/client, as a model's tool calls would — the tool-call id as the key, a retry that
// reads the first write. RETRYSAFE_URL and RETRYSAFE_TOKEN name the API and a bearer token for it.
import assert from 'node:assert/strict';
import { answerToolCall, RetrysafeClient } from 'retrysafe/client';
import { openAiChatTools } from 'retrysafe/client/openai';

const baseUrl = process.env.RETRYSAFE_URL;
const token = process.env.RETRYSAFE_TOKEN;
if (!baseUrl || !token) throw new Error('set RETRYSAFE_URL and RETRYSAFE_TOKEN');

const client = new RetrysafeClient({ baseUrl, getToken: async () => token });

// What the model is shown: every tool, as OpenAI function tools (strict schemas).
const tools = await client.listTools();
const functions = openAiChatTools(tools);
console.log(`tools: ${functions.map((tool) => tool.function.name).join(', ')}`);

// A tool call as the model makes it; the same call sent twice (the answer to the first was "lost").
const toolCall = {
  tool: 'create_invoice',
  input: JSON.stringify({ customer: 'cus_ada', amount: 4200 }),
  toolCallId: `call_${Date.now()}`,
};
const first = await answerToolCall(client, toolCall);
const again = await answerToolCall(client, toolCall);
console.log('first:', JSON.stringify(first));
console.log('again:', JSON.stringify(again));

assert.equal(first.ok, true);
assert.equal(first.idempotent, false);
assert.equal(again.idempotent, true, 'the second call is a read of the first write');
assert.deepEqual(again.receipt, first.receipt);
assert.equal(again.next.action, 'none');

// The programmatic call: typed answers, retried within its deadline, thrown refusals.
const { receipt } = await client.call('refund', { invoice_id: first.receipt.invoice_id, amount: 4200 }, { key: `r_${toolCall.toolCallId}` });
assert.equal(receipt.invoice_id, first.receipt.invoice_id);
console.log('agent app: one invoice, one refund, every retry a replay');
