import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { InvoiceStore } from '../../app/domain/invoices';
import { Outbox } from '../../app/domain/outbox';
import { TicketStore } from '../../app/domain/tickets';
import { LedgerPaymentProvider } from '../../app/payments/ledger';
import { TABLES, type TableId, tableName } from '../../app/tables';
import { TOOLS } from '../../app/tools';
import { type CallOutcome, ToolRuntime } from '../../lib/idempotency';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import { createDocumentClient, createDynamoDBClient } from '../../lib/store/client';
import { createTables } from '../../lib/store/create-tables';
import type { StoreConnection } from './engine';
import { Scheduler } from './scheduler';

/** A write the explorer saw succeed, with the actor and the call it was made for. */
export interface ObservedWrite {
  readonly actor: string;
  readonly call: CallTag | undefined;
  readonly table: TableId | 'idempotency';
  readonly command: string;
  readonly input: Record<string, unknown>;
  /** Simulated time of the write. */
  readonly at: number;
}

/** What a piece of work is for: set around each call an actor makes, so writes can be attributed. */
export interface CallTag {
  readonly tool: string;
  readonly key: string;
  readonly intent: string;
}

const callTag = new AsyncLocalStorage<CallTag>();

/** Set around the explorer's polls (get_operation, an MCP task's view): any write made under it is one. */
const pollTag = new AsyncLocalStorage<string>();

/** Runs `read` as a poll named `what`: a poll must never write (its writes are kept, as violations). */
export function asPoll<T>(what: string, read: () => Promise<T>): Promise<T> {
  return pollTag.run(what, read);
}

/** Runs `work` as the call `tag` (its writes are attributed to it). */
export function asCall<T>(tag: CallTag, work: () => Promise<T>): Promise<T> {
  return callTag.run(tag, work);
}

/**
 * The real services — runtime, tools, completer, domain stores, the ledger provider — on DynamoDB
 * Local (an endpoint) or the in-memory engine (`--engine memory`), in a namespace of their own (each
 * keeps each access key's tables apart), with every DynamoDB request made by an actor turned into a
 * scheduling point.
 *
 * The SDK's own retries are off (`maxAttempts: 1`): what the scheduler injects is what the code sees
 * after the SDK gave up — and a `duplicate` fault is what an SDK retry of a lost answer does.
 */
export async function createExploreWorld(store: string | StoreConnection, options: ExploreWorldOptions = {}) {
  const connection = typeof store === 'string' ? { endpoint: store } : store;
  const namespace = `explore${randomBytes(6).toString('hex')}`;
  const credentials = { accessKeyId: namespace, secretAccessKey: 'explore' };
  const env: NodeJS.ProcessEnv = { DYNAMODB_ENDPOINT: connection.endpoint };
  const handler = connection.requestHandler ? { requestHandler: connection.requestHandler } : {};
  const client = createDynamoDBClient(env, { maxAttempts: 1, region: 'us-east-1', credentials, ...handler });
  const names = new Map<string, TableId | 'idempotency'>(
    ([...Object.keys(TABLES), 'idempotency'] as Array<TableId | 'idempotency'>).map((id) => [tableName(id, env), id]),
  );
  const writes: ObservedWrite[] = [];
  const pollWrites: string[] = [];
  const exchanges: Exchange[] | undefined = options.record ? [] : undefined;
  interpose(client, names, writes, pollWrites, exchanges);
  await createTables(client, TABLES, env);

  const documents = createDocumentClient(client);
  const logger = new Logger({ serviceName: 'explore', logLevel: 'SILENT' });
  const invoices = new InvoiceStore(documents, tableName('invoices', env));
  const tickets = new TicketStore(documents, tableName('tickets', env));
  const outbox = new Outbox(documents, tableName('outbox', env));
  const ledger = new LedgerPaymentProvider(documents, tableName('ledger', env));
  const services = { client, documents, logger, invoices, tickets, outbox, ledger, provider: ledger };
  const outcomes: CallOutcome[] = [];
  const runtime = new ToolRuntime({
    client,
    tableName: tableName('idempotency', env),
    attributes: DEFAULT_RECORD_ATTRIBUTES,
    logger,
    onOutcome: (outcome) => outcomes.push(outcome),
    // A duplicate's wait for the attempt in its way (attach) is a scheduled step that moves the simulated
    // clock, like an agent's wait: the waiting actor's reads interleave with the holder's steps. Outside
    // an actor nothing moves the clock: the wait passes at once (its reads are bounded by count).
    attach: { sleep: waitSimulated },
  });
  const tools = Object.fromEntries(TOOLS.map((tool) => [tool.name, tool.bind(services)]));
  const streams = new DynamoDBStreamsClient({
    endpoint: connection.endpoint,
    region: 'us-east-1',
    credentials,
    maxAttempts: 1,
    ...handler,
  });
  interpose(streams, names, writes, pollWrites, exchanges);
  return {
    env,
    client,
    documents,
    services,
    runtime,
    tools,
    streams,
    writes,
    /** Writes sent from inside a poll (`asPoll`): there must be none. */
    pollWrites,
    /** Every request an actor sent and what it got (only when `record`: the cross-check compares them). */
    exchanges,
    outcomes,
    destroy() {
      client.destroy();
      streams.destroy();
      connection.forget?.(namespace);
    },
  };
}

export type ExploreWorld = Awaited<ReturnType<typeof createExploreWorld>>;

/** Sleeps `ms` of simulated time: a scheduled step of the current actor (at once outside one). */
async function waitSimulated(ms: number): Promise<void> {
  await Scheduler.current()?.scheduler.wait(ms);
}

/**
 * Every request an actor sends becomes a scheduling point (the `initialize` step: before the SDK
 * serialises anything, so a crash here sends nothing). Requests outside an actor — the explorer's own
 * reads of the tables — pass straight through.
 */
function interpose(
  client: DynamoDBClient | DynamoDBStreamsClient,
  names: ReadonlyMap<string, TableId | 'idempotency'>,
  writes: ObservedWrite[],
  pollWrites: string[],
  exchanges: Exchange[] | undefined,
): void {
  (client.middlewareStack as DynamoDBClient['middlewareStack']).add(
    (next, context) =>
      async function schedulingPoint(args) {
        const input = args.input as Record<string, unknown>;
        const table = names.get(String(input.TableName ?? '')) ?? 'idempotency';
        const command = String(context.commandName ?? 'Command').replace(/Command$/, '');
        // A transaction's items, each as the write it makes (`Update` as an UpdateItem; a ConditionCheck writes nothing).
        const items =
          command === 'TransactWriteItems'
            ? ((input.TransactItems ?? []) as Array<Record<string, Record<string, unknown>>>).flatMap((item) =>
                Object.entries(item)
                  .filter(([kind]) => kind !== 'ConditionCheck')
                  .map(([kind, request]) => ({
                    command: `${kind}Item`,
                    table: names.get(String(request.TableName ?? '')) ?? 'idempotency',
                    input: request,
                  })),
              )
            : /^(Put|Update|Delete)Item$/.test(command)
              ? [{ command, table, input }]
              : [];
        const poll = pollTag.getStore();
        for (const item of poll ? items : []) pollWrites.push(`${poll}: ${item.command} ${item.table}`);
        const running = Scheduler.current();
        if (!running) return next(args);
        const request =
          command === 'TransactWriteItems'
            ? `${command} ${items.map((item) => `${item.table}${describeKey(item.input)}`).join(',')}`
            : input.TableName === undefined
              ? `${command} stream`
              : `${command} ${table}${describeKey(input)}`;
        const call = callTag.getStore();
        const send = async () => {
          const exchange = exchanges && {
            step: running.scheduler.steps - 1,
            actor: running.actor.name,
            request,
            command,
            input: plain(input),
          };
          let output: Awaited<ReturnType<typeof next>>;
          try {
            output = await next(args);
          } catch (error) {
            exchanges?.push({ ...exchange!, outcome: { error: errorOf(error) } });
            throw error;
          }
          exchanges?.push({ ...exchange!, outcome: { output: plain(output.output, ['$metadata']) } });
          for (const item of items) writes.push({ actor: running.actor.name, call, ...item, at: Date.now() });
          return output;
        };
        return running.scheduler.point(running.actor, request, send);
      },
    { step: 'initialize', name: 'exploreSchedulingPoint', priority: 'high' },
  );
}

/** Options of a world. */
export interface ExploreWorldOptions {
  /** Keep every request an actor sends and its outcome in `exchanges`. @default false */
  readonly record?: boolean;
}

/** One request an actor sent (each time it was applied: twice for a `duplicate`) and what came back. */
export interface Exchange {
  /** The step of its scheduler (the schedule's, or quiescence's for an actor named `…-q`). */
  readonly step: number;
  readonly actor: string;
  /** As the trace shows it (`PutItem idempotency refund#…`). */
  readonly request: string;
  readonly command: string;
  readonly input: unknown;
  readonly outcome:
    | { readonly output: unknown }
    | { readonly error: { name: string; item?: unknown; reasons?: unknown } };
}

/** A value as plain JSON (dates as ISO text, bytes as base64), `drop`ped keys left out. */
function plain(value: unknown, drop: readonly string[] = []): unknown {
  return JSON.parse(
    JSON.stringify(value, function replace(this: unknown, key, current) {
      if (drop.includes(key)) return undefined;
      if (current instanceof Uint8Array) return Buffer.from(current).toString('base64');
      if (current instanceof Set) return [...current];
      const raw = (this as Record<string, unknown>)[key];
      return raw instanceof Date ? raw.toISOString() : current;
    }),
  );
}

/** What a refused request said: the error's name, and the item a failed condition returned. */
function errorOf(error: unknown): { name: string; item?: unknown; reasons?: unknown } {
  const { name, Item, CancellationReasons } = error as { name: string; Item?: unknown; CancellationReasons?: unknown };
  return {
    name,
    ...(Item === undefined ? {} : { item: plain(Item) }),
    ...(CancellationReasons === undefined ? {} : { reasons: plain(CancellationReasons) }),
  };
}

/** A short, readable key for the trace. */
function describeKey(input: Record<string, unknown>): string {
  const key = (input.Key ?? input.Item) as Record<string, unknown> | undefined;
  if (!key) return '';
  const first = Object.entries(key).find(([name]) =>
    ['id', 'invoice_id', 'message_id', 'provider_key', 'ticket_key'].includes(name),
  );
  if (!first) return '';
  const value = first[1] as { S?: string } | string;
  const text = typeof value === 'string' ? value : (value?.S ?? '');
  return ` ${text.length > 28 ? `${text.slice(0, 12)}…${text.slice(-10)}` : text}`;
}
