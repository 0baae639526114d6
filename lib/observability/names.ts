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
  /** The call outlived its invocation: the caller was answered `timeout` (504) at the deadline. */
  'timeout',
] as const;

export type OutcomeLabel = (typeof OUTCOME_LABELS)[number];

/**
 * The completer's counts (dimension `service` only): rechecks it scheduled (an SQS message each),
 * abandoned calls it finished, rechecks that failed (SQS delivers them again, then its DLQ), and calls it
 * gave up on after too many attempts (alarmed: they wait for a retry with their key).
 */
export const COMPLETER_METRICS = {
  rechecksScheduled: 'rechecks_scheduled',
  callsFinished: 'calls_finished_by_completer',
  rechecksFailed: 'rechecks_failed',
  gaveUp: 'calls_given_up',
} as const;

export type CompleterFigures = Readonly<Record<keyof typeof COMPLETER_METRICS, number>>;
