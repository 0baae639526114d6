import type { ApiEntryName, EntryName } from '../api/routes';
import type { ToolRuntime } from '../idempotency';
import type { Services } from '../services';
import type { AnyToolModule } from '../tools/tool-module';
import type { LambdaHandler } from './boundary';
import { listToolsHandler } from './list-tools';
import { getInvoiceHandler, getOperationHandler, getTicketHandler } from './reads';
import { healthHandler, notFoundHandler } from './store-free';
import { toolHandler } from './write';

/** What a whole API is built from. */
export interface ApiComposition<T extends AnyToolModule> {
  readonly services: Services;
  readonly runtime: ToolRuntime;
  readonly tools: readonly T[];
}

/**
 * Every entry point's handler for one process (the local server): the same handler factories each
 * `lambdas/<name>.ts` calls, over one set of services. The type requires a handler per entry point.
 */
export function createHandlers<T extends AnyToolModule>({
  services,
  runtime,
  tools,
}: ApiComposition<T>): Readonly<Record<EntryName<T>, LambdaHandler>> {
  const api: Record<ApiEntryName, LambdaHandler> = {
    health: healthHandler(),
    list_tools: listToolsHandler(tools, services.logger),
    get_operation: getOperationHandler(runtime, services.logger),
    get_invoice: getInvoiceHandler(services),
    get_ticket: getTicketHandler(services),
    not_found: notFoundHandler(),
  };
  const writes = Object.fromEntries(
    tools.map((tool) => [tool.name, toolHandler(tool, { services, runtime, logger: services.logger })]),
  ) as unknown as Record<T['name'], LambdaHandler>;
  return { ...api, ...writes };
}
