import { ToolRuntime } from './idempotency/runtime';
import { type Services, services } from './services';
import { tableName } from './store/tables';

/** The idempotency runtime over the services' client, logging through their logger. */
export function createToolRuntime(from: Services, env: NodeJS.ProcessEnv = process.env): ToolRuntime {
  return new ToolRuntime({ client: from.client, tableName: tableName('idempotency', env), logger: from.logger });
}

let shared: ToolRuntime | undefined;

/** The process-wide runtime, created on first use. */
export function runtime(): ToolRuntime {
  shared ??= createToolRuntime(services());
  return shared;
}
