/**
 * MCP tasks over the call record, in both eras: 2025-11-25's experimental tasks (SEP-1686) and 2026-07-28's
 * tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663). A write's call is its task, and the task is a
 * view of its record (`callAsTask`, `readTask`: the core's `taskOf`) — nothing is kept in memory between
 * requests, no table or write is added, and any process answers any task. What this module adds is the
 * wire: the task id, the `Task` objects of each era, the errors.
 *
 * - The task id names the call: `rs1.<base64url of [tool, client key]>.<call instance>`. Every `tasks/*`
 *   request recomputes the call's record key with the caller the token names (as `get_operation` does),
 *   so another tenant's or user's id finds nothing, and answers exactly as an unknown one. It is no bearer
 *   token: guessing one gives nothing without the caller's token. A 2025-11-25 task whose creating request
 *   itself committed the call ends in `.c`: its `tasks/result` is that request's answer, the one that says
 *   `idempotent: false` (rule 5); every other read of a call's task is a replay.
 * - `tasks/get` is one consistent GetItem; 2025-11-25's `tasks/result` polls the same read until the task
 *   is terminal; the extension's `tasks/update` and `tasks/cancel` read it once; none writes.
 * - 2025-11-25, not declared: `tasks/list` (the table has no index by caller: one would cost every call two
 *   more write units) and `tasks/cancel` (its spec requires a cancelled task to stay `cancelled`, and a call
 *   is never stopped: a claim precedes the effect at once, so every task still `working` may have made its
 *   effect). The SDK answers both `-32601`. The extension has no `tasks/list`; its `tasks/cancel` is
 *   cooperative — a known task's is acknowledged (`{}`) and changes nothing, and the task still ends
 *   `completed`; `-32602` is only for an id that names no task of the caller's.
 */
import { createHash } from 'node:crypto';
import type { CallTask, StalledReason } from '../idempotency';
import type { JsonObject } from '../idempotency/types';

/** The prefix of this format of task id (a later one can be told apart). */
const TASK_ID_VERSION = 'rs1';

/** What a task id names: the write tool, the caller's client key, and the call's instance under it. */
export interface TaskName {
  readonly tool: string;
  readonly clientKey: string;
  readonly instance: string;
  /**
   * The request that made this task committed its call (2025-11-25): its result is that request's answer
   * (rule 5). The mark's proof (`commitProofOf` the committing claim) is checked against the record.
   */
  readonly commitProof: string | undefined;
}

/** The last segment of a task id whose creating request committed its call: `c` and the proof. */
const COMMITTED_MARK = /^c([\w-]{22})$/;

/**
 * What a commit mark proves: the claim that stored the call's outcome, hashed (the claim id is never
 * shown). A client cannot make one for a call it did not commit: it never sees a claim id.
 */
export function commitProofOf(claimId: string): string {
  return createHash('sha256').update(claimId).digest('base64url').slice(0, 22);
}

/**
 * The commit mark's proof for a call `claimId` committed, or undefined where a mark would prove nothing:
 * the claim's id is the call's instance, which every task id of the call shows — records claimed before a
 * call's instance was an id of its own, kept until their TTL. Such a call's tasks read as replays.
 */
export function commitProofFor(claimId: string | undefined, callId: string): string | undefined {
  return claimId === undefined || claimId === instanceOf(callId) ? undefined : commitProofOf(claimId);
}

/** The call's instance, from its id (`<record key>@<instance>`). */
export function instanceOf(callId: string): string {
  return callId.slice(callId.lastIndexOf('@') + 1);
}

/** The task id's middle: the tool and the client key, base64url of their JSON. */
function namedOf(tool: string, clientKey: string): string {
  return Buffer.from(JSON.stringify([tool, clientKey]), 'utf8').toString('base64url');
}

/** The task id of a call; `commitProof` when the request answering with it committed the call. */
export function taskIdOf(tool: string, clientKey: string, callId: string, commitProof?: string): string {
  const mark = commitProof === undefined ? '' : `.c${commitProof}`;
  return `${TASK_ID_VERSION}.${namedOf(tool, clientKey)}.${instanceOf(callId)}${mark}`;
}

/**
 * What a task id names, or undefined when it is not one `taskIdOf` writes: only the id as issued, byte
 * for byte, names its task (a respelling base64url decoding forgives is no id of ours).
 */
export function taskNameOf(taskId: string): TaskName | undefined {
  const [version, named, instance, mark, ...rest] = taskId.split('.');
  if (version !== TASK_ID_VERSION || !named || !instance || rest.length > 0) return undefined;
  const commitProof = mark === undefined ? undefined : COMMITTED_MARK.exec(mark)?.[1];
  if (mark !== undefined && commitProof === undefined) return undefined;
  try {
    const decoded: unknown = JSON.parse(Buffer.from(named, 'base64url').toString('utf8'));
    if (!Array.isArray(decoded) || decoded.length !== 2) return undefined;
    const [tool, clientKey] = decoded as unknown[];
    if (typeof tool !== 'string' || typeof clientKey !== 'string') return undefined;
    if (namedOf(tool, clientKey) !== named) return undefined;
    return { tool, clientKey, instance, commitProof };
  } catch {
    return undefined;
  }
}

/** The tasks extension's identifier: declared in capabilities, and by a client in each request's `_meta`. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** The spec's error for an id that names no task of the caller's (unknown, gone, or another caller's). */
export const TASK_NOT_FOUND = 'Failed to retrieve task: Task not found';

/** MCP's `Task`, as `tasks/get` answers it and `CreateTaskResult` carries it. */
export interface McpTask {
  readonly taskId: string;
  readonly status: 'working' | 'completed' | 'failed';
  readonly statusMessage?: string;
  /** ISO 8601. */
  readonly createdAt: string;
  /** ISO 8601. */
  readonly lastUpdatedAt: string;
  /** How long the task is kept from its creation, in ms: its record's TTL. */
  readonly ttl: number;
  readonly pollInterval?: number;
  readonly [key: string]: unknown;
}

/** What each kind of task says of itself. */
export interface TaskWording {
  /** A `working` task's message, by its call's state — or by what holds it, where it says more (`CallTask.note`). */
  readonly working: Readonly<
    Record<'live' | 'abandoned' | NonNullable<Extract<CallTask, { status: 'working' }>['note']>, string>
  >;
  /**
   * An abandoned task's message when the completer's next look gives it up rather than re-run it
   * (`CallTask.givesUp`), by why.
   */
  readonly givesUp: Readonly<Record<'attempts' | 'expiring' | 'queued', string>>;
  /** A stalled task's message (`working`: only a resend finishes it), by why the completer gave up on it. */
  readonly stalled: Readonly<Record<StalledReason, string>>;
  /** The same, for a call none of whose attempts made an effect (`CallTask.neverRan`): nothing happened. */
  readonly stalledNeverRan: Readonly<Record<StalledReason, string>>;
  /** A stalled task no resend can run before its record expires (`CallTask.runsAnew`, not a Powertools call's). */
  readonly expiringNow: string;
  /** A `failed` task's message, from its error answer. */
  failed(result: JsonObject & { readonly error?: { readonly code: string; readonly message: string } }): string;
}

function stalledMessage(messages: TaskWording['stalled'], reason: StalledReason | undefined): string {
  return messages[reason ?? 'attempts'] ?? messages.attempts;
}

/** A call's task on the wire. */
export function mcpTaskOf(taskId: string, task: CallTask, wording: TaskWording): McpTask {
  const times = {
    taskId,
    createdAt: new Date(task.createdAtMs).toISOString(),
    lastUpdatedAt: new Date(Math.max(task.createdAtMs, task.lastUpdatedAtMs)).toISOString(),
    ttl: Math.max(0, task.expiresAtMs - task.createdAtMs),
  };
  if (task.status === 'working') {
    return {
      ...times,
      status: 'working',
      statusMessage:
        task.state === 'stalled'
          ? task.runsAnew && task.reason !== 'powertools'
            ? wording.expiringNow
            : stalledMessage(task.neverRan ? wording.stalledNeverRan : wording.stalled, task.reason)
          : task.givesUp
            ? wording.givesUp[task.note === 'queued' ? 'queued' : task.givesUp]
            : wording.working[task.note ?? task.state],
      pollInterval: task.pollIntervalMs,
    };
  }
  if (task.status === 'failed') {
    return { ...times, status: 'failed', statusMessage: wording.failed(task.result as JsonObject) };
  }
  return { ...times, status: 'completed' };
}

/**
 * The `ttl` a client asked for, against the one the task has (its record's): said when they differ — the
 * spec lets a receiver keep a task longer or shorter than asked, as long as it says which (the `Task`'s
 * own `ttl`), and a call is kept as long as its key, whatever a client asks.
 */
export function ttlNote(asked: unknown, kept: number): string | undefined {
  if (asked === undefined) return undefined;
  const askedMs = typeof asked === 'number' && Number.isFinite(asked) ? asked : undefined;
  if (askedMs === kept) return undefined;
  const what = askedMs === undefined ? 'a ttl that is no number of ms' : `${askedMs} ms`;
  return `ttl: ${kept} ms, the lifetime of its idempotency_key (asked: ${what}).`;
}

/** A task whose call's outcome is stored. */
type TerminalTask = Extract<CallTask, { readonly status: 'completed' | 'failed' }>;

/** The tasks extension's `Task` (2026-07-28), as `tasks/get` answers it and a `CreateTaskResult` carries it. */
export interface ExtensionTask {
  readonly taskId: string;
  /** Never `input_required` (no call asks for input) nor `cancelled` (a cancel is acknowledged, never acted on). */
  readonly status: 'working' | 'completed';
  readonly statusMessage?: string;
  /** ISO 8601. */
  readonly createdAt: string;
  /** ISO 8601. */
  readonly lastUpdatedAt: string;
  /** How long the task is kept from its creation, in ms: its record's TTL. */
  readonly ttlMs: number;
  /** When polling again is worth it: the same hint as the call's `pending` answer (`retry_after_ms`). */
  readonly pollIntervalMs?: number;
  /** A completed task's result: the `CallToolResult` its call answers. */
  readonly result?: Readonly<Record<string, unknown>>;
}

/**
 * A call's task as the tasks extension words it. A call's stored outcome is its tool's result, a receipt or
 * a failure answered `isError: true`, never a JSON-RPC error: both are `completed` with that result (the
 * extension keeps `failed` for JSON-RPC errors), which `resultOf` builds; without it, a terminal task
 * carries no result (a `CreateTaskResult` is only ever made of a working call).
 */
export function extensionTaskOf(
  taskId: string,
  task: CallTask,
  wording: TaskWording,
  resultOf?: (answer: TerminalTask['result']) => Readonly<Record<string, unknown>>,
): ExtensionTask {
  const wire = mcpTaskOf(taskId, task, wording);
  const times = { taskId, createdAt: wire.createdAt, lastUpdatedAt: wire.lastUpdatedAt, ttlMs: wire.ttl };
  if (task.status === 'working') {
    return { ...times, status: 'working', statusMessage: wire.statusMessage, pollIntervalMs: task.pollIntervalMs };
  }
  return {
    ...times,
    status: 'completed',
    ...(wire.statusMessage === undefined ? {} : { statusMessage: wire.statusMessage }),
    ...(resultOf ? { result: resultOf(task.result) } : {}),
  };
}
