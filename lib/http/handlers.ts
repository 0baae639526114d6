import type { Logger } from '@aws-lambda-powertools/logger';
import { type ApiEntryName, type EntryName, EXAMPLE_READS, type ExampleReadName, type ReadRoute } from '../api/routes';
import type { TokenVerifier } from '../auth/token-claims';
import type { ToolRuntime } from '../idempotency';
import { mcpHandler } from '../mcp/http';
import { domainReadTools, type McpTool, mcpTools } from '../mcp/tools';
import type { Services } from '../services';
import type { AnyToolModule } from '../tools/tool-module';
import type { LambdaHandler } from './boundary';
import { listToolsHandler } from './list-tools';
import { openApiHandler } from './openapi';
import { getInvoiceHandler, getOperationHandler, getTicketHandler } from './reads';
import { healthHandler, notFoundHandler } from './store-free';
import { toolHandler } from './write';

/** A read of an app's own domain as one process serves it: its route, and the handler its entry runs. */
export interface ServedRead<R extends string = string> {
  readonly route: ReadRoute<R>;
  readonly handler: LambdaHandler;
}

/** What a whole API is built from: the app's tools over its services, its reads, the runtime. */
export interface ApiComposition<T extends AnyToolModule, R extends string = string> {
  /** What the tools are bound to (the app's composed services). */
  readonly services: unknown;
  readonly logger: Logger;
  readonly runtime: ToolRuntime;
  readonly tools: readonly T[];
  /**
   * The app's own reads over REST (`GET <path>`), besides `get_operation`.
   * @default none
   */
  readonly reads?: readonly ServedRead<R>[];
  /**
   * The app's own reads over MCP, besides `get_operation`.
   * @default none
   */
  readonly mcpReads?: readonly McpTool[];
  /** Verifies bearer tokens where the function checks them itself (the MCP endpoint). */
  readonly verifyToken: TokenVerifier;
  /** The JWT issuer, named as the authorization server in the MCP resource metadata. */
  readonly issuer: string;
}

/**
 * Every entry point's handler for one process (the local server): the same handler factories each
 * Lambda entry calls, over one set of services. The type requires a handler per entry point.
 */
export function createHandlers<T extends AnyToolModule, R extends string = never>({
  services,
  logger,
  runtime,
  tools,
  reads = [],
  mcpReads = [],
  verifyToken,
  issuer,
}: ApiComposition<T, R>): Readonly<Record<EntryName<T, R>, LambdaHandler>> {
  const api: Record<ApiEntryName, LambdaHandler> = {
    health: healthHandler(),
    list_tools: listToolsHandler(tools, logger),
    get_operation: getOperationHandler({ runtime, toolNames: tools.map((tool) => tool.name) }, logger),
    not_found: notFoundHandler(),
    openapi: openApiHandler(tools),
    mcp: mcpHandler({ tools: mcpTools(tools, services, runtime, mcpReads), verifyToken, issuer, logger }),
  };
  const served = Object.fromEntries(reads.map((read) => [read.route.entry, read.handler])) as Record<R, LambdaHandler>;
  const writes = Object.fromEntries(
    tools.map((tool) => [tool.name, toolHandler(tool, { services, runtime, logger })]),
  ) as unknown as Record<T['name'], LambdaHandler>;
  return { ...api, ...served, ...writes };
}

/** The example app's reads, over REST and MCP, on its services. */
export function exampleReads(services: Services): {
  readonly reads: readonly ServedRead<ExampleReadName>[];
  readonly mcpReads: readonly McpTool[];
} {
  const [invoice, ticket] = EXAMPLE_READS;
  return {
    reads: [
      { route: invoice, handler: getInvoiceHandler(services) },
      { route: ticket, handler: getTicketHandler(services) },
    ],
    mcpReads: domainReadTools(services),
  };
}
