/**
 * The client's defaults, as plain data. The deadline is what an agent's turn can usually afford; the
 * backoff starts fast (a lost answer is usually a replay away) and stays under the poll interval a
 * pending call is given (`retry_after_ms`, 100–1000 ms), so a retry never waits much past a hint.
 */
export const CLIENT_DEFAULTS = {
  /** Total time for one call, all attempts and waits included. */
  deadlineMs: 30_000,
  /**
   * The least time a retry is started with: one with less would only be cut off by the deadline, and
   * the caller would learn `timeout` instead of what the server last said.
   */
  minAttemptMs: 100,
  retry: {
    /** The first backoff's ceiling; each retry doubles it. */
    baseDelayMs: 100,
    /** The ceiling no backoff passes (a server's `Retry-After` may ask for longer). */
    maxDelayMs: 2_000,
  },
} as const;
