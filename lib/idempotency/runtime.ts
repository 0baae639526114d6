import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyInconsistentStateError,
  IdempotencyItemNotFoundError,
  IdempotencyKeyError,
  IdempotencyPersistenceLayerError,
  IdempotencyRecordStatus,
  IdempotencyValidationError,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Context } from 'aws-lambda';
import canonicalize from 'canonicalize';
import * as z from 'zod/mini';
import { parseCall } from './arguments';
import {
  ConflictError,
  type ErrorCode,
  INTERNAL_MESSAGE,
  InFlightError,
  InternalError,
  InvalidArgsError,
  isTransientAwsError,
  ToolError,
  UnavailableError,
} from './errors';
import { downstreamKey, fingerprint } from './fingerprint';
import { IntentStore } from './intent';
import { ClaimLostError, ResultNotStoredError, ScopedDynamoDBPersistenceLayer } from './persistence/scoped-dynamodb';
import { decodeReceipt, encodeReceipt } from './receipt';
import { DEFAULT_IDEMPOTENCY_TABLE_NAME, DEFAULT_RECORD_ATTRIBUTES, type RecordAttributes } from './record';
import { DEFAULT_TTL_SECONDS, type ToolDefinition } from './tool';
import type { Identity, InvocationDeadline, JsonObject, ToolResult } from './types';

/** Longest `retry_after_ms` suggested for a call still in flight: most writes finish well within it. */
export const MAX_RETRY_AFTER_MS = 1_000;
/** Shortest `retry_after_ms`: polling faster than this only adds load. */
export const MIN_RETRY_AFTER_MS = 100;

export interface ToolRuntimeOptions {
  /** Client for the idempotency table (shared; the runtime keeps no per-call state on it). */
  readonly client: DynamoDBClient;
  /**
   * Name of the idempotency table.
   * @default DEFAULT_IDEMPOTENCY_TABLE_NAME ('retrysafe-idempotency')
   */
  readonly tableName?: string;
  /**
   * The record's attribute names; those not given keep their default.
   * @default DEFAULT_RECORD_ATTRIBUTES (`id`, `expiration`, `in_progress_expiration`, `status`, `data`,
   * `validation`, `tenant`, `tool`, `claim_id`)
   */
  readonly attributes?: Partial<RecordAttributes>;
  /**
   * Where `internal` and `unavailable` causes are logged (never the arguments).
   * @default undefined (nothing is logged)
   */
  readonly logger?: Logger;
  /**
   * Told every call's outcome and latency, after the call (metrics).
   * @default undefined
   */
  readonly onOutcome?: (outcome: CallOutcome) => void;
}

/** What answered a replay: the key's stored record, the tool's natural key, or a dedupe window's intent. */
export type ReplayKind = 'client_key' | 'natural_key' | 'dedupe_window';

/** One call's outcome, for metrics: never the arguments, the key or the identity. */
export interface CallOutcome {
  readonly tool: string;
  readonly outcome: 'executed' | 'replayed' | 'pending' | ErrorCode;
  /** On a replay: what answered it. */
  readonly replay?: ReplayKind;
  readonly latencyMs: number;
}

/** What a call learns about itself on the way (per call, never shared). */
interface CallTrace {
  replay?: ReplayKind;
}

/** The outcome a result stands for. */
export function outcomeOf(result: ToolResult): CallOutcome['outcome'] {
  if (result.ok) return result.idempotent ? 'replayed' : 'executed';
  return 'status' in result ? 'pending' : result.error.code;
}

/**
 * A client key's record as its owner may read it: completed with its receipt; pending while its call
 * holds a live lock; abandoned when the lock expired without a result (its worker died) — a resend
 * with the same key, or the completer, finishes it.
 */
export type Operation<R extends JsonObject> =
  | { status: 'completed'; receipt: R }
  | { status: 'pending' }
  | { status: 'abandoned' };

/** What the wrapped function returns, and so what Powertools stores: strings and a boolean only. */
interface StoredResult {
  /** The receipt as JSON text (see `encodeReceipt`); absent when the call's outcome is a failure. */
  readonly receipt?: string;
  /** True when this result is itself a replay: of a stored record, or of a natural key's receipt. */
  readonly replayed: boolean;
  /**
   * The side effect ran but the tool returned a receipt that cannot be stored (not plain JSON, too
   * large): a bug in the tool. Stored as the call's outcome, so a retry gets the same `internal`
   * answer instead of running the effect again.
   */
  readonly failure?: 'internal';
}

/** The answer a stored result gives, first time or replayed. */
function answerOf<R extends JsonObject>(stored: StoredResult, clientKey: string): ToolResult<R> {
  if (stored.receipt === undefined) {
    return { ok: false, error: { code: 'internal', message: INTERNAL_MESSAGE } };
  }
  return { ok: true, idempotent: stored.replayed, key: clientKey, receipt: decodeReceipt<R>(stored.receipt) };
}

/** What Powertools hashes: the scope into the record key, the fingerprint into the validation hash. */
interface ClaimPayload {
  readonly scope: [tenant: string, user: string, clientKey: string];
  readonly fingerprint: string;
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
 */
export class ToolRuntime {
  readonly #options: ToolRuntimeOptions;
  readonly #tableName: string;
  readonly #attributes: RecordAttributes;
  readonly #intents: IntentStore;

  constructor(options: ToolRuntimeOptions) {
    this.#options = options;
    this.#tableName = options.tableName ?? DEFAULT_IDEMPOTENCY_TABLE_NAME;
    this.#attributes = { ...DEFAULT_RECORD_ATTRIBUTES, ...options.attributes };
    this.#intents = new IntentStore(options.client, this.#tableName, this.#attributes);
  }

  /** A persistence layer for one call: Powertools keeps per-call state on it, so it is never shared. */
  #persistenceFor(tool: string, identity: Identity, call?: string): ScopedDynamoDBPersistenceLayer {
    return new ScopedDynamoDBPersistenceLayer({
      client: this.#options.client,
      tableName: this.#tableName,
      attributes: this.#attributes,
      tool,
      tenant: identity.tenant,
      ...(call === undefined ? {} : { call }),
    });
  }

  async invoke<S extends z.ZodMiniObject, R extends JsonObject>(
    tool: ToolDefinition<S, R>,
    identity: Identity,
    input: unknown,
    deadline: InvocationDeadline,
  ): Promise<ToolResult<R>> {
    const started = Date.now();
    const trace: CallTrace = {};
    let result: ToolResult<R>;
    try {
      const scope = identitySchema.safeParse(identity);
      if (!scope.success) throw new InternalError(`incomplete identity: ${scope.error.issues[0]?.path.join('.')}`);
      const { clientKey, args } = parseCall(tool, input);
      result = await this.#run(tool, scope.data, clientKey, args, deadline, trace);
    } catch (error) {
      result = this.#failure(tool.name, error);
    }
    try {
      this.#options.onOutcome?.({
        tool: tool.name,
        outcome: outcomeOf(result),
        ...(result.ok && result.idempotent ? { replay: trace.replay ?? 'client_key' } : {}),
        latencyMs: Date.now() - started,
      });
    } catch (error) {
      // A metric that fails must not change an answer whose effect is stored.
      this.#options.logger?.error('recording a call outcome failed', { tool: tool.name, error: error as Error });
    }
    return result;
  }

  async #run<S extends z.ZodMiniObject, R extends JsonObject>(
    tool: ToolDefinition<S, R>,
    identity: Identity,
    clientKey: string,
    args: z.output<S>,
    deadline: InvocationDeadline,
    trace: CallTrace,
  ): Promise<ToolResult<R>> {
    const ttlSeconds = tool.ttlSeconds ?? DEFAULT_TTL_SECONDS;
    // The deadline is read once: the check and the lock must agree. Without a positive deadline
    // Powertools writes no lock expiry, and a crashed call would hold the key until the TTL; a
    // deadline past the TTL could let the record expire mid-execution.
    const remainingMs = deadline.getRemainingTimeInMillis();
    if (!(remainingMs > 0 && remainingMs < ttlSeconds * 1000)) {
      throw new InternalError(`invocation deadline ${remainingMs} ms is not within (0, ${ttlSeconds} s)`);
    }
    const lockEnds = Date.now() + remainingMs;
    const lock = { getRemainingTimeInMillis: () => Math.max(1, lockEnds - Date.now()) };

    const config = new IdempotencyConfig({
      eventKeyJmesPath: 'scope',
      payloadValidationJmesPath: 'fingerprint',
      throwOnNoIdempotencyKey: true,
      expiresAfterSeconds: ttlSeconds,
      hashFunction: 'sha256',
      // Powertools reads only getRemainingTimeInMillis() from the context.
      lambdaContext: lock as Context,
      responseHook: (response) => {
        trace.replay = 'client_key'; // the stored record of this key answered
        return { ...(response as unknown as StoredResult), replayed: true };
      },
    });
    if (!config.isEnabled()) {
      // POWERTOOLS_IDEMPOTENCY_DISABLED would make every call execute: refuse to run writes instead.
      throw new InternalError('idempotency is disabled by POWERTOOLS_IDEMPOTENCY_DISABLED');
    }
    // The claim carries what it takes to finish the call if this worker dies (the completer).
    const call = canonicalize({ user: identity.user, key: clientKey, args }) as string;
    const persistenceStore = this.#persistenceFor(tool.name, identity, call);

    const natural = tool.naturalKey ? naturalKeyOf(args as JsonObject, tool.naturalKey) : undefined;
    const ownDownstreamKey = downstreamKey(
      tool.name,
      identity,
      natural ? { kind: 'natural', naturalKey: natural } : { kind: 'client', user: identity.user, clientKey },
    );
    const argsFingerprint = fingerprint(args as JsonObject);
    const window = tool.dedupeWindowSeconds;
    const intents = window === undefined ? undefined : this.#intents;
    const intent = { tool: tool.name, identity, fingerprint: argsFingerprint };
    const logger = this.#options.logger;
    const execute = makeIdempotent(
      // The claim payload is read by Powertools (hashed); the tool works on the validated arguments.
      async function executeTool(_claim: ClaimPayload): Promise<StoredResult> {
        // An earlier attempt of this very call may have run under another downstream key (it took a
        // dedupe window's intent over): this one runs under it too, and finds that effect.
        let runUnder = persistenceStore.inheritedDownstreamKey ?? ownDownstreamKey;
        const owner = { recordKey: persistenceStore.claimedRecordKey!, claimId: persistenceStore.claimId! };
        if (intents && persistenceStore.inheritedDownstreamKey === undefined) {
          // A dedupe window: this call runs only if it owns the intent for these arguments.
          const claimed = await intents.claim(intent, owner, ownDownstreamKey, window!);
          if (claimed.kind === 'done') {
            trace.replay = 'dedupe_window';
            return { ...claimed.result, replayed: true }; // a stored failure stays a failure
          }
          if (claimed.kind === 'running') throw new IntentRunningError(claimed.lockEndsMs);
          runUnder = claimed.downstreamKey;
          // Taken over: every later attempt of this call (a retry, the completer) must run under it too.
          if (runUnder !== ownDownstreamKey) await persistenceStore.recordDownstreamKey(runUnder);
        }
        let execution: Awaited<ReturnType<typeof tool.execute>>;
        try {
          execution = await tool.execute(args, { identity, downstreamKey: runUnder });
        } catch (error) {
          // A business error (nothing happened) releases the claim (Powertools) and the intent, so a
          // corrected call runs. Not an outage or a bug: the effect may have been made.
          if (intents && error instanceof ToolError && RELEASING_CODES.has(error.code)) {
            await intents.release(intent, owner);
          }
          throw error;
        }
        try {
          // The tool found its effect already made: under the natural key, or its own (client) key.
          if (execution.replayed) trace.replay = tool.naturalKey ? 'natural_key' : 'client_key';
          return { receipt: encodeReceipt(tool.name, execution.receipt), replayed: execution.replayed };
        } catch (error) {
          // The effect ran: releasing the claim would let a retry run it again. Store the failure.
          logger?.error('tool call failed', { tool: tool.name, code: 'internal', error: error as Error });
          return { failure: 'internal', replayed: execution.replayed };
        }
      },
      { persistenceStore, config, keyPrefix: tool.name },
    );

    try {
      // The claim payload holds no arguments, only their fingerprint.
      const stored = (await execute({
        scope: [identity.tenant, identity.user, clientKey],
        fingerprint: argsFingerprint,
      })) as unknown as StoredResult;
      return answerOf<R>(stored, clientKey);
    } catch (error) {
      if (error instanceof IdempotencyAlreadyInProgressError) {
        const lockEnds = persistenceStore.existingRecord?.inProgressExpiryTimestamp;
        return { ok: false, status: 'pending', key: clientKey, retry_after_ms: retryAfterMs(lockEnds) };
      }
      if (error instanceof IntentRunningError) {
        return { ok: false, status: 'pending', key: clientKey, retry_after_ms: retryAfterMs(error.lockEndsMs) };
      }
      if (error instanceof InFlightError) {
        return {
          ok: false,
          status: 'pending',
          key: clientKey,
          retry_after_ms: retryAfterMs(Date.now() + error.retryAfterMs),
        };
      }
      throw error;
    }
  }

  /**
   * The caller's own record for a client key ("the idempotency table is the poll"): the stored receipt, a
   * call still in flight, or undefined when there is none (never called, expired, released, or
   * someone else's — the key is hashed with the caller's tenant and user, so another's is unreachable).
   */
  async lookup(toolName: string, identity: Identity, clientKey: string): Promise<Operation<JsonObject> | undefined> {
    const persistenceStore = this.#persistenceFor(toolName, identity);
    // The same key derivation as `invoke` (Powertools hashes the `scope` selection), without payload
    // validation: a poll has no arguments to compare.
    persistenceStore.configure({
      config: new IdempotencyConfig({
        eventKeyJmesPath: 'scope',
        throwOnNoIdempotencyKey: true,
        hashFunction: 'sha256',
      }),
      keyPrefix: toolName,
    });
    let record: Awaited<ReturnType<typeof persistenceStore.getRecord>>;
    try {
      record = await persistenceStore.getRecord({ scope: [identity.tenant, identity.user, clientKey] });
    } catch (error) {
      if (error instanceof IdempotencyItemNotFoundError) return undefined;
      // Classified like a write: an outage is `unavailable`, a deployment mistake `internal`; logged.
      const failure = toToolError(error);
      this.#options.logger?.error('operation lookup failed', {
        tool: toolName,
        code: failure.code,
        error: error as Error,
      });
      throw failure;
    }
    if (record.isExpired()) return undefined;
    if (record.getStatus() !== IdempotencyRecordStatus.COMPLETED) {
      const lockEnds = record.inProgressExpiryTimestamp;
      return lockEnds !== undefined && lockEnds < Date.now() ? { status: 'abandoned' } : { status: 'pending' };
    }
    const stored = record.getResponse() as unknown as StoredResult;
    if (stored.receipt === undefined) throw new InternalError(`the stored outcome of ${toolName} is a failure`);
    return { status: 'completed', receipt: decodeReceipt(stored.receipt) };
  }

  #failure(tool: string, error: unknown): ToolResult<never> {
    const toolError = toToolError(error);
    if (!toolError.expose || toolError.code === 'unavailable') {
      this.#options.logger?.error('tool call failed', { tool, code: toolError.code, error: error as Error });
    }
    return {
      ok: false,
      error: { code: toolError.code, message: toolError.expose ? toolError.message : INTERNAL_MESSAGE },
    };
  }
}

/**
 * Another call (with another client key) is running the same intent inside its dedupe window: this
 * call's claim is released and it is answered `pending`; its retry gets that call's receipt.
 */
class IntentRunningError extends Error {
  constructor(readonly lockEndsMs: number | undefined) {
    super('the same intent is being run by another call');
    this.name = 'IntentRunningError';
  }
}

/** The business errors after which nothing happened, so a dedupe window's intent is freed. */
const RELEASING_CODES: ReadonlySet<ErrorCode> = new Set(['invalid_args', 'not_found', 'conflict']);

/** The natural key's fields and values, from the validated arguments. */
function naturalKeyOf(args: JsonObject, fields: readonly string[]): JsonObject {
  return Object.fromEntries(fields.map((field) => [field, args[field] ?? null]));
}

/** When to poll again: soon, but never past the running call's lock. */
function retryAfterMs(lockEnds: number | undefined): number {
  const untilLockEnds = lockEnds === undefined ? MAX_RETRY_AFTER_MS : lockEnds - Date.now();
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(MIN_RETRY_AFTER_MS, Math.ceil(untilLockEnds)));
}

/**
 * Every failure becomes one of the closed set of codes. Powertools' errors are translated here, next
 * to the call that raises them; a business error thrown by a tool passes through as it is (Powertools
 * has already released the claim for it).
 */
function toToolError(error: unknown): ToolError {
  if (error instanceof ToolError) return error;
  if (error instanceof IdempotencyValidationError) {
    return new ConflictError('idempotency_key: already used with different arguments', { cause: error });
  }
  if (error instanceof IdempotencyPersistenceLayerError) {
    const cause = error.cause;
    if (cause instanceof ClaimLostError) {
      // The side effect ran; another call holds the key now, under the same downstream key.
      return new UnavailableError('the write may have been applied; retry with the same key to read its result', {
        cause: error,
      });
    }
    const storeError = cause instanceof ResultNotStoredError ? cause.cause : cause;
    if (!isTransientAwsError(storeError)) {
      // A missing table, a denied action, a malformed request: a deployment mistake, not an outage.
      return new InternalError('the idempotency store refused the request', { cause: error });
    }
    if (cause instanceof ResultNotStoredError) {
      // The side effect ran; its receipt could not be stored. The retry (after the lock) runs the
      // tool again under the same downstream key, and the tool finds its own effect.
      return new UnavailableError('the write may have been applied; retry with the same key to read its result', {
        cause: error,
      });
    }
    return new UnavailableError('the idempotency store is unavailable; retry later', { cause: error });
  }
  if (isTransientAwsError(error)) {
    return new UnavailableError('a store is unavailable; retry with the same key', { cause: error });
  }
  if (error instanceof IdempotencyInconsistentStateError || error instanceof IdempotencyItemNotFoundError) {
    return new UnavailableError('the idempotency record changed while it was read; retry', { cause: error });
  }
  if (error instanceof IdempotencyKeyError) {
    return new InvalidArgsError('idempotency_key: missing', { cause: error });
  }
  return new InternalError(error instanceof Error ? error.message : 'unknown failure', { cause: error });
}
