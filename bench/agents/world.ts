import { randomBytes } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { paginateScan } from '@aws-sdk/lib-dynamodb';
import type { Invoice } from '../../app/domain/invoices';
import type { OutboxMessage } from '../../app/domain/outbox';
import type { Ticket } from '../../app/domain/tickets';
import type { Movement } from '../../app/payments/provider';
import { type ExampleServices, exampleServices } from '../../app/services';
import { TABLES, tableName } from '../../app/tables';
import { TOOLS } from '../../app/tools';
import { Completer, type ToolRuntime } from '../../lib/idempotency';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import { COMPLETER_DEFAULTS } from '../../lib/infra/defaults';
import { createToolRuntime } from '../../lib/lambda/runtime';
import { completerPass } from '../../lib/local/completer-pass';
import { type DynamoDBLocal, startDynamoDBLocal } from '../../lib/local/dynamodb-local';
import { LocalRecheckQueue } from '../../lib/local/recheck-queue';
import { LocalStreamFeed } from '../../lib/local/stream-feed';
import { createDocumentClient, createDynamoDBClient } from '../../lib/store/client';
import { createTable, createTables } from '../../lib/store/create-tables';
import { currentClock, SimulatedClock, setOutsideClock } from './clock';
import { effect, injectStoreFaults } from './faults';

/** Powertools' own table, as its docs create it: `id` the partition key, `expiration` its TTL. */
export const POWERTOOLS_TABLE = 'bench-powertools-idempotency';

/**
 * The one world every approach is served over: DynamoDB Local (the one in `DYNAMODB_ENDPOINT`, else one
 * started for the run) in a namespace of its own (an access key: DynamoDB Local keeps each key's tables
 * apart), the example's tables and domain stores, the ledger as the payment provider, Powertools' table,
 * and retrysafe's runtime and completer as the stack deploys them.
 */
export async function createBenchWorld() {
  const given = process.env.DYNAMODB_ENDPOINT || undefined;
  const local: DynamoDBLocal | undefined = given ? undefined : await startDynamoDBLocal();
  const endpoint = given ?? local!.endpoint;
  const env: NodeJS.ProcessEnv = { DYNAMODB_ENDPOINT: endpoint, POWERTOOLS_METRICS_DISABLED: 'true' };
  const credentials = { accessKeyId: `bench${randomBytes(6).toString('hex')}`, secretAccessKey: 'bench' };
  const client = createDynamoDBClient(env, { region: 'us-east-1', credentials });
  injectStoreFaults(client);
  await createTables(client, TABLES, env);
  await createTable(client, { partitionKey: { name: 'id', type: 'S' }, ttlAttribute: 'expiration' }, POWERTOOLS_TABLE);
  const documents = createDocumentClient(client);
  const logger = new Logger({ serviceName: 'bench-agents', logLevel: 'SILENT' });
  const domain = exampleServices({ documents, tableName: (id) => tableName(id, env) }, env);
  const services = withEffectSeam(domain);

  // A duplicate's wait for the attempt in its way passes on the intent's simulated clock.
  const runtime = createToolRuntime({ client, logger }, env, {
    attach: {
      async sleep(ms) {
        currentClock()?.advance(ms);
      },
    },
  });
  const tools = Object.fromEntries(TOOLS.map((tool) => [tool.name, tool.bind(services)]));
  const streams = new DynamoDBStreamsClient({ endpoint, region: 'us-east-1', credentials });
  const feed = new LocalStreamFeed(streams, tableName('idempotency', env));

  /**
   * retrysafe's completer, as `retrysafe dev` runs it (the stream, then the rechecks due), until nothing is
   * left: on a clock of its own that starts at `fromMs` and jumps to each next recheck. False if 60
   * passes were not enough.
   */
  async function quiesce(fromMs: number): Promise<boolean> {
    const clock = new SimulatedClock(fromMs);
    setOutsideClock(clock);
    try {
      const queue = new LocalRecheckQueue(() => Date.now(), {
        visibilitySeconds: COMPLETER_DEFAULTS.timeoutSeconds * COMPLETER_DEFAULTS.recheckVisibilityTimeoutFactor,
        maxReceiveCount: COMPLETER_DEFAULTS.recheckMaxReceiveCount,
      });
      const completer = new Completer({
        client,
        runtime: runtime as ToolRuntime,
        tools: Object.values(tools),
        queue,
        tableName: tableName('idempotency', env),
        attributes: DEFAULT_RECORD_ATTRIBUTES,
      });
      for (let pass = 0; pass < 60; pass++) {
        const end = Date.now() + COMPLETER_DEFAULTS.timeoutSeconds * 1000;
        const report = await completerPass(completer, feed, queue, {
          getRemainingTimeInMillis: () => end - Date.now(),
        });
        if (report.recordsRead > 0 || report.rechecks.failedMessageIds.length > 0) continue;
        const next = queue.nextDueAt();
        if (next === undefined) return true;
        clock.nowMs = Math.max(clock.nowMs + 1000, next);
      }
      return false;
    } finally {
      setOutsideClock(undefined);
    }
  }

  /**
   * What every tenant's world holds — its ledger rows, invoices, tickets and outbox messages — from one
   * consistent Scan of each table (the run's namespace holds the bench's tenants only).
   */
  async function worlds(): Promise<ReadonlyMap<string, TenantWorld>> {
    const [movements, invoices, tickets, messages] = await Promise.all([
      scanAll<Movement>(tableName('ledger', env)),
      scanAll<Invoice>(tableName('invoices', env)),
      scanAll<Ticket>(tableName('tickets', env)),
      scanAll<OutboxMessage>(tableName('outbox', env)),
    ]);
    const byTenant = new Map<string, TenantWorld>();
    const of = (tenant: string) => {
      let world = byTenant.get(tenant);
      if (!world) {
        world = { movements: [], invoices: [], tickets: [], messages: [] };
        byTenant.set(tenant, world);
      }
      return world as { [K in keyof TenantWorld]: Array<TenantWorld[K][number]> };
    };
    for (const item of movements) of(item.tenant).movements.push(item);
    for (const item of invoices) of(item.tenant).invoices.push(item);
    for (const item of tickets) of(item.tenant).tickets.push(item);
    for (const item of messages) of(item.tenant).messages.push(item);
    return byTenant;
  }

  async function scanAll<T>(table: string): Promise<T[]> {
    const items: T[] = [];
    for await (const page of paginateScan({ client: documents }, { TableName: table, ConsistentRead: true })) {
      items.push(...((page.Items ?? []) as T[]));
    }
    return items;
  }

  return {
    env,
    logger,
    client,
    documents,
    domain,
    services,
    runtime,
    tools,
    quiesce,
    worlds,
    async destroy() {
      client.destroy();
      streams.destroy();
      await local?.stop();
    },
  };
}

export type BenchWorld = Awaited<ReturnType<typeof createBenchWorld>>;

/** One tenant's tables, read after its intent settled. */
export interface TenantWorld {
  readonly movements: readonly Movement[];
  readonly invoices: readonly Invoice[];
  readonly tickets: readonly Ticket[];
  readonly messages: readonly OutboxMessage[];
}

/**
 * The example's services with each tool's one effect behind the effect seam: the provider's refund, the
 * ticket's write, the email's delivery. Every approach's tools (retrysafe's, bound to these services,
 * and the plain ones in ./plain-tools.ts) reach their effect through it.
 */
function withEffectSeam(domain: ExampleServices): ExampleServices {
  const tickets = Object.create(domain.tickets) as ExampleServices['tickets'];
  tickets.create = (ticket) => effect(() => domain.tickets.create(ticket));
  const outbox = Object.create(domain.outbox) as ExampleServices['outbox'];
  outbox.deliver = (...args) => effect(() => domain.outbox.deliver(...args));
  return {
    ...domain,
    tickets,
    outbox,
    provider: { refund: (request) => effect(() => domain.provider.refund(request)) },
  };
}
