import type { Context } from 'aws-lambda';
import { createCompleter } from '../lib/admin/completer';
import { createSweepMetrics } from '../lib/observability/metrics';
import { createStreamsClient } from '../lib/store/client';
import { withInvocationDeadline } from '../lib/store/deadline';
import { TOOLS } from '../lib/tools/registry';
import { createToolRuntime } from '../lib/tools/tool-runtime';
import { services } from './shared/process';

const recordSweep = createSweepMetrics(process.env.POWERTOOLS_SERVICE_NAME || 'retrysafe');
const completer = createCompleter({
  services,
  runtime: createToolRuntime(services),
  tools: TOOLS,
  streams: createStreamsClient(process.env),
});

/** Every minute (EventBridge): finishes calls whose worker died, found through the idempotency table's stream. */
export async function handler(_event: unknown, context: Context) {
  // Every DynamoDB call of the sweep is bounded by the invocation's deadline, as in the API's handlers.
  const report = await withInvocationDeadline(context, () => completer.sweep(context));
  services.logger.info('completer sweep', { ...report });
  recordSweep(report);
  return report;
}
