/**
 * Backoff between the completer's re-runs of one call, by attempt: 30 s, 60 s, … at most 15 min (SQS's
 * longest delay). The completer schedules by it; an abandoned call's MCP task says when to poll by it.
 */
export function backoffSeconds(attempt: number): number {
  return Math.min(900, 30 * 2 ** Math.max(0, attempt - 1));
}
