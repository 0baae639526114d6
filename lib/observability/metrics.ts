import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { CallOutcome, SweepReport } from '../idempotency';
import { METRICS_NAMESPACE, type OutcomeLabel } from './names';

/** The outcome a call is counted under: a replay is split by what answered it. */
export function outcomeLabel({ outcome, replay }: Pick<CallOutcome, 'outcome' | 'replay'>): OutcomeLabel {
  return outcome === 'replayed' ? `replayed_${replay ?? 'client_key'}` : outcome;
}

/**
 * One count per call outcome, with its latency, as CloudWatch embedded-metric-format lines (Powertools
 * Metrics: no API call; on Lambda the log line is the metric; locally it is printed). Dimensions are the
 * tool and the outcome — never the tenant, whose cardinality has no bound (it stays in the log line).
 */
export function createCallMetrics(serviceName: string): (outcome: CallOutcome) => void {
  const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName });
  return function recordCall(call) {
    metrics.addDimensions({ tool: call.tool, outcome: outcomeLabel(call) });
    metrics.addMetric('calls', MetricUnit.Count, 1);
    metrics.addMetric('latency', MetricUnit.Milliseconds, call.latencyMs);
    metrics.publishStoredMetrics();
  };
}

/** A completer sweep's figures: work it found abandoned and finished. */
export function createSweepMetrics(serviceName: string): (report: SweepReport) => void {
  const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName });
  return function recordSweep(report) {
    metrics.addMetric('abandoned_found', MetricUnit.Count, report.abandonedFound);
    metrics.addMetric('completed_by_sweep', MetricUnit.Count, report.completedBySweep);
    metrics.publishStoredMetrics();
  };
}
