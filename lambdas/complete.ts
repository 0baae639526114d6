import { createCompleter } from '../lib/admin/completer';
import { createSqsRecheckQueue } from '../lib/admin/recheck-queue';
import { completerHandler } from '../lib/lambda/completer';
import { createCompleterMetrics } from '../lib/observability/metrics';
import { TOOLS } from '../lib/tools/registry';
import { createToolRuntime } from '../lib/tools/tool-runtime';
import { services, tracer } from './shared/process';

const queue = createSqsRecheckQueue(process.env);
tracer?.captureAWSv3Client(queue.sqs);
const completer = createCompleter({ services, runtime: createToolRuntime(services), tools: TOOLS, queue });

/**
 * Two triggers, one function (the handler `retrysafe/lambda/completer` builds, over this process's
 * services). The idempotency table's stream: calls still in flight at the end of the batch get a delayed
 * recheck; an error fails the batch, which the mapping retries and bisects. The recheck queue: each
 * recheck finishes its call if it was abandoned; the messages that failed are returned, and SQS delivers
 * only those again.
 */
export const handler = completerHandler(
  completer,
  services.logger,
  createCompleterMetrics(process.env.POWERTOOLS_SERVICE_NAME || 'retrysafe'),
);
