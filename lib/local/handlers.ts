import type { Logger } from '@aws-lambda-powertools/logger';
import type { ApiEntryName, EntryName } from '../api/routes';
import type { TokenVerifier } from '../auth/token-claims';
import type { LambdaHandler } from '../http/boundary';
import { listToolsHandler } from '../http/list-tools';
import { openApiHandler } from '../http/openapi';
import { getOperationHandler, readHandler } from '../http/reads';
import { healthHandler, notFoundHandler } from '../http/store-free';
import { toolHandler } from '../http/write';
import type { ToolRuntime } from '../idempotency';
import { mcpHandler } from '../mcp/http';
import { mcpTools } from '../mcp/tools';
import type { AnyReadModule } from '../tools/read-module';
import type { AnyToolModule } from '../tools/tool-module';

/** What a whole API is built from: the app's tools over its services, its reads, the runtime. */
export interface ApiComposition<T extends AnyToolModule, R extends AnyReadModule = AnyReadModule> {
  /** What the tools are bound to (the app's composed services). */
  readonly services: unknown;
  readonly logger: Logger;
  readonly runtime: ToolRuntime;
  readonly tools: readonly T[];
  /**
   * The app's own reads (`defineReadModule`), over REST (`GET <path>`) and MCP, besides `get_operation`;
   * bound to `services` like the tools.
   * @default none
   */
  readonly reads?: readonly R[];
  /** Verifies bearer tokens where the function checks them itself (the MCP endpoint). */
  readonly verifyToken: TokenVerifier;
  /** The JWT issuer, named as the authorization server in the MCP resource metadata. */
  readonly issuer: string;
}

/**
 * Every entry point's handler for one process (the local server): the same handler factories each
 * Lambda entry calls, over one set of services. The type requires a handler per entry point.
 */
export function createHandlers<T extends AnyToolModule, R extends AnyReadModule = never>({
  services,
  logger,
  runtime,
  tools,
  reads = [],
  verifyToken,
  issuer,
}: ApiComposition<T, R>): Readonly<Record<EntryName<T, R['name']>, LambdaHandler>> {
  const api: Record<ApiEntryName, LambdaHandler> = {
    health: healthHandler(),
    list_tools: listToolsHandler(tools, logger),
    get_operation: getOperationHandler({ runtime, toolNames: tools.map((tool) => tool.name) }, logger),
    not_found: notFoundHandler(),
    openapi: openApiHandler(tools, reads),
    mcp: mcpHandler({ tools: mcpTools(tools, services, runtime, reads), verifyToken, issuer, logger }),
  };
  const served = Object.fromEntries(
    reads.map((read): [string, LambdaHandler] => [read.name, readHandler(read, services, logger)]),
  ) as Record<R['name'], LambdaHandler>;
  const writes = Object.fromEntries(
    tools.map((tool) => [tool.name, toolHandler(tool, { services, runtime, logger })]),
  ) as unknown as Record<T['name'], LambdaHandler>;
  return { ...api, ...served, ...writes };
}
