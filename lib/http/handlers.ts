import type { ApiEntryName, EntryName, ExampleReadName } from '../api/routes';
import type { TokenVerifier } from '../auth/token-claims';
import type { ToolRuntime } from '../idempotency';
import { mcpHandler } from '../mcp/http';
import { domainReadTools, mcpTools } from '../mcp/tools';
import type { Services } from '../services';
import type { AnyToolModule } from '../tools/tool-module';
import type { LambdaHandler } from './boundary';
import { listToolsHandler } from './list-tools';
import { openApiHandler } from './openapi';
import { getInvoiceHandler, getOperationHandler, getTicketHandler } from './reads';
import { healthHandler, notFoundHandler } from './store-free';
import { toolHandler } from './write';

/** What a whole API is built from. */
export interface ApiComposition<T extends AnyToolModule> {
  readonly services: Services;
  readonly runtime: ToolRuntime;
  readonly tools: readonly T[];
  /** Verifies bearer tokens where the function checks them itself (the MCP endpoint). */
  readonly verifyToken: TokenVerifier;
  /** The JWT issuer, named as the authorization server in the MCP resource metadata. */
  readonly issuer: string;
}

/**
 * Every entry point's handler for one process (the local server): the same handler factories each
 * `lambdas/<name>.ts` calls, over one set of services. The type requires a handler per entry point.
 */
export function createHandlers<T extends AnyToolModule>({
  services,
  runtime,
  tools,
  verifyToken,
  issuer,
}: ApiComposition<T>): Readonly<Record<EntryName<T>, LambdaHandler>> {
  const api: Record<ApiEntryName | ExampleReadName, LambdaHandler> = {
    health: healthHandler(),
    list_tools: listToolsHandler(tools, services.logger),
    get_operation: getOperationHandler({ runtime, toolNames: tools.map((tool) => tool.name) }, services.logger),
    get_invoice: getInvoiceHandler(services),
    get_ticket: getTicketHandler(services),
    not_found: notFoundHandler(),
    openapi: openApiHandler(tools),
    mcp: mcpHandler({
      tools: mcpTools(tools, services, runtime, domainReadTools(services)),
      verifyToken,
      issuer,
      logger: services.logger,
    }),
  };
  const writes = Object.fromEntries(
    tools.map((tool) => [tool.name, toolHandler(tool, { services, runtime, logger: services.logger })]),
  ) as unknown as Record<T['name'], LambdaHandler>;
  return { ...api, ...writes };
}
