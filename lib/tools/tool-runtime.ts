import type { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ToolRuntime } from '../idempotency';
import { createCallMetrics } from '../observability/metrics';
import { IDEMPOTENCY_ATTRIBUTES, tableName } from '../store/tables';

/**
 * The idempotency runtime over the services' client and logger, on this app's table layout, counting
 * every call's outcome (CloudWatch embedded metrics) unless `POWERTOOLS_METRICS_DISABLED` is `true`.
 */
export function createToolRuntime(
  services: { readonly client: DynamoDBClient; readonly logger: Logger },
  env: NodeJS.ProcessEnv = process.env,
): ToolRuntime {
  return new ToolRuntime({
    client: services.client,
    tableName: tableName('idempotency', env),
    attributes: IDEMPOTENCY_ATTRIBUTES,
    logger: services.logger,
    ...(env.POWERTOOLS_METRICS_DISABLED?.toLowerCase() === 'true'
      ? {}
      : { onOutcome: createCallMetrics(env.POWERTOOLS_SERVICE_NAME || 'retrysafe') }),
  });
}
