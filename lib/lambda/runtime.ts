import type { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ToolRuntime, type ToolRuntimeOptions } from '../idempotency';
import { createCallLog } from '../observability/call-log';
import { timeLeftForStoreCall } from '../store/deadline';
import { idempotencyTableName } from '../store/tables';

/**
 * The idempotency runtime over the services' client and logger, on this app's table layout, logging every
 * call in one line that also carries its CloudWatch embedded metrics, unless `POWERTOOLS_METRICS_DISABLED`
 * is `true` (then the line alone). `options.attach`: how a duplicate waits for a live attempt of its call
 * (@default the runtime's: up to 2 s).
 */
export function createToolRuntime(
  services: { readonly client: DynamoDBClient; readonly logger: Logger },
  env: NodeJS.ProcessEnv = process.env,
  options: Pick<ToolRuntimeOptions, 'attach'> = {},
): ToolRuntime {
  return new ToolRuntime({
    ...options,
    client: services.client,
    tableName: idempotencyTableName(env),
    logger: services.logger,
    // The invocation's deadline bounds the store client's requests: a call cut off by it ran out of time.
    storeTimeLeft: timeLeftForStoreCall,
    onOutcome: createCallLog(services.logger, {
      serviceName: env.POWERTOOLS_SERVICE_NAME || 'retrysafe',
      metrics: env.POWERTOOLS_METRICS_DISABLED?.toLowerCase() !== 'true',
    }),
  });
}
