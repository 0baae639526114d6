import type { ErrorCode } from './errors';

/** A JSON value as it survives `JSON.stringify` → `JSON.parse` unchanged. */
export type JsonPrimitive = string | number | boolean | null;
export type JsonValue = JsonPrimitive | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** Who is calling, as established by authentication. Never read from tool arguments. */
export interface Identity {
  readonly tenant: string;
  readonly user: string;
}

/**
 * The remaining-time source of the current invocation. On Lambda this is the Lambda context; outside
 * Lambda the caller passes an object with a real deadline, so a claim's lock always expires.
 */
export interface InvocationDeadline {
  getRemainingTimeInMillis(): number;
}

/**
 * The answer to every tool call: one closed union. An error carries `idempotent` when it is the call's
 * stored outcome (a later attempt's business error, a receipt that could not be stored): the call
 * ended with it, and the same key answers the same — `true` on a replay. A refusal of this request
 * (nothing ran, nothing stored) has no `idempotent`.
 */
export type ToolResult<R extends JsonObject = JsonObject> =
  | { ok: true; idempotent: boolean; key: string; receipt: R }
  /**
   * `runs_anew`: no retrysafe attempt can finish the call before its record expires (Powertools' handler holds
   * it, or a resend's lock would end past its TTL − 10 s): after the wait a resend runs it anew, and can act twice.
   */
  /** `queued`: handed to the server to run in the background (a long-running tool's call), nothing ran yet. */
  | { ok: false; status: 'pending'; key: string; retry_after_ms: number; runs_anew?: true; queued?: true }
  | { ok: false; idempotent?: boolean; error: { code: ErrorCode; message: string } };
