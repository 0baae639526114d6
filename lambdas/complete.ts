import type { Context, SQSBatchResponse } from 'aws-lambda';
import { completerTrigger, createCompleter, recheckBatch, recheckFigures, streamFigures } from '../lib/admin/completer';
import { createSqsRecheckQueue } from '../lib/admin/recheck-queue';
import { createCompleterMetrics } from '../lib/observability/metrics';
import { withInvocationDeadline } from '../lib/store/deadline';
import { TOOLS } from '../lib/tools/registry';
import { createToolRuntime } from '../lib/tools/tool-runtime';
import { services, tracer } from './shared/process';

const recordCompleter = createCompleterMetrics(process.env.POWERTOOLS_SERVICE_NAME || 'retrysafe');
const queue = createSqsRecheckQueue(process.env);
tracer?.captureAWSv3Client(queue.sqs);
const completer = createCompleter({ services, runtime: createToolRuntime(services), tools: TOOLS, queue });

/**
 * Two triggers, one function. The idempotency table's stream: calls still in flight at the end of the
 * batch get a delayed recheck; an error fails the batch, which the mapping retries and bisects. The
 * recheck queue: each recheck finishes its call if it was abandoned; the messages that failed are
 * returned, and SQS delivers only those again.
 */
export async function handler(event: unknown, context: Context): Promise<SQSBatchResponse | undefined> {
  const trigger = completerTrigger(event);
  // Every DynamoDB call is bounded by the invocation's deadline, as in the API's handlers.
  return withInvocationDeadline(context, async function complete() {
    if (trigger.source === 'rechecks') {
      const report = await recheckBatch(completer, trigger.records, context, services.logger);
      services.logger.info('completer rechecks', { ...report.outcomes, failed: report.failedMessageIds.length });
      recordCompleter(recheckFigures(report));
      return { batchItemFailures: report.failedMessageIds.map((itemIdentifier) => ({ itemIdentifier })) };
    }
    const report = await completer.onStream(trigger.records);
    services.logger.info('completer stream batch', { ...report });
    recordCompleter(streamFigures(report));
    return undefined;
  });
}
