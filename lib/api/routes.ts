/**
 * The HTTP API's routes: the one list the local server and the CDK stack both build from. Plain data;
 * `lambda` names the entry point `lambdas/<lambda>.ts`.
 */
export interface RouteDefinition {
  readonly method: 'GET' | 'POST';
  /** API Gateway route path, with `{param}` placeholders. */
  readonly path: string;
  readonly lambda: string;
  /** Whether the JWT authorizer guards the route. */
  readonly auth: boolean;
}

/** The tools, by name, in the order `GET /tools` lists them. */
export const TOOL_NAMES = ['create_invoice', 'refund', 'create_ticket', 'close_ticket', 'send_email'] as const;

export const ROUTES: readonly RouteDefinition[] = [
  { method: 'GET', path: '/health', lambda: 'health', auth: false },
  { method: 'GET', path: '/tools', lambda: 'list_tools', auth: true },
  ...TOOL_NAMES.map((name) => ({ method: 'POST' as const, path: `/tools/${name}`, lambda: name, auth: true })),
  { method: 'GET', path: '/tools/{tool}/operations/{key}', lambda: 'get_operation', auth: true },
  { method: 'GET', path: '/invoices/{invoice_id}', lambda: 'get_invoice', auth: true },
  { method: 'GET', path: '/tickets/{ticket_key}', lambda: 'get_ticket', auth: true },
];

/** What answers a request no route matches (an unknown tool included): a JSON 404. */
export const DEFAULT_ROUTE_LAMBDA = 'not_found';
