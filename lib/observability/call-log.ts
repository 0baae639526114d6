import { createHash } from 'node:crypto';
import type { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { CallContext, CallOutcome } from '../idempotency';
import { outcomeLabel } from './metrics';
import { METRICS_NAMESPACE } from './names';

/** The log levels at which the call's INFO line is written. */
const LOGS_INFO = new Set(['TRACE', 'DEBUG', 'INFO']);

/** A client key as it may be logged: a short hash, never the key itself. */
export function keyHash(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

/**
 * Every call's one log line, written where the runtime settles it (REST, MCP and the completer alike):
 * tool, tenant, transport, outcome, latency and a hash of the key — never the arguments — and, unless
 * metrics are off, the call's CloudWatch embedded metrics in the same line (Powertools Metrics' own
 * serialization: `calls` and `latency` by service, tool and outcome; the tenant is a field, never a
 * dimension). One stdout write per call instead of a log line and an EMF line. The `service` dimension's
 * value is the Logger's own `service` field: `logger` must be named `options.serviceName` (both come from
 * `POWERTOOLS_SERVICE_NAME` in `createToolRuntime`).
 */
export function createCallLog(
  logger: Logger,
  options: { readonly serviceName: string; readonly metrics: boolean },
): (outcome: CallOutcome, call: CallContext) => void {
  const metrics = options.metrics
    ? new Metrics({ namespace: METRICS_NAMESPACE, serviceName: options.serviceName })
    : undefined;
  return function logCall(outcome, call) {
    const label = outcomeLabel(outcome);
    const fields = {
      tool: outcome.tool,
      tenant: call.tenant,
      transport: call.transport,
      outcome: label,
      key_hash: call.key === undefined ? undefined : keyHash(call.key),
    };
    if (!metrics) {
      logger.info('tool call', { ...fields, latency: outcome.latencyMs });
      return;
    }
    metrics.addDimensions({ tool: outcome.tool, outcome: label });
    metrics.addMetric('calls', MetricUnit.Count, 1);
    metrics.addMetric('latency', MetricUnit.Milliseconds, outcome.latencyMs);
    // A log level above INFO must not silence the metrics (alarms read them): then they go out alone.
    if (!LOGS_INFO.has(logger.getLevelName())) {
      metrics.publishStoredMetrics();
      return;
    }
    try {
      // `service` is the Logger's own field (a reserved key it would warn about on every call, on a line of
      // its own): the line already carries it, and the EMF `service` dimension reads that value.
      const { service: _sameAsTheLoggers, ...emf } = metrics.serializeMetrics() as Record<string, unknown>;
      logger.info('tool call', { ...fields, ...emf });
    } finally {
      metrics.clearMetrics();
      metrics.clearDimensions();
    }
  };
}
