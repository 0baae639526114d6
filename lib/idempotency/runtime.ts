import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyInconsistentStateError,
  IdempotencyItemNotFoundError,
  IdempotencyKeyError,
  IdempotencyPersistenceLayerError,
  IdempotencyValidationError,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Context } from 'aws-lambda';
import canonicalize from 'canonicalize';
import * as z from 'zod/mini';
import { parseCall } from './arguments';
import { classify, type StoredOutcome } from './call-state';
import {
  ConflictError,
  type ErrorCode,
  INTERNAL_MESSAGE,
  InFlightError,
  InternalError,
  InvalidArgsError,
  isTransientAwsError,
  NotFoundError,
  StoredFailureError,
  ToolError,
  UnavailableError,
} from './errors';
import { downstreamKey, fingerprint } from './fingerprint';
import { CallRecords } from './persistence/call-records';
import { IntentStore } from './persistence/intents';
import {
  Attempt,
  ClaimLostError,
  LockOutlivesRecordError,
  NoTimeLeftError,
  NothingToResumeError,
  PersistenceLayerPool,
  RecordErasedError,
  ResultNotStoredError,
  ScopedDynamoDBPersistenceLayer,
} from './persistence/scoped-dynamodb';
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
  | { status: 'abandoned' }
  /** Abandoned, and the completer gave up on it after its attempts: only a resend with its key finishes it. */
  | { status: 'stalled' };

/** The answer a stored outcome gives, first time or replayed. */
function answerOf<R extends JsonObject>(stored: StoredOutcome, clientKey: string): ToolResult<R> {
  if (stored.receipt === undefined) return { ok: false, idempotent: stored.replayed, error: failureOf(stored) };
  return { ok: true, idempotent: stored.replayed, key: clientKey, receipt: decodeReceipt<R>(stored.receipt) };
}

/** A stored failure as the caller may see it: `internal` never shows its message. */
function failureOf(stored: StoredOutcome): { code: ErrorCode; message: string } {
  const code = stored.failure ?? 'internal';
  return { code, message: code === 'internal' ? INTERNAL_MESSAGE : (stored.message ?? code) };
}

/** How an invocation is run. */
export interface InvokeOptions {
  /**
   * Finish an abandoned call: take over exactly this claim, or do nothing (never a fresh claim). The
   * completer's way in — an erased, finished or re-claimed record is never brought back.
   * @default undefined (a caller's call: claim, or take over an abandoned attempt of the same arguments)
   */
  readonly resume?: { readonly claim: string };
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
  readonly #records: CallRecords;
  /** Persistence layers per tool, reused call after call (see `PersistenceLayerPool`). */
  readonly #layers: PersistenceLayerPool;
  readonly #keyLayers = new Map<string, ScopedDynamoDBPersistenceLayer>();

  constructor(options: ToolRuntimeOptions) {
    this.#options = options;
    this.#tableName = options.tableName ?? DEFAULT_IDEMPOTENCY_TABLE_NAME;
    this.#attributes = { ...DEFAULT_RECORD_ATTRIBUTES, ...options.attributes };
    this.#intents = new IntentStore(options.client, this.#tableName, this.#attributes);
    this.#records = new CallRecords(options.client, this.#tableName, this.#attributes);
    this.#layers = new PersistenceLayerPool({
      client: options.client,
      tableName: this.#tableName,
      attributes: this.#attributes,
    });
  }

  async invoke<S extends z.ZodMiniObject, R extends JsonObject>(
    tool: ToolDefinition<S, R>,
    identity: Identity,
    input: unknown,
    deadline: InvocationDeadline,
    options: InvokeOptions = {},
  ): Promise<ToolResult<R>> {
    const started = Date.now();
    const trace: CallTrace = {};
    let result: ToolResult<R>;
    try {
      const scope = identitySchema.safeParse(identity);
      if (!scope.success) throw new InternalError(`incomplete identity: ${scope.error.issues[0]?.path.join('.')}`);
      const { clientKey, args } = parseCall(tool, input);
      result = await this.#run(tool, scope.data, clientKey, args, deadline, trace, options);
    } catch (error) {
      result = this.#failure(tool.name, error);
    }
    try {
      this.#options.onOutcome?.(
        {
          tool: tool.name,
          outcome: outcomeOf(result),
          ...(result.ok && result.idempotent ? { replay: trace.replay ?? 'client_key' } : {}),
          latencyMs: Date.now() - started,
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
    return result;
  }

  /**
   * One attempt of a call, in named phases: check the time → claim (Powertools: claim, or replay /
   * pending / conflict) → choose the downstream key (a dedupe window's intent) → execute → store the
   * outcome, or settle the claim (release on a first attempt's business error, otherwise keep it).
   */
  async #run<S extends z.ZodMiniObject, R extends JsonObject>(
    tool: ToolDefinition<S, R>,
    identity: Identity,
    clientKey: string,
    args: z.output<S>,
    deadline: InvocationDeadline,
    trace: CallTrace,
    options: InvokeOptions,
  ): Promise<ToolResult<R>> {
    const ttlSeconds = tool.ttlSeconds ?? DEFAULT_TTL_SECONDS;
    // The deadline is read once: the check and the lock must agree.
    const remainingMs = deadline.getRemainingTimeInMillis();
    if (!(remainingMs > 0)) {
      // No time left to claim, let alone run: the caller retries with the same key.
      throw new UnavailableError('no time was left for this call; retry with the same key');
    }
    if (remainingMs >= ttlSeconds * 1000) {
      // A lock past the TTL could let the record expire mid-execution: a deployment mistake.
      throw new InternalError(`invocation deadline ${remainingMs} ms is not within the ${ttlSeconds} s TTL`);
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
        return { ...(response as unknown as StoredOutcome), replayed: true };
      },
    });
    if (!config.isEnabled()) {
      // POWERTOOLS_IDEMPOTENCY_DISABLED would make every call execute: refuse to run writes instead.
      throw new InternalError('idempotency is disabled by POWERTOOLS_IDEMPOTENCY_DISABLED');
    }
    const argsFingerprint = fingerprint(args as JsonObject);
    const attempt = new Attempt(options.resume?.claim);
    const window = tool.dedupeWindowSeconds;
    const intents = window === undefined ? undefined : this.#intents;
    const intent = { tool: tool.name, identity, fingerprint: argsFingerprint };
    const logger = this.#options.logger;

    /** Phase: the downstream key — the record's fixed one, the call's own, or a dedupe window's. */
    async function chooseDownstreamKey(): Promise<
      { downstreamKey: string; createdIntent: boolean } | { done: StoredOutcome }
    > {
      const claim = attempt.claim!;
      // Derived only once claimed (a replay never needs it). Other arguments under a reused client
      // key get another downstream key: they can never meet this call's effect (nor be refused as its
      // conflict).
      const natural = tool.naturalKey ? naturalKeyOf(args as JsonObject, tool.naturalKey) : undefined;
      const ownDownstreamKey = downstreamKey(
        tool.name,
        identity,
        natural
          ? { kind: 'natural', naturalKey: natural }
          : { kind: 'client', user: identity.user, clientKey, fingerprint: argsFingerprint },
      );
      if (claim.downstreamKey !== undefined || !intents) {
        return { downstreamKey: claim.downstreamKey ?? ownDownstreamKey, createdIntent: false };
      }
      const owner = { recordKey: claim.key, claimId: claim.id, callId: claim.callId };
      const claimed = await intents.claim(
        intent,
        owner,
        ownDownstreamKey,
        window!,
        ttlSeconds,
        claim.askedAtMs,
        (key) => persistenceStore.fixDownstreamKey(key),
      );
      if (claimed.kind === 'running') {
        // Pending, and pollable: this call's record stays in flight until it is told to retry; then a
        // retry (or the completer) takes it over and finds the owner's outcome.
        attempt.settlement = { kind: 'park', untilMs: Date.now() + retryAfterMs(claimed.lockEndsMs) };
        throw new IntentRunningError(claimed.lockEndsMs);
      }
      // The owner's outcome answers, unless it was itself a replay: then the effect's commit may be
      // this call's own (an earlier attempt of it), and only the tool, under the intent's key, can tell.
      if (claimed.kind === 'done' && !(claimed.outcome.replayed && claimed.outcome.receipt !== undefined)) {
        return { done: claimed.outcome };
      }
      if (claimed.kind === 'done' && claimed.downstreamKey !== ownDownstreamKey) {
        // Running under the intent's key: fixed on this call's record first, like a takeover, so that a
        // later attempt runs under it even if the intent is gone by then.
        await persistenceStore.fixDownstreamKey(claimed.downstreamKey);
      }
      // Only an intent this very call created may be freed by its business error: one taken over may
      // hold a dead holder's effect.
      return { downstreamKey: claimed.downstreamKey, createdIntent: claimed.kind === 'owned' && claimed.created };
    }

    /** Phase: the effect. A failure decides what becomes of the claim (see `Attempt.settlement`). */
    async function executeOnce(runUnder: string, createdIntent: boolean): Promise<StoredOutcome> {
      const claim = attempt.claim!;
      let execution: Awaited<ReturnType<typeof tool.execute>>;
      try {
        execution = await tool.execute(args, { identity, downstreamKey: runUnder, callId: claim.callId });
      } catch (error) {
        if (error instanceof ToolError && RELEASING_CODES.has(error.code)) {
          if (claim.attempt > 1) {
            // An earlier attempt may have made the effect: the failure becomes the call's outcome.
            return { replayed: false, failure: error.code, message: error.message };
          }
          // A first attempt's business error: nothing happened, the key (and an intent it created) are free.
          attempt.settlement = { kind: 'release' };
          if (createdIntent) {
            await intents?.release(intent, { recordKey: claim.key, claimId: claim.id, callId: claim.callId });
          }
        } else if (error instanceof InFlightError) {
          attempt.settlement = { kind: 'park', untilMs: Date.now() + error.retryAfterMs };
        }
        throw error;
      }
      if (execution.replayed) trace.replay = tool.naturalKey ? 'natural_key' : 'client_key';
      try {
        return { receipt: encodeReceipt(tool.name, execution.receipt), replayed: execution.replayed };
      } catch (error) {
        // The effect ran: releasing the claim would let a retry run it again. Store the failure.
        logger?.error('tool call failed', { tool: tool.name, code: 'internal', error: error as Error });
        return { failure: 'internal', replayed: execution.replayed };
      }
    }

    const persistenceStore = this.#layers.acquire(tool, {
      tenant: identity.tenant,
      attempt,
      // The claim carries what it takes to finish the call if this worker dies (the completer).
      call: () => canonicalize({ user: identity.user, key: clientKey, args }) as string,
    });
    const execute = makeIdempotent(
      // The claim payload is read by Powertools (hashed); the tool works on the validated arguments.
      async function executeTool(_claim: ClaimPayload): Promise<StoredOutcome> {
        const chosen = await chooseDownstreamKey();
        if ('done' in chosen) {
          trace.replay = 'dedupe_window';
          return { ...chosen.done, replayed: true }; // a stored failure stays a failure
        }
        return executeOnce(chosen.downstreamKey, chosen.createdIntent);
      },
      { persistenceStore, config, keyPrefix: tool.name },
    );

    try {
      // The claim payload holds no arguments, only their fingerprint.
      const stored = (await execute({
        scope: [identity.tenant, identity.user, clientKey],
        fingerprint: argsFingerprint,
      })) as unknown as StoredOutcome;
      return answerOf<R>(stored, clientKey);
    } catch (error) {
      const pendingUntil =
        error instanceof IdempotencyAlreadyInProgressError
          ? attempt.refusedBy?.lockEndsMs
          : error instanceof IntentRunningError
            ? error.lockEndsMs
            : error instanceof InFlightError
              ? Date.now() + error.retryAfterMs
              : error instanceof IdempotencyPersistenceLayerError && error.cause instanceof LockOutlivesRecordError
                ? error.cause.expiresAtMs
                : null;
      if (pendingUntil === null) throw error;
      return { ok: false, status: 'pending', key: clientKey, retry_after_ms: retryAfterMs(pendingUntil) };
    } finally {
      this.#layers.release(tool, persistenceStore);
    }
  }

  /**
   * The caller's own record for a client key ("the idempotency table is the poll"): the stored outcome,
   * a call in flight or abandoned, or undefined when there is none (never called, expired, released,
   * erased, or someone else's — the key is hashed with the caller's tenant and user, so another's is
   * unreachable).
   */
  async lookup(toolName: string, identity: Identity, clientKey: string): Promise<Operation<JsonObject> | undefined> {
    const key = this.#keyLayer(toolName).recordKeyOf({ scope: [identity.tenant, identity.user, clientKey] });
    let record: Awaited<ReturnType<CallRecords['read']>>;
    try {
      record = await this.#records.read(key);
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
    switch (classify(record, Date.now())) {
      case 'live':
        return { status: 'pending' };
      case 'abandoned':
        return { status: 'abandoned' };
      case 'stalled':
        return { status: 'stalled' };
      case 'completed': {
        const outcome = record!.outcome;
        // A stored failure answers the poll as it answered the call.
        if (outcome?.receipt === undefined) throw new StoredFailureError(failureOf(outcome ?? { replayed: false }));
        return { status: 'completed', receipt: decodeReceipt(outcome.receipt) };
      }
      default:
        return undefined;
    }
  }

  /**
   * A layer that only derives `tool`'s record keys, as `invoke` does (Powertools hashes the `scope`
   * selection): it writes nothing, so one per tool serves every lookup.
   */
  #keyLayer(tool: string): ScopedDynamoDBPersistenceLayer {
    let layer = this.#keyLayers.get(tool);
    if (!layer) {
      layer = new ScopedDynamoDBPersistenceLayer({
        client: this.#options.client,
        tableName: this.#tableName,
        attributes: this.#attributes,
        tool,
      });
      layer.configure({
        config: new IdempotencyConfig({
          eventKeyJmesPath: 'scope',
          throwOnNoIdempotencyKey: true,
          hashFunction: 'sha256',
        }),
        keyPrefix: tool,
      });
      this.#keyLayers.set(tool, layer);
    }
    return layer;
  }

  #failure(tool: string, error: unknown): ToolResult<never> {
    const toolError = toToolError(error);
    const timeLeft = this.#options.storeTimeLeft?.();
    if (toolError.code === 'unavailable' && timeLeft !== undefined && timeLeft <= 0) {
      // The invocation's time is up (the tool ran until its deadline): not a fault of the store, and no
      // stack to read. The claim keeps its lock, which ends with the invocation: abandoned, to be finished.
      this.#options.logger?.warn(
        'tool call ran out of time: it stays in flight for a retry with its key or the completer',
        {
          tool,
          code: toolError.code,
        },
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
 * Another call (with another client key) is running the same intent inside its dedupe window: this
 * call's record stays in flight until that call's lock ends, and it is answered `pending`; its retry
 * (or the completer) then gets that call's outcome.
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
    if (cause instanceof RecordErasedError) {
      return new NotFoundError('idempotency_key: the call under this key was erased', { cause: error });
    }
    if (cause instanceof NoTimeLeftError) {
      return new UnavailableError('no time was left for this call; retry with the same key', { cause: error });
    }
    if (cause instanceof NothingToResumeError) {
      return new NotFoundError('idempotency_key: nothing to resume under this key', { cause: error });
    }
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
