/**
 * A call as an MCP task sees it (docs/state-machine.md, the "task view" column): a read of the call's
 * record, mapped from `classify` — never a write, never a second source of truth. The task is the call:
 * its id names the call's record (tool, client key, the caller who owns it) and the call's instance, so
 * the same key asked again is the same task, and any process answers any task.
 *
 * | call state                | task                                                                  |
 * |---------------------------|-----------------------------------------------------------------------|
 * | live                      | `working`, polled again soon (`pollInterval`: at most 1 s, never past its lock) |
 * | abandoned                 | `working`, polled again when the completer re-runs it (`completerLooksAtMs`) |
 * | stalled                   | `working` (never terminal: it can still complete): only a resend with its key finishes it — one a Powertools handler left, nothing here before its TTL, and a resend after it runs it anew (`stalledChangesAtMs`) |
 * | completed, a receipt      | `completed`, its result the call's answer as a replay (`idempotent: true`) |
 * | completed, a failure      | `failed`, its result the call's error answer as a replay                |
 * | absent, expired, erased   | none: not found                                                       |
 *
 * Rule 5 (docs/state-machine.md): a task is read, never run — its answer is never the one that committed
 * the effect (that answer went to the request that committed it), so it is a replay, whatever the stored
 * `replayed`. (A 2025-11-25 task whose creating request committed its call says so in its id: lib/mcp.)
 *
 * Terminal states are terminal: a completed record only becomes a tombstone (erased: not found) or
 * expires, so a task never moves from `completed` or `failed` to anything but gone.
 */
import type * as z from 'zod/mini';
import { answerOf, askAgainAfterMs, MIN_RETRY_AFTER_MS } from './answers';
import { givesUpAtNextLook } from './backoff';
import { allQueued, classify, createdAtOf, neverRan, stalledChangesAtMs } from './call-state';
import type { CallRecord, StalledReason } from './protocol/record';
import type { InvokeOptions, ToolRuntime } from './runtime';
import { DEFAULT_TTL_SECONDS, type ToolDefinition } from './tool';
import type { Identity, InvocationDeadline, JsonObject, ToolResult } from './types';

/** A stalled call finishes only when its caller resends it: polling it often changes nothing. */
export const STALLED_POLL_MS = 60_000;

/** What every task view carries: the call it is, and its times (epoch ms). */
interface TaskTimes {
  /** The call's id (`<record key>@<instance>`): a later call under the same key after the TTL is another. */
  readonly callId: string;
  /** The claim holding the call, or that stored its outcome: what a commit mark is checked against (never shown). */
  readonly claimId: string | undefined;
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
        /** Stalled: why the completer gave up on it. */
        readonly reason?: StalledReason;
        /**
         * What holds it, where its state alone would mislead: `powertools`, live under Powertools' handler
         * (a resend past its TTL runs it anew); `queued`, abandoned with every attempt queued (`allQueued`:
         * handed off to the completer, behind a window's holder) — nothing happened yet.
         */
        readonly note?: 'powertools' | 'queued';
        /**
         * Abandoned, and the completer's next look — at its poll interval — gives it up rather than re-run it
         * (`givesUpAtNextLook`): its attempts are used up, or its re-run would be due past its last look
         * before its TTL. Only a resend finishes it.
         */
        readonly givesUp?: 'attempts' | 'expiring';
        /** Stalled, and none of its attempts made an effect (`neverRan`): nothing happened. */
        readonly neverRan?: true;
        /**
         * Stalled, and nothing moves it before its TTL (`stalledChangesAtMs`: no resend fits, or Powertools'
         * handler left it): past it a resend runs it anew, with no promise of one effect — as its poll says.
         */
        readonly runsAnew?: true;
        /** When polling it again is worth it. */
        readonly pollIntervalMs: number;
      }
    | {
        readonly status: 'completed' | 'failed';
        /** The call's stored outcome as a retry replays it (`idempotent: true`, rule 5). */
        readonly result: ToolResult<JsonObject>;
      }
  );

/** How a task is read. */
export interface TaskReading {
  readonly nowMs: number;
  /** The caller's client key, which the answer names. */
  readonly clientKey: string;
  /** The tool's TTL: the times of a record an earlier version wrote (no `created_at`) derive from it. */
  readonly ttlSeconds: number;
  /** The runtime's `maxAttempts`: an abandoned call past it is given up on, not re-run (`givesUpAtNextLook`). */
  readonly maxAttempts?: number;
}

/** What an abandoned call's task says beside its state, where its state alone would mislead (`CallTask.note`). */
function abandonedNote(
  record: CallRecord,
  nowMs: number,
  maxAttempts: number | undefined,
): { note?: 'queued'; givesUp?: 'attempts' | 'expiring' } {
  const givesUp = givesUpAtNextLook(record, nowMs, maxAttempts);
  return { ...(allQueued(record) ? { note: 'queued' as const } : {}), ...(givesUp ? { givesUp } : {}) };
}

/** A stalled task's poll: when it next changes by anything retrysafe runs, or `STALLED_POLL_MS`. */
function stalledPollMs(record: CallRecord, nowMs: number): number {
  const atMs = stalledChangesAtMs(record, nowMs);
  return atMs === undefined ? STALLED_POLL_MS : Math.max(MIN_RETRY_AFTER_MS, Math.ceil(atMs - nowMs));
}

/**
 * The task a call record is at `nowMs`, for the caller who owns `clientKey` (the record was found under
 * their scope), or undefined when there is none.
 */
export function taskOf(record: CallRecord | undefined, reading: TaskReading): CallTask | undefined {
  const { nowMs, clientKey, ttlSeconds } = reading;
  const state = classify(record, nowMs);
  if (record === undefined) return undefined;
  const createdAtMs = createdAtOf(record, ttlSeconds);
  const times = { callId: record.callId, claimId: record.claimId, createdAtMs, expiresAtMs: record.expiresAtS * 1000 };
  switch (state) {
    case 'live':
      return {
        ...times,
        lastUpdatedAtMs: createdAtMs,
        status: 'working',
        state,
        // Its holder may store it at any moment: the same hint as every answer about it (`askAgainAfterMs`).
        pollIntervalMs: askAgainAfterMs(record, state, nowMs),
        ...(record.writtenBy === 'powertools' ? { note: 'powertools' as const } : {}),
      };
    case 'abandoned':
    case 'stalled':
      return {
        ...times,
        // It stopped running when its lock ended.
        lastUpdatedAtMs: Math.max(createdAtMs, record.lockEndsMs),
        status: 'working',
        state,
        // Abandoned: when the completer re-runs it (a resend may finish it sooner); stalled: nothing is
        // scheduled, or nothing moves it before `stalledChangesAtMs` (one Powertools' handler left) — then.
        pollIntervalMs: state === 'stalled' ? stalledPollMs(record, nowMs) : askAgainAfterMs(record, state, nowMs),
        ...(state === 'stalled' ? { reason: record.stalledReason ?? 'attempts' } : {}),
        ...(state === 'abandoned' ? abandonedNote(record, nowMs, reading.maxAttempts) : {}),
        ...(state === 'stalled' && neverRan(record) ? { neverRan: true as const } : {}),
        ...(state === 'stalled' && stalledChangesAtMs(record, nowMs) !== undefined ? { runsAnew: true as const } : {}),
      };
    case 'completed': {
      // Rule 5: read, never the committing answer — a replay.
      const result = answerOf<JsonObject>({ ...record.outcome, replayed: true }, clientKey);
      // Stored with its outcome (`completed_at`); a record an earlier version stored: its TTL less the tool's.
      const completedAtMs = record.completedAtMs ?? (record.expiresAtS - ttlSeconds) * 1000;
      return {
        ...times,
        createdAtMs: record.createdAtMs === undefined ? completedAtMs : createdAtMs,
        lastUpdatedAtMs: Math.max(createdAtMs, completedAtMs),
        status: result.ok ? 'completed' : 'failed',
        result,
      };
    }
    default:
      return undefined;
  }
}

/**
 * The task a request's call began as: `working`, whatever it is now — a task begins working (MCP tasks),
 * and this request's own call was in flight when it began; `tasks/get` tells what it is now.
 */
export function begunTask(task: CallTask): CallTask {
  if (task.status === 'working') return task;
  const { result: _result, status: _status, ...times } = task;
  return {
    ...times,
    lastUpdatedAtMs: times.createdAtMs,
    status: 'working',
    state: 'live',
    pollIntervalMs: MIN_RETRY_AFTER_MS,
  };
}

/** A call's answer and the MCP task the call is (`callAsTask`). */
export interface TaskAnswer<R extends JsonObject> {
  readonly result: ToolResult<R>;
  /**
   * The call this request ran, or whose record answered it (a replay, `pending`), as a task — built from
   * what the attempt wrote or read, without another read; undefined when the answer is about no call of
   * these arguments under the key (a conflict, invalid arguments, an erased key, a released first
   * attempt) or its state is unknown (its claim was lost to another attempt).
   */
  readonly task: CallTask | undefined;
}

/**
 * A call made as an MCP task: `ToolRuntime.invoke` (the same call, writes, answer and log line), and the
 * task the call is — a call that began with this request reads `working` (`begunTask`), one that was
 * there already as it is now. A module of its own: a write's function never bundles it.
 */
export async function callAsTask<S extends z.ZodMiniObject, R extends JsonObject>(
  runtime: ToolRuntime,
  tool: ToolDefinition<S, R>,
  identity: Identity,
  input: unknown,
  deadline: InvocationDeadline,
  options: InvokeOptions = {},
): Promise<TaskAnswer<R>> {
  const answered = await runtime.invokeForCall(tool, identity, input, deadline, options);
  const { call, clientKey } = answered;
  // No record, no task (`taskOf`): a call refused before its claim. A record is read under its client key.
  const task = taskOf(call, {
    nowMs: Date.now(),
    clientKey: clientKey ?? '',
    ttlSeconds: tool.ttlSeconds ?? DEFAULT_TTL_SECONDS,
    maxAttempts: runtime.maxAttempts,
  });
  return { result: answered.result, task: task && answered.fresh ? begunTask(task) : task };
}

/**
 * The caller's own call under a client key as a task (`tasks/get`): one consistent read, no write;
 * undefined when there is none — never called, expired, released, erased, or someone else's (the key is
 * hashed with the caller's tenant and user, as for `lookup`).
 */
export async function readTask(
  runtime: ToolRuntime,
  tool: Pick<ToolDefinition, 'name' | 'ttlSeconds'>,
  identity: Identity,
  clientKey: string,
): Promise<CallTask | undefined> {
  const record = await runtime.readCall(tool.name, identity, clientKey);
  const ttlSeconds = tool.ttlSeconds ?? DEFAULT_TTL_SECONDS;
  return taskOf(record, { nowMs: Date.now(), clientKey, ttlSeconds, maxAttempts: runtime.maxAttempts });
}
