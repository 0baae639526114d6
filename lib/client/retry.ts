/** The backoff in force: the client's options over the defaults. */
export interface Backoff {
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

/**
 * How long to wait before retry number `retry` (0 for the first): "full jitter" — uniform in
 * [0, min(maxDelayMs, baseDelayMs · 2^retry)) — so clients that lost their answers together do not
 * come back together. Never shorter than the server's hint (`Retry-After`, `retry_after_ms`): coming
 * back earlier only earns another `pending` or 503.
 */
export function backoffDelay(
  retry: number,
  backoff: Backoff,
  hintMs: number | undefined,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(backoff.maxDelayMs, backoff.baseDelayMs * 2 ** retry);
  const jittered = Math.floor(random() * ceiling);
  return hintMs === undefined ? jittered : Math.max(hintMs, jittered);
}

/**
 * A `Retry-After` header in milliseconds: delay-seconds (`2`) or an HTTP-date (RFC 9110 §10.2.3).
 * Undefined when absent or unreadable.
 */
export function retryAfterHeaderMs(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * Error codes of a request or answer lost in the network. The write may or may not have happened;
 * with the same key a retry is a read of it, so these are always retried.
 */
const NETWORK_ERROR_CODES = new Set([
  // undici (Node's fetch): the socket closed ("other side closed"), connect or header/body timeouts
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  // the operating system's
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
]);

/** Messages of socket failures from fetch implementations that set no code. */
const NETWORK_ERROR_MESSAGES = /other side closed|socket hang up|terminated|network ?error|connection reset/i;

/**
 * Whether `error` — what `fetch` rejected with, or reading the body threw — means the request or its
 * answer was lost in the network. Node's fetch (undici) rejects with `TypeError: fetch failed` (or
 * `terminated`, when the body was cut) and puts the socket's error in `cause`, sometimes nested, so the
 * whole cause chain is read. A refused certificate or a bad URL is not a network loss and is not retried.
 */
export function isNetworkError(error: unknown): boolean {
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (typeof current === 'object' && current !== null && !seen.has(current)) {
    seen.add(current);
    // Not `instanceof`: errors may come from another realm (a VM context, Jest's sandbox).
    const { code, message, cause } = current as { code?: unknown; message?: unknown; cause?: unknown };
    if (typeof code === 'string' && NETWORK_ERROR_CODES.has(code)) return true;
    if (typeof message === 'string' && NETWORK_ERROR_MESSAGES.test(message)) return true;
    current = cause;
  }
  return false;
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise(function waitOrAbort(resolve, reject) {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(function wake() {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    function onAbort() {
      clearTimeout(timer);
      reject(signal?.reason);
    }
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
