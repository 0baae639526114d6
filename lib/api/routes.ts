import type { TableSchema } from '../store/tables';
import type { DynamoAction, FunctionAccess, TableAccess } from './access';
import { LIGHT_ROUTE_THROTTLE, MCP_ROUTE_THROTTLE, type RouteThrottle } from './throttle';

/** A tool as its route and its function's grants need it: its name and the tables its code uses. */
export interface RoutedTool {
  readonly name: string;
  readonly access: TableAccess;
}

/**
 * The HTTP API's routes and entry points, derived from a list of tools (an app's, or a test's) and
 * an app's own reads: the local server, the construct and the OpenAPI document all build from these. Plain data; an entry `name` is the
 * Lambda entry `lambdas/<name>.ts`.
 */
export interface RouteDefinition<E extends string = string> {
  readonly method: 'GET' | 'POST' | 'DELETE';
  /** API Gateway route path, with `{param}` placeholders. */
  readonly path: string;
  readonly entry: E;
  /**
   * Who checks the token: API Gateway's JWT authorizer (`gateway`: a request without a valid token is
   * answered 401 before any function runs), or nobody (`public`).
   */
  readonly auth: 'gateway' | 'public';
  /**
   * The route's own bucket at API Gateway (`lib/api/throttle.ts`).
   * @default STAGE_THROTTLE (the stage's default route settings)
   */
  readonly throttle?: RouteThrottle;
}

/**
 * A read of an app's own data as a route: `GET path`, served by the entry point `name`, with the tables
 * its code reads. A read module (`defineReadModule`) is one; every app has `get_operation` besides.
 */
export interface ReadRoute<N extends string = string> {
  readonly name: N;
  /** API Gateway route path, with `{param}` placeholders. */
  readonly path: string;
  readonly access: TableAccess;
}

/** The operations poll: it reads the idempotency table. */
const OPERATION_ACCESS = { idempotencyTable: 'read' } as const satisfies FunctionAccess;

/**
 * The entry points every app has besides its tools and its reads, each with exactly the access its code
 * needs (`mcp`: see `apiEntries`).
 */
export const API_ENTRIES = {
  health: {},
  list_tools: {},
  get_operation: OPERATION_ACCESS,
  not_found: {},
  mcp: {},
  openapi: {},
} as const satisfies Record<string, FunctionAccess>;

export type ApiEntryName = keyof typeof API_ENTRIES;
/** Every entry point of an API serving the tools `T` and the reads `R`. */
export type EntryName<T extends RoutedTool, R extends string = never> = ApiEntryName | R | T['name'];

/** retrysafe's entry points that no route reaches: the completer and tenant erase. */
const JOB_ENTRY_NAMES: readonly string[] = ['complete', 'erase'];

/**
 * Every problem of the names of an app's tools and reads, each naming the name: one that two of them
 * have (each gets one function, one route and one MCP tool), or the name of one of retrysafe's own entry
 * points (`get_operation`, `mcp`, `complete`, …), whose function, route or MCP tool it would take.
 */
export function entryNameProblems(names: readonly string[]): string[] {
  const problems: string[] = [];
  const counts = new Map<string, number>();
  for (const name of names) counts.set(name, (counts.get(name) ?? 0) + 1);
  for (const [name, count] of counts) {
    if (count > 1) problems.push(`${name}: ${count} tools or reads have this name`);
    if (Object.hasOwn(API_ENTRIES, name) || JOB_ENTRY_NAMES.includes(name)) {
      problems.push(`${name}: a tool or read cannot be named like one of retrysafe's own entry points`);
    }
  }
  return problems;
}

/** A route path as API Gateway matches it: the names of its `{param}`s do not tell two routes apart. */
function routeShape(path: string): string {
  return path.replace(/\{[^}]*\}/g, '{}');
}

/**
 * Every problem of where the reads' routes are, each naming the read: a read at a path of the API's own
 * or under one (`/health`, `/tools` — every tool's `POST /tools/<name>` is there —, `/mcp`,
 * `/openapi.json`, `/.well-known/oauth-protected-resource`), or at the route of another read. Found up
 * front, by the config and the construct: else they surface as a clash of construct ids at synth, or a
 * route that answers something else.
 */
export function readRouteProblems(reads: readonly Pick<ReadRoute, 'name' | 'path'>[]): string[] {
  const own = [...new Set(apiRoutes([]).map((route) => routeShape(route.path)))];
  const problems: string[] = [];
  const taken = new Map<string, string>();
  for (const read of reads) {
    const shape = routeShape(read.path);
    const under = own.find((path) => shape === path || shape.startsWith(`${path}/`));
    if (under === shape) problems.push(`reads.${read.name}.path: ${read.path} is a path of retrysafe's own API`);
    else if (under)
      problems.push(`reads.${read.name}.path: ${read.path} is under ${under}, a path of retrysafe's own API`);
    const other = taken.get(shape);
    if (other === undefined) taken.set(shape, read.name);
    else problems.push(`reads.${read.name}.path: GET ${read.path} is already the route of reads.${other}`);
  }
  return problems;
}

/** What answers a request no route matches (an unknown tool included): a JSON 404. */
export const DEFAULT_ROUTE_ENTRY = 'not_found' satisfies ApiEntryName;

/**
 * How long an invocation may run: the deployed functions' timeout, the local server's per-request
 * deadline, and so the longest in-progress lock a claim can hold.
 */
export const INVOCATION_TIMEOUT_SECONDS = 10;

/** The routes of an API serving `tools` and `reads`, in the order `GET /tools` lists them. */
export function apiRoutes<T extends RoutedTool, R extends string = never>(
  tools: readonly T[],
  reads: readonly ReadRoute<R>[] = [],
): readonly RouteDefinition<EntryName<T, R>>[] {
  return [
    { method: 'GET', path: '/health', entry: 'health', auth: 'public', throttle: LIGHT_ROUTE_THROTTLE },
    { method: 'GET', path: '/tools', entry: 'list_tools', auth: 'gateway' },
    ...tools.map((tool) => ({
      method: 'POST' as const,
      path: `/tools/${tool.name}`,
      entry: tool.name,
      auth: 'gateway' as const,
    })),
    { method: 'GET', path: '/tools/{tool}/operations/{key}', entry: 'get_operation', auth: 'gateway' },
    ...reads.map((read) => ({ method: 'GET' as const, path: read.path, entry: read.name, auth: 'gateway' as const })),
    // MCP: behind the JWT authorizer, so a request without a valid token never runs (nor waits for) the
    // MCP function; clients find the authorization server at the public RFC 9728 metadata (MCP
    // 2025-11-25: from the challenge's resource_metadata, else at these well-known paths).
    { method: 'POST', path: '/mcp', entry: 'mcp', auth: 'gateway', throttle: MCP_ROUTE_THROTTLE },
    { method: 'GET', path: '/mcp', entry: 'mcp', auth: 'gateway', throttle: LIGHT_ROUTE_THROTTLE },
    { method: 'DELETE', path: '/mcp', entry: 'mcp', auth: 'gateway', throttle: LIGHT_ROUTE_THROTTLE },
    {
      method: 'GET',
      path: '/.well-known/oauth-protected-resource',
      entry: 'mcp',
      auth: 'public',
      throttle: LIGHT_ROUTE_THROTTLE,
    },
    {
      method: 'GET',
      path: '/.well-known/oauth-protected-resource/mcp',
      entry: 'mcp',
      auth: 'public',
      throttle: LIGHT_ROUTE_THROTTLE,
    },
    // The OpenAPI document: public, as importers fetch it without a token; it names no tenant's data.
    { method: 'GET', path: '/openapi.json', entry: 'openapi', auth: 'public', throttle: LIGHT_ROUTE_THROTTLE },
  ];
}

/** Every entry point of an API serving `tools` and `reads`, with the access its code needs: least privilege. */
export function apiEntries<T extends RoutedTool, R extends string = never>(
  tools: readonly T[],
  reads: readonly ReadRoute<R>[] = [],
): Readonly<Record<EntryName<T, R>, FunctionAccess>> {
  const entries: Record<string, FunctionAccess> = { ...API_ENTRIES };
  for (const read of reads) entries[read.name] = { tables: read.access };
  for (const tool of tools) entries[tool.name] = { idempotencyTable: 'claims', tables: tool.access };
  // The MCP endpoint serves every tool and every read: the union of their access, nothing more.
  entries.mcp = {
    idempotencyTable: 'claims',
    tables: unionOf([...tools.map((tool) => tool.access), ...reads.map((read) => read.access)]),
  };
  return entries as Record<EntryName<T, R>, FunctionAccess>;
}

/**
 * What tenant erase sends to the app's own tables (`includeDomain`), derived from their schemas: for each
 * table with a `tenantAttribute` (and not `keptByErase`), DeleteItem and the search that finds the
 * tenant's items — Query when the tenant is the partition key, else Scan. The construct's `eraseAccess`.
 */
export function eraseAccessOf(tables: Readonly<Record<string, TableSchema>>): TableAccess {
  const access: Record<string, readonly DynamoAction[]> = {};
  for (const [name, schema] of Object.entries(tables)) {
    if (schema.tenantAttribute === undefined || schema.keptByErase !== undefined) continue;
    const search = schema.tenantAttribute === schema.partitionKey.name ? 'dynamodb:Query' : 'dynamodb:Scan';
    access[name] = ['dynamodb:DeleteItem', search];
  }
  return access;
}

/**
 * The completer's DynamoDB access: the idempotency table's claims (a recheck reads the record, a re-run
 * takes over its claim) and every tool's tables. Its triggers' grants (the stream, the queues) come with
 * `CompleterTriggers`.
 */
export function completerAccess(tools: readonly RoutedTool[]): FunctionAccess {
  return { idempotencyTable: 'claims', tables: unionOf(tools.map((tool) => tool.access)) };
}

/** Every action on every table that any of `accesses` names, sorted. */
function unionOf(accesses: readonly TableAccess[]): TableAccess {
  const union = new Map<string, Set<DynamoAction>>();
  for (const access of accesses) {
    for (const [table, actions] of Object.entries(access) as Array<[string, readonly DynamoAction[]]>) {
      union.set(table, new Set([...(union.get(table) ?? []), ...actions]));
    }
  }
  return Object.fromEntries([...union].map(([table, actions]) => [table, [...actions].sort()]));
}

export type { FunctionAccess } from './access';
