import { ToolRuntime } from '../idempotency';
import { createCallMetrics } from '../observability/metrics';
import type { Services } from '../services';
import { IDEMPOTENCY_ATTRIBUTES, tableName } from '../store/tables';

/**
 * The idempotency runtime over the services' client and logger, on this app's table layout, counting
 * every call's outcome (CloudWatch embedded metrics).
 */
export function createToolRuntime(services: Services, env: NodeJS.ProcessEnv = process.env): ToolRuntime {
  return new ToolRuntime({
    client: services.client,
    tableName: tableName('idempotency', env),
    attributes: IDEMPOTENCY_ATTRIBUTES,
    logger: services.logger,
    onOutcome: createCallMetrics(env.POWERTOOLS_SERVICE_NAME || 'retrysafe'),
  });
}
