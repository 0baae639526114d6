import type { AnyToolModule, TableAccess } from '../tools/tool-module';

/**
 * The HTTP API's routes and entry points, derived from a list of tools (the registry, or a test's):
 * the local server and the CDK stack both build from these. Plain data; an entry `name` is the
 * Lambda entry `lambdas/<name>.ts`.
 */
export interface RouteDefinition<E extends string = string> {
  readonly method: 'GET' | 'POST';
  /** API Gateway route path, with `{param}` placeholders. */
  readonly path: string;
  readonly entry: E;
  /** Whether the JWT authorizer guards the route. */
  readonly auth: boolean;
}

/** What one entry point's code sends to DynamoDB: its key-store access and its domain tables' actions. */
export interface FunctionAccess {
  /** `claims`: what the idempotency runtime needs to claim, read, complete and release; `read`: GetItem. */
  readonly keyStore?: 'claims' | 'read';
  readonly tables?: TableAccess;
}

/** The entry points that are not tools, each with exactly the access its code needs. */
export const API_ENTRIES = {
  health: {},
  list_tools: {},
  get_operation: { keyStore: 'read' },
  get_invoice: { tables: { invoices: ['dynamodb:GetItem'] } },
  get_ticket: { tables: { tickets: ['dynamodb:GetItem'] } },
  not_found: {},
} as const satisfies Record<string, FunctionAccess>;

export type ApiEntryName = keyof typeof API_ENTRIES;
/** Every entry point of an API serving the tools `T`. */
export type EntryName<T extends AnyToolModule> = ApiEntryName | T['name'];

/** What answers a request no route matches (an unknown tool included): a JSON 404. */
export const DEFAULT_ROUTE_ENTRY = 'not_found' satisfies ApiEntryName;

/**
 * How long an invocation may run: the deployed functions' timeout, the local server's per-request
 * deadline, and so the longest in-progress lock a claim can hold.
 */
export const INVOCATION_TIMEOUT_SECONDS = 10;

/** The routes of an API serving `tools`, in the order `GET /tools` lists them. */
export function routesFor<T extends AnyToolModule>(tools: readonly T[]): readonly RouteDefinition<EntryName<T>>[] {
  return [
    { method: 'GET', path: '/health', entry: 'health', auth: false },
    { method: 'GET', path: '/tools', entry: 'list_tools', auth: true },
    ...tools.map((tool) => ({ method: 'POST' as const, path: `/tools/${tool.name}`, entry: tool.name, auth: true })),
    { method: 'GET', path: '/tools/{tool}/operations/{key}', entry: 'get_operation', auth: true },
    { method: 'GET', path: '/invoices/{invoice_id}', entry: 'get_invoice', auth: true },
    { method: 'GET', path: '/tickets/{ticket_key}', entry: 'get_ticket', auth: true },
  ];
}

/** Every entry point of an API serving `tools`, with the access its code needs: least privilege. */
export function entriesFor<T extends AnyToolModule>(
  tools: readonly T[],
): Readonly<Record<EntryName<T>, FunctionAccess>> {
  const entries: Record<string, FunctionAccess> = { ...API_ENTRIES };
  for (const tool of tools) entries[tool.name] = { keyStore: 'claims', tables: tool.access };
  return entries as Record<EntryName<T>, FunctionAccess>;
}
