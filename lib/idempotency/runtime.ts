import type { Logger } from '@aws-lambda-powertools/logger';
import * as z from 'zod/mini';
import { answerOf, type Ending, type EndingCall, pendingAnswer, type ReplayKind, toToolError } from './answers';
import { parseCall } from './arguments';
import { type Attachment, type AttachOptions, attachmentOf } from './attach';
import { runAttempt } from './attempt';
import { maxAttemptsOf } from './backoff';
import type { CallPlan } from './call-plan';
import { CLOCK_SKEW_TOLERANCE_MS } from './call-state';
import { idempotencyDisabled, recordKeyOf, validationOf } from './derivation';
import { type ErrorCode, INTERNAL_MESSAGE, InternalError, UnavailableError } from './errors';
import { fingerprint } from './fingerprint';
import { type Operation, operationOf } from './operation';
import type { CallRecord } from './protocol/record';
import {
  type IdempotencyTable,
  type IdempotencyTableOptions,
  idempotencyTable,
  readCallRecord,
} from './protocol/table';
import { DEFAULT_TTL_SECONDS, type ToolDefinition } from './tool';
import type { Identity, InvocationDeadline, JsonObject, ToolResult } from './types';

export { MAX_RETRY_AFTER_MS, MIN_RETRY_AFTER_MS, type ReplayKind } from './answers';
export { type AttachOptions, DEFAULT_ATTACH_MAX_WAIT_MS } from './attach';
export type { Operation } from './operation';

/** The runtime's table (`client`, `tableName`, `attributes`: {@link IdempotencyTableOptions}) and how it runs calls. */
export interface ToolRuntimeOptions extends IdempotencyTableOptions {
  /**
   * Where `internal` and `unavailable` causes are logged (never the arguments).
   * @default undefined (nothing is logged)
   */
  readonly logger?: Logger;
  /**
   * Told every call's outcome and latency, after the call, with who made it (its log line and metrics).
   * @default undefined
   */
  readonly onOutcome?: (outcome: CallOutcome, call: CallContext) => void;
  /**
   * How long a store call started now may still take in the current invocation (ms; ≤ 0 once its time is
   * up), or undefined outside one — what bounds the store client's requests. A call answered
   * `unavailable` because its time was up is logged as a WARN without a stack (it stays in flight for a
   * retry or the completer), not as a store failure.
   * @default () => undefined (no invocation deadline is known: every `unavailable` is logged as an error)
   */
  readonly storeTimeLeft?: () => number | undefined;
  /**
   * Attach: a duplicate that arrives while a live attempt of the same call runs elsewhere waits for its
   * outcome — re-reading the record (consistent GetItems, never a write) after 50, 100, 200, 250, 250 … ms,
   * at most 10 times, for at most `maxWaitMs`, this invocation's time less 1 s, and the
   * holder's lock — and answers it as a replay; `pending` when it is not in by then (docs/state-machine.md,
   * "Attach"). `{ maxWaitMs: 0 }` answers `pending` at once. The completer (`resume`) never waits.
   * @default { maxWaitMs: DEFAULT_ATTACH_MAX_WAIT_MS (2000), sleep: a setTimeout promise }
   */
  readonly attach?: AttachOptions;
  /**
   * Attempts of one call after which the completer stops re-running it — those that ran or failed, not the
   * queued ones (a hand-off, a dedupe window's holder in the way): the call becomes `stalled`
   * (docs/state-machine.md) — `get_operation` and `retrysafe calls` say so, a retry with its key still
   * finishes it, erase with the app's tables closes it. A setting of the runtime, not of the completer:
   * the completer runs calls through a runtime and gives up by its number (`givesUpAtNextLook`), and every
   * answer about a call (`lookup`, a task) says in advance what it will do — one number, both sides.
   * @default MAX_ATTEMPTS (8)
   */
  readonly maxAttempts?: number;
}

/** One call's outcome, for metrics: never the arguments, the key or the identity. */
export interface CallOutcome {
  readonly tool: string;
  /**
   * `timeout` when the call outlived its invocation: its answer came after the edge had answered `timeout`
   * (locally; on Lambda the function would have been cut off), so that is what its caller got.
   */
  readonly outcome: 'executed' | 'replayed' | 'pending' | 'timeout' | ErrorCode;
  /** On a replay: what answered it. */
  readonly replay?: ReplayKind;
  readonly latencyMs: number;
}

/** The outcome a result stands for. */
export function outcomeOf(result: ToolResult): CallOutcome['outcome'] {
  if (result.ok) return result.idempotent ? 'replayed' : 'executed';
  return 'status' in result ? 'pending' : result.error.code;
}

/** How an invocation is run. */
export interface InvokeOptions {
  /**
   * Finish an abandoned call: take over exactly this claim, or do nothing (never a fresh claim). The
   * completer's way in — an erased, finished or re-claimed record is never brought back.
   * @default undefined (a caller's call: claim, or take over an abandoned attempt of the same arguments)
   */
  readonly resume?: { readonly claimId: string };
  /**
   * Hand the call to the completer instead of running it in this request: its first claim is written,
   * then parked with its lock ended, unrun, and the answer is `pending` (queued) until the completer looks
   * at it (on AWS once the table's stream delivers the park: its batching window, 10 s by default). For a call that may outlast its
   * request (`ToolDefinition.longRunning`), where the caller takes a task (MCP). The completer's attempt is
   * the call's second: a business error it meets is the call's stored outcome, not a released key. A call
   * already under the key is answered as always (a takeover runs here).
   * @default false
   */
  readonly handOff?: boolean;
  /**
   * Which surface the call came through, for its log line (`rest`, `mcp`, `completer`, …).
   * @default undefined
   */
  readonly transport?: string;
}

/** Who made a call and through what, for its log line (never for a metric's dimensions). */
export interface CallContext {
  readonly tenant: string;
  /** The client key the answer names; undefined when the call was refused before one was read. */
  readonly key: string | undefined;
  readonly transport: string | undefined;
}

/** A call's answer, what answered it when it is a replay, and the call it is about (`EndingCall`). */
interface Answered<R extends JsonObject> extends EndingCall {
  readonly result: ToolResult<R>;
  readonly replay?: ReplayKind;
  /** The client key the call was made under, once it was read. */
  readonly clientKey?: string;
}

/** A call's answer and the call it is about, as its attempt left it (`ToolRuntime.invokeForCall`). */
export interface CalledAnswer<R extends JsonObject> extends EndingCall {
  readonly result: ToolResult<R>;
  /** The client key the call was made under, once it was read. */
  readonly clientKey?: string;
}

/** The identity must be complete before anything is hashed: `[null, null]` would be one shared record. */
const identitySchema = z.object({
  tenant: z.string().check(z.minLength(1), z.maxLength(256)),
  user: z.string().check(z.minLength(1), z.maxLength(256)),
});

/**
 * Runs tools idempotently. Every call:
 *  1. validates the identity, the client key and the arguments (nothing is written when they are bad);
 *  2. claims `(tool, tenant, user, client key)` with a conditional PutItem *before* any side effect;
 *  3. runs the tool with a downstream key derived from the natural key (or the client key);
 *  4. stores the receipt and returns it; a later call with the same key gets the stored receipt.
 * The attempt itself, phase by phase, is `runAttempt`; its writes are `protocol/`'s transitions.
 */
export class ToolRuntime {
  readonly #options: ToolRuntimeOptions;
  readonly #table: IdempotencyTable;
  readonly #attach: Attachment;

  /**
   * Attempts of one call the completer runs before it gives up on it (`ToolRuntimeOptions.maxAttempts`). A
   * plain property, not a getter of a private field: a runtime wrapped by `Object.create` reads it too.
   */
  readonly maxAttempts: number;

  constructor(options: ToolRuntimeOptions) {
    this.maxAttempts = maxAttemptsOf(options.maxAttempts);
    this.#options = options;
    this.#attach = attachmentOf(options.attach);
    this.#table = idempotencyTable(options);
  }

  async invoke<S extends z.ZodMiniObject, R extends JsonObject>(
    tool: ToolDefinition<S, R>,
    identity: Identity,
    input: unknown,
    deadline: InvocationDeadline,
    options: InvokeOptions = {},
  ): Promise<ToolResult<R>> {
    return (await this.#invoke(tool, identity, input, deadline, options)).result;
  }

  /**
   * `invoke`, and the call its answer is about — the same call, the same writes, the same answer and log
   * line: what an MCP task of this request is made of (`callAsTask`, task.ts), without another read.
   */
  async invokeForCall<S extends z.ZodMiniObject, R extends JsonObject>(
    tool: ToolDefinition<S, R>,
    identity: Identity,
    input: unknown,
    deadline: InvocationDeadline,
    options: InvokeOptions = {},
  ): Promise<CalledAnswer<R>> {
    const { result, call, fresh, clientKey } = await this.#invoke(tool, identity, input, deadline, options);
    return { result, ...(call ? { call } : {}), ...(fresh ? { fresh } : {}), ...(clientKey ? { clientKey } : {}) };
  }

  async #invoke<S extends z.ZodMiniObject, R extends JsonObject>(
    tool: ToolDefinition<S, R>,
    identity: Identity,
    input: unknown,
    deadline: InvocationDeadline,
    options: InvokeOptions,
  ): Promise<Answered<R>> {
    const started = Date.now();
    // The deadline is read once: the lock, the check of the time left and the log line must agree.
    const remainingMs = deadline.getRemainingTimeInMillis();
    const invocationEndsMs = started + remainingMs;
    let answered: Answered<R>;
    try {
      answered = await this.#run(tool, identity, input, remainingMs, options);
    } catch (error) {
      answered = { result: this.#failure(tool.name, error) };
    }
    const { result } = answered;
    // An answer reached after the invocation's end reached nobody: the caller got `timeout` at the end.
    const settledMs = Date.now();
    const late = settledMs > invocationEndsMs;
    try {
      this.#options.onOutcome?.(
        {
          tool: tool.name,
          outcome: late ? 'timeout' : outcomeOf(result),
          ...(!late && result.ok && result.idempotent ? { replay: answered.replay ?? 'client_key' } : {}),
          latencyMs: (late ? invocationEndsMs : settledMs) - started,
        },
        {
          tenant: identity.tenant,
          key: result.ok || 'status' in result ? result.key : undefined,
          transport: options.transport,
        },
      );
    } catch (error) {
      // A metric that fails must not change an answer whose effect is stored.
      this.#options.logger?.error('recording a call outcome failed', { tool: tool.name, error: error as Error });
    }
    return answered;
  }

  /**
   * One call: validate what it is (the identity, the key, the arguments, the time it has), plan its
   * attempt, run it, and word how it ended.
   */
  async #run<S extends z.ZodMiniObject, R extends JsonObject>(
    tool: ToolDefinition<S, R>,
    identity: Identity,
    input: unknown,
    remainingMs: number,
    options: InvokeOptions,
  ): Promise<Answered<R>> {
    const caller = identitySchema.safeParse(identity);
    if (!caller.success) throw new InternalError(`incomplete identity: ${caller.error.issues[0]?.path.join('.')}`);
    const { clientKey, args } = parseCall(tool, input);
    const ttlSeconds = tool.ttlSeconds ?? DEFAULT_TTL_SECONDS;
    const lockEndsMs = firstLockEndsMs(remainingMs, ttlSeconds);
    if (idempotencyDisabled()) {
      // POWERTOOLS_IDEMPOTENCY_DISABLED would make every call execute: refuse to run writes instead.
      throw new InternalError('idempotency is disabled by POWERTOOLS_IDEMPOTENCY_DISABLED');
    }
    // The record holds no arguments, only their fingerprint's hash (and, while in flight, the call).
    const argsFingerprint = fingerprint(args as JsonObject);
    const plan: CallPlan<S, R> = {
      table: this.#table,
      tool,
      identity: caller.data,
      clientKey,
      args,
      recordKey: recordKeyOf(tool.name, [caller.data.tenant, caller.data.user, clientKey]),
      fingerprint: argsFingerprint,
      validation: validationOf(argsFingerprint),
      ttlSeconds,
      lockEndsMs,
      resume: options.resume?.claimId,
      handOff: options.handOff, // a resume never makes a first claim
      attach: this.#attach,
      logger: this.#options.logger,
    };
    const ending = await runAttempt(plan);
    return { ...this.#answer<R>(tool.name, ending, clientKey), call: ending.call, fresh: ending.fresh, clientKey };
  }

  /** The answer an attempt's ending gives: its outcome, `pending`, or its failure worded (and logged). */
  #answer<R extends JsonObject>(tool: string, ending: Ending, clientKey: string): Answered<R> {
    switch (ending.kind) {
      case 'outcome':
        return { result: answerOf<R>(ending.outcome, clientKey), replay: ending.replay };
      case 'pending':
        return { result: pendingAnswer(clientKey, ending.until) };
      case 'failed':
        return { result: this.#failure(tool, ending.error) };
    }
  }

  /**
   * The caller's own record for a client key ("the idempotency table is the poll"): the stored outcome,
   * a call in flight or abandoned, or undefined when there is none (never called, expired, released,
   * erased, or someone else's — the key is hashed with the caller's tenant and user, so another's is
   * unreachable).
   */
  async lookup(toolName: string, identity: Identity, clientKey: string): Promise<Operation<JsonObject> | undefined> {
    return operationOf(await this.readCall(toolName, identity, clientKey), Date.now(), this.maxAttempts);
  }

  /**
   * The record of the caller's own client key, read consistently (one GetItem, no write); undefined when
   * there is none. A failed read is a `ToolError` (an outage `unavailable`), logged.
   */
  async readCall(toolName: string, identity: Identity, clientKey: string): Promise<CallRecord | undefined> {
    const recordKey = recordKeyOf(toolName, [identity.tenant, identity.user, clientKey]);
    try {
      return await readCallRecord(this.#table, recordKey);
    } catch (error) {
      // Classified like a write: an outage is `unavailable`, a deployment mistake `internal`; logged.
      const failure = toToolError(error);
      this.#options.logger?.error('operation lookup failed', {
        tool: toolName,
        code: failure.code,
        error: error as Error,
      });
      throw failure;
    }
  }

  #failure(tool: string, error: unknown): ToolResult<never> {
    const toolError = toToolError(error);
    const timeLeft = this.#options.storeTimeLeft?.();
    if (toolError.code === 'unavailable' && timeLeft !== undefined && timeLeft <= 0) {
      // The invocation's time is up (the tool ran until its deadline): not a fault of the store, and no
      // stack to read. The claim keeps its lock, which ends with the invocation: abandoned, to be finished.
      this.#options.logger?.warn(
        'tool call ran out of time: it stays in flight for a retry with its key or the completer',
        { tool, code: toolError.code },
      );
    } else if (!toolError.expose || toolError.code === 'unavailable') {
      this.#options.logger?.error('tool call failed', { tool, code: toolError.code, error: error as Error });
    }
    return {
      ok: false,
      error: { code: toolError.code, message: toolError.expose ? toolError.message : INTERNAL_MESSAGE },
    };
  }
}

/**
 * The attempt's lock, from its deadline's one reading (`remainingMs`): the check and the lock must agree. No time left
 * is the caller's to retry with the same key; a deadline within the tolerated clock skew of the TTL could let the record expire
 * mid-execution: a deployment mistake.
 */
function firstLockEndsMs(remainingMs: number, ttlSeconds: number): number {
  if (!(remainingMs > 0)) throw new UnavailableError('no time was left for this call; retry with the same key');
  if (remainingMs + CLOCK_SKEW_TOLERANCE_MS > ttlSeconds * 1000) {
    throw new InternalError(
      `invocation deadline ${remainingMs} ms does not end ${CLOCK_SKEW_TOLERANCE_MS} ms before the ${ttlSeconds} s TTL`,
    );
  }
  return Date.now() + remainingMs;
}
