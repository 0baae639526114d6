import { fork } from 'node:child_process';
import { join } from 'node:path';
import { startTestApi, type TestApi } from '../helpers/api';
import { FakeStripe } from '../helpers/fake-stripe';
import { strictModeProblems } from '../helpers/openai-strict';
import { newTenant } from '../helpers/world';

/**
 * Third-party MCP clients from npm against retrysafe's `/mcp`, each as an agent would use it, and what each
 * hands the model. Each client runs in its own Node process (a script in ./clients, plain ES modules as
 * most of these packages ship) that runs one scenario — a write, its replay, a conflict, a refusal, and a
 * refund called again while the first is held at the payment provider — and reports what the framework
 * put in front of the model at each step.
 */

/** A JSON Schema object, as the server lists a tool's input and as a framework offers it to the model. */
interface JsonSchema {
  readonly type?: string;
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: unknown;
  readonly [keyword: string]: unknown;
}

/** One call of a client's own steps: what the model was handed, and the arguments the framework sent. */
interface Call {
  readonly handed: unknown;
  readonly sent: ReadonlyArray<Record<string, unknown>>;
}

/** What one client script reports: what reached the model at each step of the scenario. */
interface Seen {
  readonly tools: string[];
  readonly first: unknown;
  readonly replay: unknown;
  readonly conflict: unknown;
  readonly invalid: unknown;
  readonly pending: unknown;
  readonly held: unknown;
  readonly operation: unknown;
  readonly error?: string;
  /** OpenAI Agents JS only: the tools as /mcp lists them, and as the SDK offered them to the model. */
  readonly listed?: ReadonlyArray<{ readonly name: string; readonly inputSchema: JsonSchema }>;
  readonly offered?: ReadonlyArray<{
    readonly type: string;
    readonly name: string;
    readonly strict?: boolean;
    readonly parameters: JsonSchema;
  }>;
  /** OpenAI Agents JS only: writes with optional fields null (as a strict model leaves one out), then omitted. */
  readonly nulls?: Readonly<Record<'invoice' | 'invoiceOmitted' | 'ticket' | 'ticketOmitted', Call>>;
  /** OpenAI Agents JS only: a write with a field the schema does not have. */
  readonly extraKey?: Call;
}

/** Text parts, as MCP content, the Agents SDK's input items and the AI SDK's tool output carry them. */
type TextParts = ReadonlyArray<{ readonly type: string; readonly text?: string }>;

function textOf(parts: TextParts): string {
  return parts.map((part) => part.text ?? JSON.stringify(part)).join('\n');
}

interface AgentClient {
  readonly name: string;
  readonly script: string;
  readonly args?: readonly string[];
  /** The text the model reads, from what the framework handed it. */
  readonly text: (handed: unknown) => string;
  /** How the framework hands over an answer that is not an error (a replay) and one that is (a conflict). */
  readonly handsOver: (seen: Seen) => void;
  /**
   * OpenAI Agents JS: whether the agent sets `mcpConfig.convertSchemasToStrict` (the script's `--strict`),
   * with which the SDK offers the MCP tools as strict function tools.
   */
  readonly convertSchemasToStrict?: boolean;
}

/** How OpenAI Agents JS hands over a result without `useStructuredContent`: the text part as input_text. */
function agentsHandOverContent(seen: Seen): void {
  for (const handed of [seen.replay, seen.conflict]) {
    expect(handed).toEqual([{ type: 'input_text', text: expect.any(String) }]);
  }
  expect((seen.replay as TextParts)[0]!.text).toMatch(SENTENCE_THEN_JSON);
}

/** The sentence, then the answer object as JSON: the text content retrysafe answers with. */
const SENTENCE_THEN_JSON = /^[^{\n]+\n\{.*\}$/s;

const CLIENTS: readonly AgentClient[] = [
  {
    // A tool-result part of the next prompt: `{ type: 'content', value: [{ type: 'text', text }] }`.
    name: 'AI SDK (@ai-sdk/mcp, generateText)',
    script: 'ai-sdk.mjs',
    text: (handed) => textOf((handed as { value: TextParts }).value),
    handsOver(seen) {
      // The content, never structuredContent — error or not.
      for (const handed of [seen.replay, seen.conflict]) {
        expect(handed).toEqual({ type: 'content', value: [{ type: 'text', text: expect.any(String) }] });
      }
      expect(textOf((seen.replay as { value: TextParts }).value)).toMatch(SENTENCE_THEN_JSON);
    },
  },
  {
    // A function_call_result's output: the text part as an input_text item.
    name: 'OpenAI Agents JS (MCPServerStreamableHttp)',
    script: 'openai-agents.mjs',
    text: (handed) => textOf(Array.isArray(handed) ? handed : [handed as TextParts[number]]),
    handsOver: agentsHandOverContent,
    convertSchemasToStrict: false,
  },
  {
    // With convertSchemasToStrict: the same hand-over; the tools are offered strict (see below).
    name: 'OpenAI Agents JS (MCPServerStreamableHttp, convertSchemasToStrict)',
    script: 'openai-agents.mjs',
    args: ['--strict'],
    text: (handed) => textOf(Array.isArray(handed) ? handed : [handed as TextParts[number]]),
    handsOver: agentsHandOverContent,
    convertSchemasToStrict: true,
  },
  {
    // With useStructuredContent: structuredContent as JSON text, unless isError (then the content).
    name: 'OpenAI Agents JS (MCPServerStreamableHttp, useStructuredContent)',
    script: 'openai-agents.mjs',
    args: ['--structured'],
    text: (handed) => textOf(Array.isArray(handed) ? handed : [handed as TextParts[number]]),
    handsOver(seen) {
      // Not an error: structuredContent alone, as JSON — no sentence, so the next step has to be in it.
      for (const handed of [seen.replay, seen.pending]) {
        expect(handed).toEqual({ type: 'text', text: expect.stringMatching(/^\{.*\}$/s) });
        expect(JSON.parse((handed as { text: string }).text)).toHaveProperty('next.message');
      }
      // An error: the content, as without the option.
      expect(seen.conflict).toEqual([{ type: 'input_text', text: expect.stringMatching(SENTENCE_THEN_JSON) }]);
    },
    convertSchemasToStrict: false,
  },
  {
    // A ToolMessage's content: a string — on success the whole text block (text and structuredContent)
    // as JSON, on isError "Error: MCP tool … returned an error: <text>\n Please fix your mistakes."
    name: 'LangChain (MultiServerMCPClient, LangGraph ToolNode)',
    script: 'langchain.mjs',
    text: (handed) => {
      const { content } = handed as { content: string | TextParts };
      return typeof content === 'string' ? content : textOf(content);
    },
    handsOver(seen) {
      // Not an error: the adapter's text block, with structuredContent beside the text, as one JSON string.
      const replay = seen.replay as { status: string; content: string };
      expect(replay.status).toBe('success');
      expect(JSON.parse(replay.content)).toEqual({
        type: 'text',
        text: expect.stringMatching(SENTENCE_THEN_JSON),
        structuredContent: expect.objectContaining({ idempotent: true, next: expect.any(Object) }),
      });
      // An error: the adapter throws, and ToolNode hands the model the message with its own advice.
      expect(seen.conflict).toEqual({
        status: 'error',
        content: expect.stringMatching(
          /^Error: MCP tool 'create_invoice' on server 'retrysafe' returned an error: conflict: .*\n Please fix your mistakes\.$/s,
        ),
      });
    },
  },
  {
    // The bridged tools/call result; a chat host shows the model its content.
    name: 'mcp-remote (stdio bridge, official SDK stdio client)',
    script: 'mcp-remote.mjs',
    text: (handed) => textOf((handed as { content: TextParts }).content),
    handsOver(seen) {
      // The bridge passes the result through: isError as the server set it, structuredContent = the JSON.
      for (const [step, isError] of [
        ['replay', false],
        ['pending', false],
        ['conflict', true],
      ] as const) {
        const { content, structuredContent } = seen[step] as { content: TextParts; structuredContent: unknown };
        expect(seen[step]).toMatchObject({ isError });
        expect(textOf(content)).toMatch(SENTENCE_THEN_JSON);
        expect(structuredContent).toEqual(answerIn(textOf(content)));
      }
    },
  },
];

// biome-ignore lint/suspicious/noExplicitAny: answers are asserted structurally
type AnswerObject = Record<string, any>;

/**
 * The answer object as the model can read it in `text`: the whole text as JSON (structuredContent as JSON;
 * LangChain's text block, whose `structuredContent` is the object), or the line of JSON after the sentence.
 */
function answerIn(text: string): AnswerObject | undefined {
  const candidates = [text, ...text.split('\n').filter((line) => line.startsWith('{'))];
  for (const candidate of candidates) {
    try {
      const parsed = JSON.parse(candidate) as AnswerObject;
      if ('ok' in parsed) return parsed;
      if (parsed.structuredContent && 'ok' in parsed.structuredContent) return parsed.structuredContent;
      if (typeof parsed.text === 'string') return answerIn(parsed.text);
    } catch {
      // not this one
    }
  }
  return undefined;
}

let api: TestApi;
let stripe: FakeStripe;
beforeAll(async () => {
  // Refunds go to a fake Stripe the tests can hold: a first refund in flight while the same call comes again.
  stripe = await FakeStripe.start();
  Object.assign(process.env, {
    PAYMENT_PROVIDER: 'stripe',
    STRIPE_SECRET_KEY: stripe.apiKey,
    STRIPE_API_BASE: stripe.url,
  });
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
  await stripe?.close();
});

/**
 * Runs one client's script against the API, for a fresh tenant with one paid invoice, and holds that
 * invoice's first refund at the fake Stripe until the script has called again.
 */
async function drive(client: AgentClient) {
  const tenant = newTenant('agents');
  const token = await api.token(tenant);
  const invoice = await api.post('/tools/create_invoice', token, {
    idempotency_key: 'to-refund',
    customer: 'cus_ada',
    amount: 4_200,
  });
  const invoiceId: string = invoice.body.receipt.invoice_id;
  stripe.addPaymentIntent(invoiceId, { amount: 4_200, currency: 'usd' });
  const held = stripe.holdNext();
  const keys = `${client.script.replace('.mjs', '')}${client.args?.join('') ?? ''}`;

  const child = fork(join(__dirname, 'clients', client.script), client.args ?? [], {
    execArgv: [],
    env: {
      ...process.env,
      RETRYSAFE_MCP_URL: `${api.url}/mcp`,
      RETRYSAFE_TOKEN: token,
      RETRYSAFE_INVOICE: invoiceId,
      RETRYSAFE_AMOUNT: '4200',
      RETRYSAFE_KEYS: keys,
    },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  void held.arrived.then(() => child.connected && child.send({ step: 'arrived' }));
  const seen = await new Promise<Seen>((resolve, reject) => {
    child.on('message', (message: { step: string; seen?: Seen }) => {
      if (message.step === 'release') held.release();
      if (message.step === 'seen') resolve(message.seen!);
    });
    child.once('exit', (code) =>
      reject(new Error(`${client.script} exited with ${code} before reporting:\n${output}`)),
    );
  });
  held.release(); // whatever happened, nothing stays held
  return { seen, tenant, invoiceId, keys, output };
}

describe.each(CLIENTS)('$name', (client) => {
  let run: Awaited<ReturnType<typeof drive>>;
  /** What the model read at one step, and the answer object it could read there. */
  let read: (step: keyof Seen) => { text: string; answer: AnswerObject | undefined };
  beforeAll(async () => {
    run = await drive(client);
    read = (step) => {
      const text = client.text(run.seen[step]);
      return { text, answer: answerIn(text) };
    };
  }, 30_000);

  it('runs the whole scenario without a client-side error', () => {
    expect(run.seen.error).toBeUndefined();
  });

  it('hands the model what its framework hands it', () => {
    client.handsOver(run.seen);
  });

  it('lists the eight tools', () => {
    expect([...run.seen.tools].sort()).toEqual(
      [
        'close_ticket',
        'create_invoice',
        'create_ticket',
        'get_invoice',
        'get_operation',
        'get_ticket',
        'refund',
        'send_email',
      ].sort(),
    );
  });

  it('a write: the model reads the receipt, and that it is done', async () => {
    const { text, answer } = read('first');

    const stored = await api.services.invoices.get(run.tenant, answer?.receipt?.invoice_id);
    expect(answer).toMatchObject({
      ok: true,
      idempotent: false,
      key: `${run.keys}-invoice`,
      receipt: { customer: 'cus_ada', amount: 1_234 },
      next: { action: 'none', message: expect.stringMatching(/^Done, once\b/) },
    });
    expect(stored).toMatchObject({ invoice_id: answer?.receipt.invoice_id, amount: 1_234 });
    expect(text).toContain('Done, once');
  });

  it('a replay with the same key: idempotent, the first receipt, and "already done, do not repeat it"', () => {
    const first = read('first').answer;
    const { text, answer } = read('replay');

    expect(answer).toMatchObject({
      ok: true,
      idempotent: true,
      key: first?.key,
      receipt: first?.receipt,
      next: { action: 'none', message: expect.stringMatching(/Already done.*Do not repeat it/) },
    });
    expect(answer).not.toHaveProperty('next.after_ms');
    expect(text).toMatch(/Already done.*Do not repeat it/);
  });

  it('the same key with other arguments: a conflict, and to use the original arguments', async () => {
    const first = read('first').answer;
    const { text, answer } = read('conflict');

    const stored = await api.services.invoices.get(run.tenant, first?.receipt.invoice_id);
    expect(answer).toMatchObject({
      ok: false,
      error: { code: 'conflict' },
      next: { action: 'use_original_arguments', message: expect.stringMatching(/original arguments/) },
    });
    expect(stored).toMatchObject({ amount: 1_234 }); // unchanged
    expect(text).toMatch(/conflict/);
    expect(text).toMatch(/original arguments with this key return the first result/);
  });

  it('arguments the server refuses: invalid_args, and to fix them', () => {
    const { text, answer } = read('invalid');

    expect(answer).toMatchObject({
      ok: false,
      error: { code: 'invalid_args', message: expect.stringMatching(/^amount: /) },
      next: { action: 'fix_arguments' },
    });
    expect(text).toMatch(/invalid_args: amount: /);
  });

  it('the same call while the first is in flight: pending, with when to call again and what to poll', () => {
    const key = `${run.keys}-refund`;
    const { text, answer } = read('pending');

    expect(answer).toMatchObject({
      ok: false,
      status: 'pending',
      key,
      retry_after_ms: expect.any(Number),
      next: {
        action: 'call_again',
        after_ms: answer?.retry_after_ms,
        poll: {
          tool: 'get_operation',
          arguments: { tool: 'refund', idempotency_key: key },
          path: `/tools/refund/operations/${key}`,
        },
      },
    });
    expect(answer?.next.message).toMatch(/call refund again with the same idempotency_key/);
    expect(text).toMatch(/call refund again with the same idempotency_key/);
    expect(text).toContain('get_operation');
  });

  it('the held call completes once, and get_operation then says it is done', () => {
    const held = read('held').answer;
    const operation = read('operation').answer;

    const refunds = stripe.refunds.filter((refund) => refund.payment_intent === run.invoiceId);
    expect(held).toMatchObject({
      ok: true,
      idempotent: false,
      receipt: { invoice_id: run.invoiceId, refund_id: refunds[0]?.id },
      next: { action: 'none' },
    });
    expect(refunds).toHaveLength(1);
    expect(operation).toMatchObject({
      ok: true,
      status: 'completed',
      receipt: held?.receipt,
      next: { action: 'none' },
    });
  });

  if (client.convertSchemasToStrict === undefined) return;
  const strict = client.convertSchemasToStrict;
  /** The tools the scripted model was offered, each with the listing /mcp gave the SDK for it. */
  const offeredTools = () => {
    const { listed = [], offered = [] } = run.seen;
    expect(listed).toHaveLength(8);
    expect(offered.map((tool) => tool.name).sort()).toEqual(listed.map((tool) => tool.name).sort());
    return listed.map(({ name, inputSchema }) => ({ inputSchema, tool: offered.find((tool) => tool.name === name)! }));
  };

  if (strict) {
    it('convertSchemasToStrict: every tool strict: true, every field required (optional ones nullable), additionalProperties false — and the listed minLength, maxLength and default carried over', () => {
      const outside = new Set<string>();
      for (const { inputSchema, tool } of offeredTools()) {
        const fields = Object.keys(inputSchema.properties ?? {});
        const optional = fields.filter((field) => !inputSchema.required?.includes(field));
        expect(tool).toMatchObject({
          type: 'function',
          strict: true,
          parameters: { type: 'object', required: fields, additionalProperties: false },
        });
        for (const field of optional) {
          const listed = inputSchema.properties![field]!;
          expect(tool.parameters.properties?.[field]).toEqual({
            description: listed.description,
            anyOf: [listed, { type: 'null' }],
          });
        }
        // OpenAI's rules (test/helpers/openai-strict.ts): the SDK makes the shape strict, but keeps every
        // keyword as /mcp lists it, so what breaks them is exactly the listing's keywords outside the
        // subset, where they were (an optional field's in the first branch of its anyOf). Should the SDK
        // drop them one day, this fails: then the problems are [].
        const carried = strictModeProblems(inputSchema)
          .filter((problem) => / keyword \S+ is not supported$/.test(problem))
          .map((problem) =>
            problem.replace(/^\$\.(\w+):/, (whole, field: string) =>
              optional.includes(field) ? `$.${field}.anyOf[0]:` : whole,
            ),
          );
        const problems = strictModeProblems(tool.parameters);
        expect([...problems].sort()).toEqual(carried.sort());
        for (const problem of problems) outside.add(/ keyword (\S+) /.exec(problem)![1]!);
      }
      expect([...outside].sort()).toEqual(['default', 'maxLength', 'minLength']);
    });
  } else {
    it('without convertSchemasToStrict (the default): every tool strict: false, additionalProperties true where /mcp lists false', () => {
      for (const { inputSchema, tool } of offeredTools()) {
        expect(inputSchema.additionalProperties).toBe(false);
        expect(tool).toMatchObject({ type: 'function', strict: false });
        // The listing otherwise unchanged: the model is told extra keys are fine, and the server refuses them.
        expect(tool.parameters).toEqual({ ...inputSchema, additionalProperties: true });
      }
    });
  }

  it('optional fields filled with null: done, the default applied; the same write with them omitted is a replay', async () => {
    const { invoice, invoiceOmitted, ticket, ticketOmitted } = run.seen.nulls!;
    const answerOf = (call: Call) => answerIn(client.text(call.handed));

    const created = answerOf(invoice);
    expect(created).toMatchObject({
      ok: true,
      idempotent: false,
      receipt: { customer: 'cus_null', amount: 500, currency: 'usd' },
    });
    expect(answerOf(invoiceOmitted)).toMatchObject({
      ok: true,
      idempotent: true,
      key: created?.key,
      receipt: created?.receipt,
    });
    const opened = answerOf(ticket);
    expect(opened).toMatchObject({ ok: true, idempotent: false, receipt: { title: 'A body left out' } });
    expect(answerOf(ticketOmitted)).toMatchObject({
      ok: true,
      idempotent: true,
      key: opened?.key,
      receipt: opened?.receipt,
    });
    const storedInvoice = await api.services.invoices.get(run.tenant, created?.receipt.invoice_id);
    const storedTicket = await api.services.tickets.get(run.tenant, opened?.receipt.ticket_key);
    expect(storedInvoice).toMatchObject({ currency: 'usd' });
    expect(storedTicket).not.toHaveProperty('body');

    // What reached the server: with strict tools the SDK takes null out of a field it made nullable itself,
    // so the server sees the field omitted; without, the null itself, which the server reads as omitted.
    const sentInvoice = invoice.sent[0];
    const sentTicket = ticket.sent[0];
    if (strict) {
      expect(sentInvoice).not.toHaveProperty('currency');
      expect(sentTicket).not.toHaveProperty('body');
    } else {
      expect(sentInvoice).toHaveProperty('currency', null);
      expect(sentTicket).toHaveProperty('body', null);
    }
  });

  it('a field the schema does not have: passed on by the SDK, refused by the server with invalid_args naming it', () => {
    const { handed, sent } = run.seen.extraKey!;

    expect(sent[0]).toHaveProperty('note', 'rush');
    expect(answerIn(client.text(handed))).toMatchObject({
      ok: false,
      error: { code: 'invalid_args', message: 'note: unknown field' },
      next: { action: 'fix_arguments' },
    });
  });
});
