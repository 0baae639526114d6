import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type SendMessageBatchCommandInput, SQSClient } from '@aws-sdk/client-sqs';
import type { Context, DynamoDBStreamEvent, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { createServices, type Services } from '../../app/services';
import { TABLES, type TableId, tableName } from '../../app/tables';
import { TOOLS, type ToolName } from '../../app/tools';
import { RECHECK_QUEUE_URL_VAR } from '../../lib/admin/recheck-queue';
import type { JsonObject, Operation } from '../../lib/idempotency';
import { createToolRuntime } from '../../lib/lambda/runtime';
import { LocalStreamFeed } from '../../lib/local/stream-feed';
import { createStreamsClient } from '../../lib/local/streams-client';
import * as storeClient from '../../lib/store/client';
import { createTableInput } from '../../lib/store/create-tables';
import { IDEMPOTENCY_TABLE } from '../../lib/store/tables';
import { advanceClock } from './clock';
import type { ObservedAccess } from './observed-access';
import { deadline, identity } from './world';

/** Each registered tool's call (the type asks for every tool: a new one without a call does not compile). */
const CALLS: Readonly<Record<ToolName, (seeded: { invoice: string; ticket: string }) => Record<string, unknown>>> = {
  create_invoice: () => ({ idempotency_key: 'k1', customer: 'c', amount: 100 }),
  refund: ({ invoice }) => ({ idempotency_key: 'k1', invoice_id: invoice, amount: 500 }),
  create_ticket: () => ({ idempotency_key: 'k1', title: 't' }),
  close_ticket: ({ ticket }) => ({ idempotency_key: 'k1', ticket_key: ticket, resolution: 'r' }),
  send_email: () => ({ idempotency_key: 'k1', to: 'a@example.com', subject: 's', body: 'b' }),
};

/** What the deployed completer did, and sent, while it finished one abandoned call of every tool. */
export interface CompleterAccess {
  /** The DynamoDB actions it sent, per table id. */
  readonly dynamodb: ObservedAccess;
  /** The SQS actions it sent (API names, `sqs:<Command>`). */
  readonly sqs: readonly string[];
  /** Rechecks its stream invocation sent. */
  readonly rechecksSent: number;
  /** Its answer to the SQS batch of those rechecks. */
  readonly recheckResponse: SQSBatchResponse | undefined;
  /** Each call's state once the rechecks ran, by tool. */
  readonly operations: Readonly<Record<ToolName, Operation<JsonObject> | undefined>>;
}

/**
 * Drives the deployed completer — `lambdas/complete.ts`, loaded as Lambda loads it, configured by the
 * environment the stack sets — end to end on DynamoDB Local, recording what it sends: one call of every
 * tool whose worker dies after its claim (its domain requests never answer), on an idempotency table of
 * its own (the shared one holds other suites' dead workers); the table's stream, read by the local feed,
 * as a `DynamoDBStreamEvent`; the rechecks it sends to SQS (a stubbed client: there is no SQS here)
 * delivered back as an `SQSEvent` once their locks ended.
 */
export async function observeCompleterAccess(): Promise<CompleterAccess> {
  const table = `access-completer-${randomUUID().slice(0, 8)}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    [IDEMPOTENCY_TABLE.envVar]: table,
    [RECHECK_QUEUE_URL_VAR]: 'https://sqs.us-east-1.amazonaws.com/123456789012/rechecks',
  };
  const setup = createServices(env);
  const dying = createServices(env);
  const streams = createStreamsClient(env);
  const sqs = mockClient(SQSClient);
  const sent: SendMessageBatchCommandInput[] = [];
  sqs.callsFake(async (input: SendMessageBatchCommandInput) => {
    sent.push(input);
    return {
      Successful: (input.Entries ?? []).map((entry) => ({ Id: entry.Id, MessageId: randomUUID() })),
      Failed: [],
    };
  });
  await setup.client.send(new CreateTableCommand(createTableInput(IDEMPOTENCY_TABLE, table)));
  let completerClient: DynamoDBClient | undefined;
  try {
    let handler: CompleterHandler;
    ({ handler, client: completerClient } = await loadCompleter(env));
    const caller = identity();

    // Prepare: a call of every tool, each worker dying after its claim, before any domain write answers.
    const invoice = `inv_${randomUUID().slice(0, 8)}`;
    const ticket = `tck_${randomUUID().slice(0, 8)}`;
    await setup.invoices.create({
      tenant: caller.tenant,
      invoice_id: invoice,
      customer: 'c',
      amount: 500,
      currency: 'usd',
      created_at: new Date().toISOString(),
    });
    await setup.tickets.create({
      tenant: caller.tenant,
      ticket_key: ticket,
      title: 't',
      status: 'open',
      created_at: 'now',
    });
    const claimed = hangDomainRequests(dying, env);
    const dyingRuntime = createToolRuntime(dying, env);
    for (const tool of TOOLS) {
      const reached = claimed.next();
      void dyingRuntime.invoke(tool.bind(dying), caller, CALLS[tool.name]({ invoice, ticket }), deadline(1_000));
      await reached;
    }
    advanceClock(5_000); // every dead worker's lock has ended
    const recorded = recordAccess(completerClient, env);

    // Act: the stream's records as the event source mapping delivers them, then the rechecks as SQS does.
    const context = deadline(30_000) as unknown as Context;
    await new LocalStreamFeed(streams, table).poll(async function streamBatch(records) {
      await handler({ Records: records } as unknown as DynamoDBStreamEvent, context);
    });
    const messages = sent.flatMap((batch) => batch.Entries ?? []);
    const recheckResponse = await handler(
      {
        Records: messages.map((message, index) => ({
          messageId: `m${index}`,
          body: message.MessageBody,
          eventSource: 'aws:sqs',
        })),
      } as unknown as SQSEvent,
      context,
    );

    const lookups = createToolRuntime(setup, env);
    const operations = {} as Record<ToolName, Operation<JsonObject> | undefined>;
    for (const tool of TOOLS) operations[tool.name] = await lookups.lookup(tool.name, caller, 'k1');
    return {
      dynamodb: recorded.stop(),
      sqs: [...new Set(sqs.calls().map((call) => `sqs:${call.args[0].constructor.name.replace(/Command$/, '')}`))],
      rechecksSent: messages.length,
      recheckResponse,
      operations,
    };
  } finally {
    jest.restoreAllMocks();
    sqs.restore();
    await setup.client.send(new DeleteTableCommand({ TableName: table }));
    for (const client of [setup.client, dying.client, streams, completerClient]) client?.destroy();
  }
}

type CompleterHandler = (event: unknown, context: Context) => Promise<SQSBatchResponse | undefined>;

/**
 * `lambdas/complete.ts` as Lambda loads it — composed once, from the environment, when the module loads —
 * and the DynamoDB client it composed for itself (what it sends is recorded on it).
 */
async function loadCompleter(env: NodeJS.ProcessEnv): Promise<{ handler: CompleterHandler; client: DynamoDBClient }> {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  const created: DynamoDBClient[] = [];
  const create = storeClient.createDynamoDBClient;
  const spy = jest.spyOn(storeClient, 'createDynamoDBClient').mockImplementation((...args) => {
    const client = create(...args);
    created.push(client);
    return client;
  });
  try {
    const { handler } = (await import('../../lambdas/complete')) as { handler: CompleterHandler };
    if (created.length !== 1) throw new Error(`the completer composed ${created.length} DynamoDB clients, not one`);
    return { handler, client: created[0]! };
  } finally {
    spy.mockRestore();
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
  }
}

/**
 * Makes every request `services` sends to a domain table hang forever — its worker "dies" there, after
 * its claim — and says when the next one arrived.
 */
function hangDomainRequests(services: Services, env: NodeJS.ProcessEnv): { next(): Promise<void> } {
  const domainTables = new Set((Object.keys(TABLES) as TableId[]).map((id) => tableName(id, env)));
  let arrived: (() => void) | undefined;
  services.client.middlewareStack.add(
    (next) => async (args) => {
      if (!domainTables.has((args.input as { TableName?: string }).TableName ?? '')) return next(args);
      arrived?.();
      return new Promise<never>(() => {});
    },
    { step: 'initialize', name: 'hangDomainRequests' },
  );
  return {
    next: () =>
      new Promise<void>((resolve) => {
        arrived = resolve;
      }),
  };
}

/** Records the DynamoDB actions `services` sends from now on, per table id, until `stop()`. */
function recordAccess(client: DynamoDBClient, env: NodeJS.ProcessEnv): { stop(): ObservedAccess } {
  const ids = new Map(
    ([...Object.keys(TABLES), 'idempotency'] as Array<TableId | 'idempotency'>).map((id) => [tableName(id, env), id]),
  );
  const sent = new Map<TableId | 'idempotency', Set<string>>();
  let recording = true;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const table = ids.get((args.input as { TableName?: string }).TableName ?? '');
      if (recording && table && context.commandName) {
        sent.set(table, (sent.get(table) ?? new Set()).add(`dynamodb:${context.commandName.replace(/Command$/, '')}`));
      }
      return next(args);
    },
    { step: 'initialize', name: 'recordCompleterAccess' },
  );
  return {
    stop() {
      recording = false;
      return Object.fromEntries([...sent].map(([table, actions]) => [table, [...actions].sort()]));
    },
  };
}
