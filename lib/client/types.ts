// Types only: what the client sends, answers and is configured with. Types from the server's files are
// imported as types, so the client's runtime never loads them.
import type { NextStep } from '../api/next-step';
import type { HttpErrorCode } from '../api/status';
import type { JsonObject, JsonValue } from '../idempotency/types';

export type { JsonObject, JsonValue, NextStep };

/**
 * An error code as the client reports it: the server's `error.code`, an edge code (`unauthorized`,
 * `payload_too_large`, …), or `http_error` for a status the API never sends (a proxy's 407, say).
 */
export type AnswerErrorCode = HttpErrorCode | 'http_error';

/** A settled write: the first execution (`idempotent: false`) or a replay of it (`idempotent: true`). */
export interface Completed<R = JsonObject> {
  readonly ok: true;
  readonly idempotent: boolean;
  /** The intent's idempotency key: the caller's, the one derived from the tool-call id, or the one minted. */
  readonly key: string;
  readonly receipt: R;
}

/**
 * What `operation(tool, key)` finds: the receipt of a completed call; a call still in flight; one
 * abandoned (its worker died before it finished), which the server's completer finishes, or which the
 * same call with the same key and arguments finishes now; or one stalled (the completer gave up on it
 * after its attempts failed), which only that same call finishes — `hint` says so.
 */
export type Operation<R = JsonObject> =
  | { readonly ok: true; readonly status: 'completed'; readonly key: string; readonly receipt: R }
  /**
   * `retry_after_ms`: when asking again is worth it (it may finish at any moment: soon). `runs_anew`: a
   * Powertools handler holds it, outside retrysafe's claims — past its lock a resend may run it anew
   * (`hint` says so; the client's writes throw `MayRunAnewError` on it).
   */
  | {
      readonly ok: true;
      readonly status: 'pending';
      readonly key: string;
      readonly retry_after_ms: number;
      readonly runs_anew?: true;
      readonly hint?: string;
    }
  /**
   * `retry_after_ms`: when the server re-runs it (the same call with the same key runs it now) — or, with
   * `gives_up` (its attempts used up, or its record expiring first), when it stops retrying it (then
   * `stalled`). `queued`: none of its attempts has run
   * yet (a hand-off, or a dedupe window's holder in the way): nothing happened.
   */
  | {
      readonly ok: true;
      readonly status: 'abandoned';
      readonly key: string;
      readonly retry_after_ms: number;
      readonly gives_up?: 'attempts' | 'expiring';
      readonly queued?: true;
      readonly hint: string;
    }
  /**
   * `retry_after_ms`: only when nothing moves it before then (a Powertools handler's call, or one no resend fits
   * before its record expires: its TTL), with `runs_anew`: past it a resend can act twice.
   */
  | {
      readonly ok: true;
      readonly status: 'stalled';
      readonly key: string;
      readonly retry_after_ms?: number;
      readonly hint: string;
    };

/** One tool's types: the arguments a caller sends (without `idempotency_key`) and its receipt. */
export interface ToolTypes<A = JsonObject, R = JsonObject> {
  readonly args: A;
  readonly receipt: R;
}

/** Tool name → its types: what `retrysafe types` writes for an app's tools. */
export type ToolMap = { readonly [tool: string]: ToolTypes<object, object> };

/** The map of a client that knows no tool's types: any name, JSON arguments, JSON receipts. */
export type UntypedTools = { readonly [tool: string]: ToolTypes };

/** The `fetch` the client sends with: the global one, or one a caller passes (a test's, an instrumented one). */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

/** How the client backs off between attempts. */
export interface RetryOptions {
  /**
   * The ceiling of the first backoff; each retry doubles it up to `maxDelayMs`. The wait itself is
   * drawn uniformly below the ceiling (full jitter), never shorter than a server's `Retry-After`.
   * @default 100
   */
  readonly baseDelayMs?: number;
  /**
   * The largest backoff ceiling.
   * @default 2000
   */
  readonly maxDelayMs?: number;
}

interface ClientOptionsBase {
  /** The API's base URL, without a trailing path: `https://….execute-api….amazonaws.com` or `http://127.0.0.1:3000`. */
  readonly baseUrl: string;
  /**
   * The `fetch` to send with.
   * @default globalThis.fetch
   */
  readonly fetch?: FetchLike;
  /**
   * Total time for one call — every attempt and every wait — in milliseconds. After it, a call that got
   * only `pending` or transient failures rejects with `GaveUpError`, which carries the key.
   * @default 30000
   */
  readonly deadlineMs?: number;
  /** @default { baseDelayMs: 100, maxDelayMs: 2000 } */
  readonly retry?: RetryOptions;
}

/** A fixed bearer token, or a function asked for one before every request (so a refreshed token is used). */
export type RetrysafeClientOptions = ClientOptionsBase &
  (
    | {
        /** The bearer token sent as `Authorization: Bearer <token>`. */
        readonly token: string;
        readonly getToken?: never;
      }
    | {
        /** Asked before every request, retries included. */
        readonly getToken: () => string | Promise<string>;
        readonly token?: never;
      }
  );

interface CallOptionsBase {
  /** Cancels the call: waits stop, the request in flight is aborted, and the call rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /**
   * This call's deadline, in milliseconds.
   * @default the client's `deadlineMs`
   */
  readonly deadlineMs?: number;
}

/**
 * How a call names its intent. A `key` the caller keeps; or the agent framework's `toolCallId`, a stable
 * id per intent, from which the key is derived (`keyForToolCall`); or neither, and the client mints one
 * key for the call and returns it in the answer (`key`) so the caller can reuse it. Never both.
 */
export type CallOptions = CallOptionsBase &
  (
    | {
        /** The idempotency key: 1–255 printable ASCII characters, the same on every retry of the intent. */
        readonly key: string;
        readonly toolCallId?: never;
      }
    | {
        /** The agent framework's id of this tool call (OpenAI `tool_call.id`, Anthropic `tool_use.id`, AI SDK `toolCallId`). */
        readonly toolCallId: string;
        readonly key?: never;
      }
    | { readonly key?: undefined; readonly toolCallId?: undefined }
  );

/** Options of a read (`operation`, `listTools`). */
export type ReadOptions = CallOptionsBase;
