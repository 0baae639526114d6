/**
 * A call as an MCP task sees it (docs/state-machine.md, the "task view" column): a read of the call's
 * record, mapped from `classify` — never a write, never a second source of truth. The task is the call:
 * its id names the call's record (tool, client key, the caller who owns it) and the call's instance, so
 * the same key asked again is the same task, and any process answers any task.
 *
 * | call state                | task                                                                  |
 * |---------------------------|-----------------------------------------------------------------------|
 * | live                      | `working`, polled again when its lock ends (`pollInterval`: what is left of it) |
 * | abandoned                 | `working`: a retry with its key or the completer finishes it          |
 * | stalled                   | `working`: only a resend with its key finishes it (never terminal: it can still complete) |
 * | completed, a receipt      | `completed`, its result the call's own answer (`idempotent` as stored) |
 * | completed, a failure      | `failed`, its result the call's own error answer                       |
 * | absent, expired, erased   | none: not found                                                       |
 *
 * Terminal states are terminal: a completed record only becomes a tombstone (erased: not found) or
 * expires, so a task never moves from `completed` or `failed` to anything but gone.
 */
import { answerOf, MIN_RETRY_AFTER_MS } from './answers';
import { type CallRecord, classify } from './call-state';
import type { JsonObject, ToolResult } from './types';

/** How often a task that waits on the completer or on a resend is worth polling. */
export const ABANDONED_POLL_MS = 1_000;
/** A stalled call finishes only when its caller resends it: polling it often changes nothing. */
export const STALLED_POLL_MS = 60_000;

/** What every task view carries: the call it is, and its times (epoch ms). */
interface TaskTimes {
  /** The call's id (`<record key>@<instance>`): a later call under the same key after the TTL is another. */
  readonly callId: string;
  /** When the call's first claim was written: when its caller asked. */
  readonly createdAtMs: number;
  /** When its state last changed, as far as its record tells. */
  readonly lastUpdatedAtMs: number;
  /** When its record expires (its TTL): the task's own lifetime ends then. */
  readonly expiresAtMs: number;
}

/** A call as a task. */
export type CallTask = TaskTimes &
  (
    | {
        readonly status: 'working';
        /** Which kind of in flight: the lock is live, ended, or the completer gave up on it. */
        readonly state: 'live' | 'abandoned' | 'stalled';
        /** When polling it again is worth it. */
        readonly pollIntervalMs: number;
      }
    | {
        readonly status: 'completed' | 'failed';
        /** The call's own answer, as it answered (or a retry replays it): its stored outcome. */
        readonly result: ToolResult<JsonObject>;
      }
  );

/**
 * The task a call record is at `nowMs`, for the caller who owns `clientKey` (the record was found under
 * their scope), or undefined when there is none. `ttlSeconds` is the tool's: a completed record's TTL was
 * set when its outcome was stored, which is therefore its last update.
 */
export function taskOf(
  record: CallRecord | undefined,
  { nowMs, clientKey, ttlSeconds }: { readonly nowMs: number; readonly clientKey: string; readonly ttlSeconds: number },
): CallTask | undefined {
  const state = classify(record, nowMs);
  if (record === undefined) return undefined;
  const times = {
    callId: record.callId,
    createdAtMs: record.createdAtMs,
    expiresAtMs: record.expiresAtS * 1000,
  };
  switch (state) {
    case 'live':
      return {
        ...times,
        lastUpdatedAtMs: record.createdAtMs,
        status: 'working',
        state,
        // Nothing changes before its lock ends (its attempt stores, parks or dies by then).
        pollIntervalMs: Math.max(MIN_RETRY_AFTER_MS, Math.ceil(record.lockEndsMs - nowMs)),
      };
    case 'abandoned':
    case 'stalled':
      return {
        ...times,
        // It stopped running when its lock ended.
        lastUpdatedAtMs: Math.max(record.createdAtMs, record.lockEndsMs),
        status: 'working',
        state,
        pollIntervalMs: state === 'stalled' ? STALLED_POLL_MS : ABANDONED_POLL_MS,
      };
    case 'completed': {
      const outcome = record.outcome ?? { replayed: false };
      const result = answerOf<JsonObject>(outcome, clientKey);
      return {
        ...times,
        lastUpdatedAtMs: Math.max(record.createdAtMs, (record.expiresAtS - ttlSeconds) * 1000),
        status: result.ok ? 'completed' : 'failed',
        result,
      };
    }
    default:
      return undefined;
  }
}
