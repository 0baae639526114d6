import { generateText, jsonSchema, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import * as z from 'zod/mini';
import type { Invoice } from '../../app/domain/invoices';
import { type AgentAnswer, RetrysafeClient, type ToolDescription } from '../../lib/client';
import { aiSdkTools } from '../../lib/client/ai-sdk';
import { anthropicTools, runAnthropicToolUse } from '../../lib/client/anthropic';
import {
  openAiChatTools,
  openAiResponsesTools,
  runOpenAiChatToolCall,
  runOpenAiFunctionCall,
} from '../../lib/client/openai';
import { strictParameters } from '../../lib/client/strict-schema';
import { jsonSchemaOf } from '../../lib/tools/catalog';
import { defineToolModule } from '../../lib/tools/tool-module';
import { type LossyProxy, loseFirstAnswersPerKey, startLossyProxy } from '../faults/lossy-proxy';
import { startTestApi, type TestApi } from '../helpers/api';
import { strictModeProblems } from '../helpers/openai-strict';
import { newTenant } from '../helpers/world';

let api: TestApi;
let proxy: LossyProxy;
let listing: ToolDescription[];
beforeAll(async () => {
  api = await startTestApi();
  // Every intent's first answer is lost: each adapter's call is retried, so its key must be stable.
  proxy = await startLossyProxy(api.url, loseFirstAnswersPerKey(1));
  listing = await new RetrysafeClient({ baseUrl: api.url, token: await api.token(newTenant()) }).listTools();
});
afterAll(async () => {
  await proxy.close();
  await api.close();
});

async function clientFor(tenant: string) {
  return new RetrysafeClient({
    baseUrl: proxy.url,
    token: await api.token(tenant),
    retry: { baseDelayMs: 10, maxDelayMs: 50 },
  });
}

async function seedInvoice(tenant: string): Promise<Invoice> {
  const invoice = {
    tenant,
    invoice_id: `inv_${Math.random().toString(36).slice(2, 10)}`,
    customer: 'cus_ada',
    amount: 4_200,
    currency: 'usd',
    created_at: new Date().toISOString(),
  };
  await api.services.invoices.create(invoice);
  return invoice;
}

function requestsWithKey(key: string) {
  return proxy.requests.filter(
    (request) => request.method === 'POST' && JSON.parse(request.body).idempotency_key === key,
  );
}

describe('tool formats from GET /tools', () => {
  it('lists every write for Anthropic with idempotency_key optional and no dialect line, and for OpenAI (both APIs) strict', () => {
    const chat = openAiChatTools(listing);
    const responses = openAiResponsesTools(listing);
    const anthropic = anthropicTools(listing);

    for (const [i, tool] of listing.entries()) {
      const required = (tool.input_schema.required as string[]).filter((field) => field !== 'idempotency_key');
      const expected = expect.objectContaining({
        type: 'object',
        required,
        properties: expect.objectContaining({ idempotency_key: expect.objectContaining({ type: 'string' }) }),
      });
      const fields = Object.keys(tool.input_schema.properties as object);
      const strict = expect.objectContaining({ type: 'object', required: fields, additionalProperties: false });
      expect(chat[i]).toEqual({
        type: 'function',
        function: { name: tool.name, description: tool.description, parameters: strict, strict: true },
      });
      expect(responses[i]).toEqual({
        type: 'function',
        name: tool.name,
        description: tool.description,
        parameters: strict,
        strict: true,
      });
      expect(strictModeProblems(chat[i]!.function.parameters)).toEqual([]);
      expect(strictModeProblems(responses[i]!.parameters)).toEqual([]);
      expect(anthropic[i]).toEqual({ name: tool.name, description: tool.description, input_schema: expected });
      expect(anthropic[i]!.input_schema).not.toHaveProperty('$schema');
    }
    expect(listing.map((tool) => tool.name)).toEqual(
      expect.arrayContaining(['create_invoice', 'refund', 'create_ticket', 'close_ticket', 'send_email']),
    );
  });

  it('holds the checker to what strict mode refuses: the listed schemas break its rules', () => {
    const createInvoice = listing.find((tool) => tool.name === 'create_invoice')!;

    expect(strictModeProblems(createInvoice.input_schema)).toEqual(
      expect.arrayContaining([
        '$.idempotency_key: keyword minLength is not supported',
        '$.currency: keyword default is not supported',
        '$.currency: not in required',
      ]),
    );
    expect(strictModeProblems({ type: 'object', properties: {}, required: [] })).toEqual([
      '$: additionalProperties must be false',
    ]);
    expect(strictModeProblems({ anyOf: [{ type: 'object' }] })).toContain('$: the root must be an object');
  });

  it('keeps what a dropped keyword said in the description, and makes an optional field nullable', () => {
    const createInvoice = openAiResponsesTools(listing).find((tool) => tool.name === 'create_invoice')!;
    const properties = createInvoice.parameters.properties as Record<string, Record<string, unknown>>;

    expect(properties.currency).toEqual({
      type: ['string', 'null'],
      pattern: '^[a-z]{3}$',
      description: 'ISO 4217 code, lowercase. (default "usd")',
    });
    expect(properties.customer).toEqual({ type: 'string', description: 'Who is invoiced. (1-200 characters)' });
    expect(properties.idempotency_key!.type).toEqual(['string', 'null']);
  });
});

describe('a strict model fills every field: null is a field left out', () => {
  it('takes null for an optional field as absent (the default applies, the same intent), and refuses null for a required one', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const client = await clientFor(tenant);

    const strict = await runOpenAiFunctionCall(client, {
      type: 'function_call',
      call_id: 'call_strict_1',
      name: 'create_invoice',
      arguments: '{"customer":"cus_ada","amount":4200,"currency":null,"idempotency_key":null}',
    });
    const omitted = await api.post('/tools/create_invoice', token, {
      idempotency_key: 'call_strict_1',
      customer: 'cus_ada',
      amount: 4_200,
    });
    const missing = await api.post('/tools/create_invoice', token, {
      idempotency_key: 'k-null',
      customer: null,
      amount: 4_200,
    });

    // (the proxy loses each intent's first answer: the strict call itself already ends in a replay)
    expect(strict.answer).toMatchObject({
      ok: true,
      key: 'call_strict_1',
      receipt: { currency: 'usd' },
    });
    expect(omitted.body).toMatchObject({ ok: true, idempotent: true, receipt: { currency: 'usd' } });
    expect([missing.status, missing.body.error.code, missing.body.error.message]).toEqual([
      400,
      'invalid_args',
      expect.stringMatching(/^customer: /),
    ]);
    expect(await api.services.invoices.list(tenant)).toHaveLength(1);
  });
});

describe('running a model tool call through the client', () => {
  it('runs an OpenAI Chat Completions tool call once per tool_call.id, whatever the retries', async () => {
    // Prepare
    const tenant = newTenant();
    const client = await clientFor(tenant);
    const toolCall = {
      id: 'call_chat_1',
      type: 'function' as const,
      function: { name: 'create_invoice', arguments: '{"customer":"cus_ada","amount":4200}' },
    };

    // Act: the framework runs the same tool call twice
    const first = await runOpenAiChatToolCall(client, toolCall);
    const again = await runOpenAiChatToolCall(client, toolCall);

    // Assess
    expect(first.message).toEqual({ role: 'tool', tool_call_id: 'call_chat_1', content: JSON.stringify(first.answer) });
    expect(first.answer).toMatchObject({ ok: true, idempotent: true, key: 'call_chat_1' });
    expect(again.answer).toEqual(first.answer);
    expect(requestsWithKey('call_chat_1')).toHaveLength(3); // lost, replayed, replayed
    expect(await api.services.invoices.list(tenant)).toHaveLength(1);
  });

  it('runs an OpenAI Responses function call with its call_id as the key', async () => {
    const tenant = newTenant();
    const client = await clientFor(tenant);

    const { item, answer } = await runOpenAiFunctionCall(client, {
      type: 'function_call',
      call_id: 'call_resp_1',
      name: 'create_ticket',
      arguments: '{"title":"Printer on fire"}',
    });

    expect(item).toEqual({ type: 'function_call_output', call_id: 'call_resp_1', output: JSON.stringify(answer) });
    expect(answer).toMatchObject({
      ok: true,
      key: 'call_resp_1',
      receipt: { title: 'Printer on fire', status: 'open' },
    });
  });

  it('refunds once for an Anthropic tool_use run twice, and answers a refusal as is_error without retrying', async () => {
    // Prepare
    const tenant = newTenant();
    const invoice = await seedInvoice(tenant);
    const client = await clientFor(tenant);
    const toolUse = {
      type: 'tool_use' as const,
      id: 'toolu_01refund',
      name: 'refund',
      input: { invoice_id: invoice.invoice_id, amount: 4_200 },
    };

    // Act
    const first = await runAnthropicToolUse(client, toolUse);
    const again = await runAnthropicToolUse(client, toolUse);
    const wrong = await runAnthropicToolUse(client, {
      ...toolUse,
      id: 'toolu_02wrong',
      input: { invoice_id: invoice.invoice_id, amount: 1 },
    });

    // Assess
    const movements = await api.services.ledger.movements(tenant);
    expect(movements).toHaveLength(1);
    expect(first.block).toEqual({
      type: 'tool_result',
      tool_use_id: 'toolu_01refund',
      content: JSON.stringify(first.answer),
      is_error: false,
    });
    expect(first.answer).toMatchObject({ ok: true, receipt: { refund_id: movements[0]!.movement_id } });
    expect(again.answer).toEqual(first.answer);
    expect(wrong.block.is_error).toBe(true);
    expect(wrong.answer).toEqual({
      ok: false,
      key: 'toolu_02wrong',
      error: { code: 'invalid_args', message: expect.stringMatching(/^amount: /) },
      next: { action: 'fix_arguments', message: expect.stringMatching(/^Nothing was done/) },
    });
    // its first answer was lost like every intent's; the refusal that followed was not retried
    expect(requestsWithKey('toolu_02wrong').map((request) => request.lost)).toEqual(['close', false]);
  });

  it("uses the model's idempotency_key to resume an intent, and refuses arguments that are not JSON without sending them", async () => {
    // Prepare: an intent the model was told about under key resume-1
    const tenant = newTenant();
    const client = await clientFor(tenant);
    const earlier = await client.call('create_invoice', { customer: 'cus_ada', amount: 4_200 }, { key: 'resume-1' });
    const sentBefore = proxy.requests.length;

    // Act: a new tool call (new id) that names the earlier key; then a tool call with broken JSON
    const resumed = await runOpenAiChatToolCall(client, {
      id: 'call_new_turn',
      function: {
        name: 'create_invoice',
        arguments: '{"customer":"cus_ada","amount":4200,"idempotency_key":"resume-1"}',
      },
    });
    const sentForResume = proxy.requests.length - sentBefore;
    const broken = await runOpenAiChatToolCall(client, {
      id: 'call_broken',
      function: { name: 'create_invoice', arguments: '{"customer":' },
    });

    // Assess
    expect(resumed.answer).toEqual({
      ...earlier,
      idempotent: true,
      next: { action: 'none', message: expect.stringMatching(/^Already done: .*Do not repeat it/) },
    });
    expect(sentForResume).toBe(1);
    expect(broken.answer).toEqual({
      ok: false,
      key: 'call_broken',
      error: { code: 'invalid_args', message: 'arguments: not valid JSON' },
      next: { action: 'fix_arguments', message: expect.any(String) },
    });
    expect(proxy.requests.length - sentBefore).toBe(1);
    expect(await api.services.invoices.list(tenant)).toHaveLength(1);
  });
});

describe('Vercel AI SDK tools', () => {
  it('runs a tool call that generateText executes twice with the same toolCallId once', async () => {
    // Prepare: a mock model that asks for the same refund twice under one toolCallId (a replayed
    // step), then answers in text
    const tenant = newTenant();
    const invoice = await seedInvoice(tenant);
    const client = await clientFor(tenant);
    const tools = aiSdkTools(client, listing, { jsonSchema });
    const refundCall = {
      type: 'tool-call' as const,
      toolCallId: 'call-ai-1',
      toolName: 'refund',
      input: JSON.stringify({ invoice_id: invoice.invoice_id, amount: 4_200 }),
    };
    const usage = {
      inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: 1, text: 1, reasoning: 0 },
    };
    const toolStep = {
      content: [refundCall],
      finishReason: { unified: 'tool-calls' as const, raw: undefined },
      usage,
      warnings: [],
    };
    const model = new MockLanguageModelV3({
      doGenerate: [
        toolStep,
        toolStep,
        {
          content: [{ type: 'text', text: 'Refunded.' }],
          finishReason: { unified: 'stop', raw: undefined },
          usage,
          warnings: [],
        },
      ],
    });

    // Act
    const result = await generateText({ model, tools, prompt: 'Refund the invoice.', stopWhen: stepCountIs(5) });

    // Assess: two tool results with the same receipt, one movement of money
    const outputs = result.steps.flatMap((step) =>
      step.toolResults.map((toolResult) => toolResult.output as AgentAnswer),
    );
    const movements = await api.services.ledger.movements(tenant);
    expect(result.text).toBe('Refunded.');
    expect(outputs).toHaveLength(2);
    expect(outputs[0]).toMatchObject({ ok: true, key: 'call-ai-1', receipt: { refund_id: movements[0]!.movement_id } });
    expect(outputs[1]).toEqual({ ...outputs[0], idempotent: true });
    expect(movements).toHaveLength(1);
    expect(requestsWithKey('call-ai-1').map((request) => request.lost)).toEqual(['close', false, false]);
  });
});

// The strict OpenAI adapter (lib/client/strict-schema.ts) with app tools of nested or unsayable arguments: found
// by the review of issue 14 (each test failed on the code as first committed).

describe('the strict OpenAI adapter with an app tool that has a nested object', () => {
  const shipArgs = z.strictObject({
    address: z.strictObject({ line1: z.string().check(z.minLength(1)), line2: z.optional(z.string()) }),
  });
  const ship = defineToolModule({
    name: 'review_ship',
    description: 'review: ships to an address',
    args: shipArgs,
    annotations: { destructiveHint: false, openWorldHint: false },
    access: {},
    async execute(args) {
      return { receipt: { line1: args.address.line1, line2: args.address.line2 ?? null }, replayed: false };
    },
  });
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi({ tools: [ship] });
  });
  afterAll(() => api.close());

  it('accepts the null the strict schema makes the model send for a nested optional field', async () => {
    const token = await api.token(newTenant());
    const client = new RetrysafeClient({ baseUrl: api.url, token, deadlineMs: 5_000 });
    const [tool] = openAiChatTools(await client.listTools());
    // The adapter made address.line2 required and nullable: a strict model must send it, as null to leave it out.
    expect(tool!.function.parameters).toMatchObject({
      properties: { address: { required: ['line1', 'line2'], properties: { line2: { type: ['string', 'null'] } } } },
    });

    const { answer } = await runOpenAiChatToolCall(client, {
      id: 'call_nested_1',
      type: 'function',
      function: {
        name: 'review_ship',
        arguments: JSON.stringify({ idempotency_key: null, address: { line1: '1 Main St', line2: null } }),
      },
    });

    expect(answer).toEqual(expect.objectContaining({ ok: true, idempotent: false }));
  });
});

describe('the strict OpenAI schema of argument kinds zod gives apps', () => {
  // What the server validates with: a record, a discriminated union, a tuple. Strict mode cannot say them
  // (an open map, oneOf, prefixItems): the tool is offered non-strict, as listed, never with another meaning.
  const args = z.strictObject({
    tags: z.record(z.string(), z.string()),
    payment: z.discriminatedUnion('kind', [
      z.strictObject({ kind: z.literal('card'), last4: z.string() }),
      z.strictObject({ kind: z.literal('bank'), iban: z.string() }),
    ]),
    pair: z.tuple([z.string(), z.int()]),
  });

  it.each([
    ['a record', z.strictObject({ tags: args.shape.tags })],
    ['a discriminated union', z.strictObject({ payment: args.shape.payment })],
    ['a tuple', z.strictObject({ pair: args.shape.pair })],
  ])('%s: no strict parameters, so the OpenAI tool is strict: false with the listed schema', (_kind, schema) => {
    const listed = jsonSchemaOf(schema, 'input');
    const tool = {
      name: 'review_kinds',
      description: 'review',
      input_schema: {
        ...listed,
        properties: { ...(listed.properties as object), idempotency_key: { type: 'string' } },
      },
    } as unknown as Parameters<typeof openAiChatTools>[0][number];

    expect(strictParameters(listed)).toBeUndefined();
    expect(openAiChatTools([tool])[0]!.function).toMatchObject({
      strict: false,
      parameters: { properties: listed.properties },
    });
  });
});
