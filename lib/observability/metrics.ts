import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { CallOutcome } from '../idempotency';
import { COMPLETER_METRICS, type CompleterFigures, METRICS_NAMESPACE, type OutcomeLabel } from './names';

/** The outcome a call is counted under: a replay is split by what answered it. */
export function outcomeLabel({ outcome, replay }: Pick<CallOutcome, 'outcome' | 'replay'>): OutcomeLabel {
  return outcome === 'replayed' ? `replayed_${replay ?? 'client_key'}` : outcome;
}

/**
 * One invocation of the completer, counted: rechecks scheduled, calls finished, rechecks failed, calls
 * given up on ({@link COMPLETER_METRICS}). Every figure is written, zeros included, so an alarm reads a
 * quiet period as zero rather than as missing data.
 */
export function createCompleterMetrics(serviceName: string): (figures: CompleterFigures) => void {
  const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName });
  return function recordCompleter(figures) {
    for (const figure of Object.keys(COMPLETER_METRICS) as Array<keyof typeof COMPLETER_METRICS>) {
      metrics.addMetric(COMPLETER_METRICS[figure], MetricUnit.Count, figures[figure]);
    }
    metrics.publishStoredMetrics();
  };
}
