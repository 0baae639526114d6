import type { ToolDescription } from '../api/description';
import { CLIENT_DEFAULTS } from './defaults';
import { GaveUpError, type LastOutcome, MayRunAnewError, ToolCallError, UnexpectedAnswerError } from './errors';
import { isValidKey, keyForToolCall, mintKey } from './keys';
import { type Backoff, backoffDelay, isNetworkError, retryAfterHeaderMs, sleep } from './retry';
import type {
  AnswerErrorCode,
  CallOptions,
  Completed,
  FetchLike,
  JsonObject,
  Operation,
  ReadOptions,
  RetrysafeClientOptions,
  ToolMap,
  UntypedTools,
} from './types';

/** The argument every write carries, as the server names it. */
const IDEMPOTENCY_KEY_FIELD = 'idempotency_key';

/**
 * Statuses retried whatever the body says: throttled (API Gateway's 429), or a gateway that could not
 * reach or hear the function (502, 503, 504). Retrying a write is safe because the key goes with it.
 */
const RETRIED_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

/**
 * The code for a status whose body is not a retrysafe error (API Gateway's own `{"message": …}`): the
 * reverse of the server's `HTTP_STATUS`, which a unit test compares it with.
 */
const CODE_OF_STATUS: Readonly<Record<number, AnswerErrorCode>> = {
  400: 'invalid_args',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  422: 'conflict',
  500: 'internal',
};

/** One request, as sent on every attempt. */
interface Request {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly body?: string;
}

/** An answer read whole: the status, the headers and the body, as JSON when it is JSON. */
interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  readonly body: unknown;
}

/** What the intent is called by in errors: the tool and the key to come back with. */
interface Target {
  readonly tool: string;
  readonly key: string;
}

/** What one attempt decided: settled, or worth another attempt (after the server's hint, if any). */
type Verdict<T> =
  | { readonly settled: T }
  | { readonly retry: Exclude<LastOutcome, 'timeout'>; readonly hintMs?: number; readonly cause?: unknown };

/** A successful answer's body, read as `T`, or undefined when it is not one. */
type Settle<T> = (body: unknown) => T | undefined;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The `{ ok: false, error: { code, message } }` of a retrysafe error answer, if the body is one. */
function errorOf(body: unknown): { code: AnswerErrorCode; message: string } | undefined {
  if (!isObject(body) || body.ok !== false || !isObject(body.error)) return undefined;
  const { code, message } = body.error;
  return typeof code === 'string' && typeof message === 'string'
    ? { code: code as AnswerErrorCode, message }
    : undefined;
}

/** The start of a body, for an error message: enough to recognise an HTML page or a gateway's JSON. */
function excerptOf(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/**
 * Decides what an answer means. Success and `pending` are read from the body; everything else by
 * status first, because a gateway in front of the API answers in its own shape:
 *  - 202 `pending`: the first call with this key still runs — wait (`retry_after_ms`) and ask again;
 *  - 429, 502, 503, 504, and any 5xx that is not a retrysafe verdict (a crashed or timed-out function
 *    behind API Gateway): retried, honouring `Retry-After`;
 *  - any other error — 400, 401, 403, 404, 413, 422, retrysafe's own 500 `internal`: thrown as
 *    `ToolCallError`, never retried (the same request would get the same refusal).
 */
function verdictOf<T>(reply: Reply, target: Target, settle: Settle<T>): Verdict<T> {
  const { status, body, headers } = reply;
  const hintMs = retryAfterHeaderMs(headers.get('retry-after'));
  if (status >= 200 && status < 300) {
    if (status === 202 && isObject(body) && body.status === 'pending') {
      const bodyHint = typeof body.retry_after_ms === 'number' ? body.retry_after_ms : undefined;
      // No retrysafe attempt can finish it (Powertools holds it, or its record expires first): a resend past its
      // record's TTL runs it anew — never sent unasked.
      if (body.runs_anew === true) throw new MayRunAnewError(target.tool, target.key, bodyHint ?? hintMs);
      return { retry: 'pending', hintMs: bodyHint ?? hintMs };
    }
    const settled = settle(body);
    if (settled !== undefined) return { settled };
    throw new UnexpectedAnswerError(target.tool, target.key, status, excerptOf(reply.text));
  }
  const error = errorOf(body);
  if (RETRIED_STATUSES.has(status) || (status >= 500 && (error === undefined || error.code === 'unavailable'))) {
    return { retry: 'unavailable', hintMs };
  }
  const gatewayMessage = isObject(body) && typeof body.message === 'string' ? body.message : excerptOf(reply.text);
  throw new ToolCallError(
    target.tool,
    target.key,
    error?.code ?? CODE_OF_STATUS[status] ?? 'http_error',
    error?.message ?? (gatewayMessage || `HTTP ${status}`),
    status,
  );
}

function completedOf(body: unknown): Completed | undefined {
  if (!isObject(body) || body.ok !== true) return undefined;
  if (typeof body.idempotent !== 'boolean' || typeof body.key !== 'string' || !isObject(body.receipt)) return undefined;
  // The answer's fields only: its `next` is for a model, and the agent adapters give it (`answerToolCall`).
  return { ok: true, idempotent: body.idempotent, key: body.key, receipt: body.receipt as JsonObject };
}

function operationOf(body: unknown): Operation | undefined {
  if (!isObject(body) || body.ok !== true || typeof body.key !== 'string') return undefined;
  // As for a write: the answer's fields, not its `next`.
  const { next: _next, ...operation } = body;
  if (body.status === 'pending' || body.status === 'abandoned' || body.status === 'stalled') {
    return operation as unknown as Operation;
  }
  return body.status === 'completed' && isObject(body.receipt) ? (operation as unknown as Operation) : undefined;
}

function listingOf(body: unknown): ToolDescription[] | undefined {
  return isObject(body) && Array.isArray(body.tools) ? (body.tools as ToolDescription[]) : undefined;
}

/** Every problem with the options, reported at once. */
function checkOptions(options: RetrysafeClientOptions): void {
  const problems: string[] = [];
  let url: URL | undefined;
  try {
    url = new URL(options.baseUrl);
  } catch {
    problems.push(`baseUrl: ${JSON.stringify(options.baseUrl)} is not a URL`);
  }
  if (url && url.protocol !== 'http:' && url.protocol !== 'https:') problems.push('baseUrl: must be http or https');
  const hasToken = typeof options.token === 'string' && options.token.length > 0;
  const hasGetter = typeof options.getToken === 'function';
  if (hasToken === hasGetter) problems.push('token or getToken: exactly one is required');
  for (const [name, value] of [
    ['deadlineMs', options.deadlineMs],
    ['retry.baseDelayMs', options.retry?.baseDelayMs],
    ['retry.maxDelayMs', options.retry?.maxDelayMs],
  ] as const) {
    if (value !== undefined && !(Number.isFinite(value) && value > 0)) problems.push(`${name}: must be a number > 0`);
  }
  if (problems.length > 0) throw new TypeError(`RetrysafeClient: ${problems.join('; ')}`);
}

/**
 * Calls retrysafe's write tools the way a retry-safe client must: one idempotency key per intent, kept
 * on every retry; network losses, 429/502/503/504 and `pending` retried with jittered exponential backoff
 * within a deadline; refusals (400, 401, 404, 413, 422, …) thrown at once as `ToolCallError`. A replay
 * (`idempotent: true`) is a success: it is the first call's receipt.
 *
 * `Tools` types the calls: `new RetrysafeClient<AppTools>(…)` (`retrysafe types` writes `AppTools`) knows every tool's
 * arguments and receipt; without it, arguments and receipts are JSON objects.
 */
export class RetrysafeClient<Tools extends ToolMap = UntypedTools> {
  readonly #baseUrl: string;
  readonly #fetch: FetchLike;
  readonly #token: () => string | Promise<string>;
  readonly #deadlineMs: number;
  readonly #backoff: Backoff;

  constructor(options: RetrysafeClientOptions) {
    checkOptions(options);
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '');
    // Looked up per request, not bound once: a test or an instrumentation that replaces the global
    // fetch after the client was built is still used.
    this.#fetch =
      options.fetch ??
      function globalFetch(url, init) {
        return globalThis.fetch(url, init);
      };
    const { token, getToken } = options;
    this.#token =
      getToken ??
      function fixedToken() {
        return token as string;
      };
    this.#deadlineMs = options.deadlineMs ?? CLIENT_DEFAULTS.deadlineMs;
    this.#backoff = { ...CLIENT_DEFAULTS.retry, ...options.retry };
  }

  /**
   * Runs a write tool once per intent and resolves with its receipt — the first execution's, or the
   * stored one on a replay (`idempotent: true`). The key is `options.key`, else `args.idempotency_key`,
   * else derived from `options.toolCallId`, else minted here; whichever it is, every retry sends it,
   * and the answer (or the error) carries it.
   *
   * Rejects with `ToolCallError` (the server refused; not retried), `GaveUpError` (the deadline ended
   * with only `pending` or transient failures: poll `operation(tool, error.key)` later) or
   * `UnexpectedAnswerError` (not a retrysafe answer).
   */
  call<K extends keyof Tools & string>(
    tool: K,
    args: Tools[K]['args'],
    options?: CallOptions,
  ): Promise<Completed<Tools[K]['receipt']>>;
  /** A call typed by the caller: `call<MyArgs, MyReceipt>('my_tool', args)`. */
  call<TArgs extends object = never, TReceipt = JsonObject>(
    tool: string,
    args: NoInfer<TArgs>,
    options?: CallOptions,
  ): Promise<Completed<TReceipt>>;
  async call(tool: string, args: object, options: CallOptions = {}): Promise<Completed<unknown>> {
    if (!isObject(args)) throw new TypeError('args: must be an object');
    const { [IDEMPOTENCY_KEY_FIELD]: keyInArgs, ...fields } = args;
    if (keyInArgs !== undefined && options.key !== undefined && keyInArgs !== options.key) {
      throw new TypeError(`key: differs from args.${IDEMPOTENCY_KEY_FIELD}`);
    }
    const key =
      options.key ??
      keyInArgs ??
      (options.toolCallId === undefined ? mintKey() : await keyForToolCall(options.toolCallId));
    if (!isValidKey(key)) throw new TypeError('key: must be 1-255 printable ASCII characters (0x20-0x7E)');
    const request: Request = {
      method: 'POST',
      path: `/tools/${encodeURIComponent(tool)}`,
      body: JSON.stringify({ ...fields, [IDEMPOTENCY_KEY_FIELD]: key }),
    };
    return this.#settle({ tool, key }, request, completedOf, options);
  }

  /**
   * The caller's own record of an intent: `completed` with its receipt, `pending`, or `abandoned` (its
   * worker died; the server's completer or the same call again finishes it). Transient failures
   * are retried within the deadline; an unknown (or expired, or another caller's) key rejects with
   * `ToolCallError` code `not_found`. It does not wait for a pending call: call it again, or repeat the
   * `call` with the same key and arguments, which waits.
   */
  operation<K extends keyof Tools & string>(
    tool: K,
    key: string,
    options: ReadOptions = {},
  ): Promise<Operation<Tools[K]['receipt']>> {
    if (!isValidKey(key)) {
      return Promise.reject(new TypeError('key: must be 1-255 printable ASCII characters (0x20-0x7E)'));
    }
    const path = `/tools/${encodeURIComponent(tool)}/operations/${encodeURIComponent(key)}`;
    return this.#settle({ tool, key }, { method: 'GET', path }, operationOf, options) as Promise<
      Operation<Tools[K]['receipt']>
    >;
  }

  /**
   * `GET /tools`: every write tool's name, description, input and output JSON Schema, annotations and
   * key kinds — what the adapters (`./openai`, `./anthropic`, `./ai-sdk`) turn into an agent's tools.
   * Errors name the tool `list_tools` and carry an empty key.
   */
  listTools(options: ReadOptions = {}): Promise<ToolDescription[]> {
    return this.#settle({ tool: 'list_tools', key: '' }, { method: 'GET', path: '/tools' }, listingOf, options);
  }

  /**
   * Attempts until an answer settles the request, a refusal is thrown, or the deadline leaves no room
   * for the next wait. A wait the deadline cannot hold is not started: giving up at once tells the
   * caller sooner what waiting would have told later.
   */
  async #settle<T>(target: Target, request: Request, settle: Settle<T>, options: ReadOptions): Promise<T> {
    const started = Date.now();
    const deadlineAt = started + (options.deadlineMs ?? this.#deadlineMs);
    for (let attempt = 1; ; attempt++) {
      const verdict = await this.#attempt(target, request, settle, { deadlineAt, attempt, started }, options.signal);
      if ('settled' in verdict) return verdict.settled;
      const delay = backoffDelay(attempt - 1, this.#backoff, verdict.hintMs);
      if (Date.now() + delay + CLIENT_DEFAULTS.minAttemptMs >= deadlineAt) {
        throw new GaveUpError(target.tool, target.key, attempt, Date.now() - started, verdict.retry, {
          cause: verdict.cause,
          ...(verdict.hintMs === undefined ? {} : { retryAfterMs: verdict.hintMs }),
        });
      }
      await sleep(delay, options.signal);
    }
  }

  /** One request, bounded by what is left of the deadline. */
  async #attempt<T>(
    target: Target,
    request: Request,
    settle: Settle<T>,
    progress: { readonly deadlineAt: number; readonly attempt: number; readonly started: number },
    callerSignal: AbortSignal | undefined,
  ): Promise<Verdict<T>> {
    const timeout = AbortSignal.timeout(Math.max(1, progress.deadlineAt - Date.now()));
    const signal = callerSignal ? AbortSignal.any([callerSignal, timeout]) : timeout;
    let reply: Reply;
    try {
      reply = await this.#send(request, signal);
    } catch (error) {
      if (callerSignal?.aborted) throw callerSignal.reason;
      if (timeout.aborted) {
        throw new GaveUpError(target.tool, target.key, progress.attempt, Date.now() - progress.started, 'timeout', {
          cause: error,
        });
      }
      if (!isNetworkError(error)) throw error;
      return { retry: 'network', cause: error };
    }
    return verdictOf(reply, target, settle);
  }

  /** Sends one request and reads its answer whole; a body cut short rejects like a lost request. */
  async #send(request: Request, signal: AbortSignal): Promise<Reply> {
    const token = await this.#token();
    const headers: Record<string, string> = { accept: 'application/json', authorization: `Bearer ${token}` };
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    const response = await this.#fetch(`${this.#baseUrl}${request.path}`, {
      method: request.method,
      headers,
      body: request.body,
      signal,
    });
    const text = await response.text();
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = undefined; // not JSON: decided by status, and quoted in the error
    }
    return { status: response.status, headers: response.headers, text, body };
  }
}
