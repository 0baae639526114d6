import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2WithJWTAuthorizer, Context } from 'aws-lambda';
import { READS, type ReadName } from '../../app/reads';
import { createServices, type Services } from '../../app/services';
import { TABLES, type TableId, tableName } from '../../app/tables';
import type { EntryName } from '../../lib/api/routes';
import { createToolRuntime } from '../../lib/lambda/runtime';
import { createHandlers } from '../../lib/local/handlers';
import type { AnyToolModule } from '../../lib/tools/tool-module';
import { deadline, newTenant } from './world';

/** The DynamoDB actions an entry point sent, per table id, each list sorted. */
export type ObservedAccess = Partial<Record<TableId | 'idempotency', string[]>>;

/** What an exercise may do: call any entry point as an authenticated caller, and seed data beforehand. */
export interface Exercise {
  readonly tenant: string;
  /** The services behind the handlers, for seeding (what they send while seeding is not recorded). */
  readonly services: Services;
  call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ statusCode: number; body: string }>;
  /** Everything sent from here on is recorded. */
  record(): void;
}

/**
 * Runs each entry point's exercise against DynamoDB Local through the real handlers and records, with
 * a client middleware, which DynamoDB actions it sent to which table — what the code really does, to
 * compare with the grants the stack gives.
 */
export async function observeAccess<T extends AnyToolModule>(
  tools: readonly T[],
  exercises: Readonly<Record<EntryName<T, ReadName>, (exercise: Exercise) => Promise<void>>>,
): Promise<Record<EntryName<T, ReadName>, ObservedAccess>> {
  const services = createServices(process.env);
  let tenant = '';
  const handlers = createHandlers({
    services,
    logger: services.logger,
    reads: READS,
    runtime: createToolRuntime(services),
    tools,
    // The MCP endpoint checks tokens itself: here every token names the exercise's caller.
    verifyToken: async () => ({ tenant_id: tenant, sub: 'ada' }),
    issuer: 'https://issuer.test',
  });
  const tableIds = new Map(
    ([...Object.keys(TABLES), 'idempotency'] as Array<TableId | 'idempotency'>).map((id) => [tableName(id), id]),
  );
  let recording: Map<TableId | 'idempotency', Set<string>> | undefined;
  services.client.middlewareStack.add(
    (next, context) => async (args) => {
      const table = tableIds.get((args.input as { TableName?: string }).TableName ?? '');
      if (recording && table && context.commandName) {
        const actions = recording.get(table) ?? new Set();
        actions.add(`dynamodb:${context.commandName.replace(/Command$/, '')}`);
        recording.set(table, actions);
      }
      return next(args);
    },
    { step: 'initialize', name: 'observeAccess' },
  );

  const observed = {} as Record<EntryName<T, ReadName>, ObservedAccess>;
  try {
    for (const [entry, exercise] of Object.entries(exercises) as Array<
      [EntryName<T, ReadName>, (e: Exercise) => Promise<void>]
    >) {
      tenant = newTenant(`access-${entry}`);
      const handler = handlers[entry];
      const sent = new Map<TableId, Set<string>>();
      recording = undefined;
      await exercise({
        tenant,
        services,
        record: () => {
          recording = sent;
        },
        async call(method, path, body) {
          const event = {
            version: '2.0',
            routeKey: `${method} ${path}`,
            rawPath: path,
            rawQueryString: '',
            headers: {
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
              authorization: 'Bearer test',
            },
            pathParameters: pathParametersOf(path),
            ...(body === undefined ? {} : { body: JSON.stringify(body) }),
            isBase64Encoded: false,
            requestContext: {
              http: { method, path },
              domainName: 'localhost',
              requestId: randomUUID(),
              authorizer: { jwt: { claims: { tenant_id: tenant, sub: 'ada' }, scopes: [] } },
            },
          } as unknown as APIGatewayProxyEventV2WithJWTAuthorizer;
          return handler(event, deadline() as unknown as Context);
        },
      });
      recording = undefined;
      observed[entry] = Object.fromEntries([...sent].map(([table, actions]) => [table, [...actions].sort()]));
    }
  } finally {
    services.client.destroy();
  }
  return observed;
}

/** The path parameters API Gateway would extract, for the parameterised routes the exercises call. */
function pathParametersOf(path: string): Record<string, string> | undefined {
  const operation = /^\/tools\/([^/]+)\/operations\/([^/]+)$/.exec(path);
  if (operation) return { tool: operation[1]!, key: operation[2]! };
  const invoice = /^\/invoices\/([^/]+)$/.exec(path);
  if (invoice) return { invoice_id: invoice[1]! };
  const ticket = /^\/tickets\/([^/]+)$/.exec(path);
  if (ticket) return { ticket_key: ticket[1]! };
  return undefined;
}
