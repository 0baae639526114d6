import type { Logger } from '@aws-lambda-powertools/logger';
import type { Context, SQSBatchResponse } from 'aws-lambda';
import { completerTrigger, createCompleter, recheckBatch, recheckFigures, streamFigures } from '../admin/completer';
import { createSqsRecheckQueue } from '../admin/recheck-queue';
import type { Completer } from '../idempotency';
import { createCompleterMetrics } from '../observability/metrics';
import type { CompleterFigures } from '../observability/names';
import { withInvocationDeadline } from '../store/deadline';
import { type ComposeServices, createCoreServices, createTracer, type ToolsOver } from './core-services';
import { createToolRuntime } from './runtime';

/**
 * The completer: finishes the calls of `tools` whose worker died. Two triggers, one function — the
 * idempotency table's stream (calls still in flight at the end of a batch get a delayed recheck; an
 * error fails the batch, which the mapping retries and bisects) and the recheck queue (each recheck
 * finishes its call if it was abandoned; the messages that failed are returned, and only those come back).
 */
export function completerEntry<Svc>(
  tools: ToolsOver<NoInfer<Svc>>,
  compose: ComposeServices<Svc>,
  env: NodeJS.ProcessEnv = process.env,
): CompleterHandler {
  const core = createCoreServices(env);
  const tracer = createTracer(env);
  tracer?.captureAWSv3Client(core.client);
  const queue = createSqsRecheckQueue(env);
  tracer?.captureAWSv3Client(queue.sqs);
  const recordCompleter = createCompleterMetrics(env.POWERTOOLS_SERVICE_NAME || 'retrysafe');
  const completer = createCompleter(
    {
      services: { ...compose(core), client: core.client, logger: core.logger },
      runtime: createToolRuntime(core, env),
      tools,
      queue,
    },
    env,
  );
  return completerHandler(completer, core.logger, recordCompleter);
}

/** What the completer's Lambda handler answers: SQS's partial batch response for rechecks, nothing for a stream batch. */
export type CompleterHandler = (event: unknown, context: Context) => Promise<SQSBatchResponse | undefined>;

/**
 * The completer's Lambda handler over a composed completer: which trigger sent the batch, the work bounded
 * by the invocation's deadline, a log line and the completer's figures per batch.
 */
export function completerHandler(
  completer: Completer,
  logger: Logger,
  recordCompleter: (figures: CompleterFigures) => void,
): CompleterHandler {
  return async function complete(event, context) {
    const trigger = completerTrigger(event);
    // Every DynamoDB call is bounded by the invocation's deadline, as in the API's handlers.
    return withInvocationDeadline(context, async function completeBatch() {
      if (trigger.source === 'rechecks') {
        const report = await recheckBatch(completer, trigger.records, context, logger);
        logger.info('completer rechecks', { ...report.outcomes, failed: report.failedMessageIds.length });
        recordCompleter(recheckFigures(report));
        return { batchItemFailures: report.failedMessageIds.map((itemIdentifier) => ({ itemIdentifier })) };
      }
      const report = await completer.onStream(trigger.records);
      logger.info('completer stream batch', { ...report });
      recordCompleter(streamFigures(report));
      return undefined;
    });
  };
}
