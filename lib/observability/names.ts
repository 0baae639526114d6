// Plain data: the metric names the runtime writes and the stack's alarms and dashboard read.

/** The CloudWatch namespace of retrysafe's metrics (the stack's alarms and dashboard read it). */
export const METRICS_NAMESPACE = 'retrysafe';

/** Every outcome a call is counted under (the stack's alarms and dashboard read this list). */
export const OUTCOME_LABELS = [
  'executed',
  'replayed_client_key',
  'replayed_natural_key',
  'replayed_dedupe_window',
  'pending',
  'conflict',
  'invalid_args',
  'not_found',
  'unavailable',
  'internal',
] as const;

export type OutcomeLabel = (typeof OUTCOME_LABELS)[number];
