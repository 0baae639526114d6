import { randomUUID } from 'node:crypto';
import { IdempotencyItemAlreadyExistsError } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { IdempotencyRecord } from '@aws-lambda-powertools/idempotency/persistence';
import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { type CallRecord, callIdOf, classify, isAbandoned, STATUS } from '../call-state';
import type { RecordAttributes } from '../record';
import { callRecordOf } from './call-records';

/**
 * This call's claim is gone (its lock expired and another call took the key over, or the record was
 * erased) by the time it tried to store its result. Its side effects ran, under the same downstream
 * key as the call that holds the key now.
 */
export class ClaimLostError extends Error {
  constructor(options?: ErrorOptions) {
    super('the claim was lost before the result could be stored', options);
    this.name = 'ClaimLostError';
  }
}

/**
 * The side effect ran but its result could not be stored (the store failed the UpdateItem). Raised
 * here, next to the call, so the runtime recognises the case by type — not by Powertools' message.
 */
export class ResultNotStoredError extends Error {
  constructor(options?: ErrorOptions) {
    super('the result could not be stored', options);
    this.name = 'ResultNotStoredError';
  }
}

/**
 * The attempt has no time left for a lock that ends in the future (its invocation is about to end):
 * the caller retries with the same key. Raised before anything is written.
 */
export class NoTimeLeftError extends Error {
  constructor() {
    super('no time is left for a lock that ends in the future');
    this.name = 'NoTimeLeftError';
  }
}

/** The key's record was erased: no claim passes its tombstone until its TTL. */
export class RecordErasedError extends Error {
  constructor() {
    super('the call under this key was erased');
    this.name = 'RecordErasedError';
  }
}

/** A resume (the completer) found no longer the claim it came for: nothing to finish. */
export class NothingToResumeError extends Error {
  constructor() {
    super('the claim to resume is no longer there');
    this.name = 'NothingToResumeError';
  }
}

/**
 * A takeover whose lock would end after its record's TTL: refused, because past the TTL the record
 * counts as expired — a fresh claim, erase and the poll would all treat the running call as gone. The
 * call is pending until the record expires (then a fresh claim runs it, under the same downstream key).
 */
export class LockOutlivesRecordError extends Error {
  constructor(readonly expiresAtMs: number) {
    super("the lock would outlive the record's TTL");
    this.name = 'LockOutlivesRecordError';
  }
}

/** The claim one attempt holds: written once, by the claim, and read by everything after it. */
export interface Claim {
  /** The record's key (also the call's id: the same on every attempt of this client key). */
  readonly key: string;
  /** This attempt's claim id: it alone may store, park or release the record. */
  readonly id: string;
  /** 1 for a first claim, +1 for each takeover of an abandoned attempt. */
  readonly attempt: number;
  /** The downstream key an earlier attempt fixed on the record (it took an intent over), if any. */
  readonly downstreamKey: string | undefined;
  /** The call's id, the same on every attempt of it: what its tool stamps its commit with. */
  readonly callId: string;
  /**
   * When the call was first claimed (epoch ms): the moment the caller asked, which decides the dedupe
   * window it falls in — however late an attempt (a retry, the completer) runs it.
   */
  readonly askedAtMs: number;
}

/** What happens to the claim when the attempt fails. */
export type Settlement =
  /** A business error on a first attempt: nothing happened, the key is free again. */
  | { readonly kind: 'release' }
  /**
   * Anything else: the record is kept, its lock set to `untilMs` — later: pending until then; unset:
   * now (abandoned at once, so a retry or the completer takes it over).
   */
  | { readonly kind: 'park'; readonly untilMs?: number };

/** One attempt of a call, shared by the runtime and its persistence layer. */
export class Attempt {
  #claim: Claim | undefined;
  /** Decided by the runtime when the attempt fails; by default the record is kept and abandoned. */
  settlement: Settlement = { kind: 'park' };
  /** The record that refused this attempt's claim, when one did. */
  refusedBy: CallRecord | undefined;

  constructor(
    /** Take over only this claim, never claim afresh (the completer finishing what it saw). */
    readonly resume?: string,
  ) {}

  get claim(): Claim | undefined {
    return this.#claim;
  }

  /** Set once, by the claim. */
  claimed(claim: Claim): void {
    if (this.#claim) throw new Error('an attempt claims once');
    this.#claim = claim;
  }
}

export interface ScopedPersistenceOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Tool name, stored as the record's `tool` attribute. */
  readonly tool: string;
  /** The record's attribute names. */
  readonly attributes: RecordAttributes;
}

/** What one attempt writes with: the layer holds it from `begin` to `end`. */
export interface AttemptScope {
  /** Tenant of the caller, stored as the record's `tenant` attribute. */
  readonly tenant: string;
  /** The attempt this layer writes for. */
  readonly attempt: Attempt;
  /**
   * What it takes to finish this call if its worker dies (canonical JSON of user, client key and
   * arguments), stored with a first claim and removed with the result. Built only when a claim is
   * written (a replay never needs it).
   * @default undefined
   */
  readonly call?: () => string;
}

/**
 * Powertools' DynamoDB persistence layer for *one attempt of one call*. Reading, hashing, validating
 * the payload and the replay are Powertools' own; every write follows `docs/state-machine.md`:
 *
 *   claim        absent | expired ─────────────▶ live (attempt 1)        PutItem, not exists or expired
 *   takeover     abandoned, same arguments ────▶ live (attempt + 1)      UpdateItem, on the claim it read
 *   store        live (own claim) ─────────────▶ completed               UpdateItem, on its own claim
 *   park         live (own claim) ─────────────▶ abandoned | live later  UpdateItem, on its own claim
 *   release      live (own claim, attempt 1) ──▶ absent                  DeleteItem, on its own claim
 *
 * Anything else refuses the claim: live → `pending`, completed → replay, other arguments →
 * `conflict`, erased → `not_found`. A takeover is an UpdateItem so that what the record holds
 * besides the claim (the downstream key an earlier attempt fixed) survives it in the same write.
 *
 * One attempt at a time, between `begin` and `end`: Powertools keeps per-call state on the persistence
 * layer, so concurrent calls never share one (see `PersistenceLayerPool`). A layer serves one tool only:
 * Powertools fixes the key prefix and the TTL at its first `configure`.
 */
export class ScopedDynamoDBPersistenceLayer extends DynamoDBPersistenceLayer {
  readonly #client: DynamoDBClient;
  readonly #tableName: string;
  readonly #tool: string;
  readonly #attr: RecordAttributes;
  #scope: AttemptScope | undefined;

  constructor(options: ScopedPersistenceOptions) {
    const attr = options.attributes;
    super({
      tableName: options.tableName,
      awsSdkV3Client: options.client,
      keyAttr: attr.key,
      expiryAttr: attr.expiry,
      inProgressExpiryAttr: attr.inProgressExpiry,
      statusAttr: attr.status,
      dataAttr: attr.data,
      validationKeyAttr: attr.validation,
    });
    this.#client = options.client;
    this.#tableName = options.tableName;
    this.#tool = options.tool;
    this.#attr = attr;
  }

  /** Takes on one attempt: every write until `end` is this attempt's. */
  begin(scope: AttemptScope): void {
    if (this.#scope) throw new Error('a persistence layer serves one attempt at a time');
    this.#scope = scope;
  }

  /** Done with the attempt: the layer may serve another. */
  end(): void {
    this.#scope = undefined;
  }

  get #attempt(): Attempt {
    return this.#current.attempt;
  }

  get #current(): AttemptScope {
    if (!this.#scope) throw new Error('the persistence layer serves no attempt (begin was not called)');
    return this.#scope;
  }

  /** The record key Powertools derives for `data` (the poll reads the record under it). */
  recordKeyOf(data: Record<string, unknown>): string {
    return this.getHashedIdempotencyKey(data as never);
  }

  /**
   * Fixes on this attempt's record the downstream key its effect runs under, when it is not the one
   * derived from the call (it takes an intent over), so that every later attempt — a retry, the
   * completer — runs under it too. Conditional on this attempt's claim.
   */
  async fixDownstreamKey(downstreamKey: string): Promise<void> {
    const claim = this.#attempt.claim;
    if (claim === undefined) throw new ClaimLostError();
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#tableName,
          Key: marshall({ [this.#attr.key]: claim.key }),
          UpdateExpression: 'SET #downstream = :downstream',
          ConditionExpression: '#claim = :claim',
          ExpressionAttributeNames: { '#downstream': this.#attr.downstreamKey, '#claim': this.#attr.claim },
          ExpressionAttributeValues: marshall({ ':downstream': downstreamKey, ':claim': claim.id }),
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) throw new ClaimLostError({ cause: error });
      throw error;
    }
  }

  protected override async _putRecord(record: IdempotencyRecord): Promise<void> {
    const now = Date.now();
    if (record.inProgressExpiryTimestamp === undefined || record.inProgressExpiryTimestamp <= now) {
      // A claim without a future lock deadline would hold the key until its TTL (or never hold it).
      throw new NoTimeLeftError();
    }
    const resume = this.#attempt.resume;
    if (resume !== undefined) {
      await this.#takeOver(record, resume, now);
      return;
    }
    const existing = await this.#claim(record, now);
    if (!existing) return;
    const state = classify(existing, now);
    if (state === 'erased') throw new RecordErasedError();
    if (isAbandoned(state) && existing.validation === record.payloadHash && existing.claim !== undefined) {
      await this.#takeOver(record, existing.claim, now);
      return;
    }
    this.#refuse(existing);
  }

  /** A first claim; the item in the way when the key is taken. */
  async #claim(record: IdempotencyRecord, now: number): Promise<CallRecord | undefined> {
    const attr = this.#attr;
    const id = randomUUID();
    const item: Record<string, string | number> = {
      [attr.key]: record.idempotencyKey,
      [attr.status]: STATUS.inProgress,
      [attr.tenant]: this.#current.tenant,
      [attr.tool]: this.#tool,
      [attr.claim]: id,
      [attr.callInstance]: id,
      [attr.attempt]: 1,
      [attr.inProgressExpiry]: record.inProgressExpiryTimestamp!,
    };
    const call = this.#current.call;
    if (call !== undefined) item[attr.call] = call();
    if (record.expiryTimestamp !== undefined) item[attr.expiry] = record.expiryTimestamp;
    if (this.isPayloadValidationEnabled() && record.payloadHash) item[attr.validation] = record.payloadHash;
    try {
      await this.#client.send(
        new PutItemCommand({
          TableName: this.#tableName,
          Item: marshall(item),
          ConditionExpression: 'attribute_not_exists(#id) OR #expiry < :now',
          ExpressionAttributeNames: { '#id': attr.key, '#expiry': attr.expiry },
          ExpressionAttributeValues: marshall({ ':now': now / 1000 }),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException) || !error.Item) throw error;
      return callRecordOf(unmarshall(error.Item), attr);
    }
    this.#attempt.claimed({
      key: record.idempotencyKey,
      id,
      attempt: 1,
      downstreamKey: undefined,
      callId: callIdOf(record.idempotencyKey, id),
      askedAtMs: now,
    });
    return undefined;
  }

  /**
   * Takes over the abandoned attempt `from` — that exact claim, nothing else: an erased, finished or
   * re-claimed record is never taken. Everything else the record holds stays.
   */
  async #takeOver(record: IdempotencyRecord, from: string, now: number): Promise<void> {
    const attr = this.#attr;
    const id = randomUUID();
    const values: Record<string, unknown> = {
      ':from': from,
      ':id': id,
      ':inprogress': STATUS.inProgress,
      ':now_ms': now,
      ':lock': record.inProgressExpiryTimestamp,
      // No lock may end after its record's TTL (a first claim's is checked against the TTL before it).
      ':lock_s': Math.ceil(record.inProgressExpiryTimestamp! / 1000),
      ':one': 1,
    };
    const names: Record<string, string> = {
      '#claim': attr.claim,
      '#status': attr.status,
      '#lock': attr.inProgressExpiry,
      '#expiry': attr.expiry,
      '#attempt': attr.attempt,
    };
    let condition = '#claim = :from AND #status = :inprogress AND #lock < :now_ms AND #expiry >= :lock_s';
    if (this.isPayloadValidationEnabled()) {
      condition += ' AND #validation = :validation';
      names['#validation'] = attr.validation;
      values[':validation'] = record.payloadHash;
    }
    try {
      const { Attributes } = await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#tableName,
          Key: marshall({ [attr.key]: record.idempotencyKey }),
          UpdateExpression: 'SET #claim = :id, #lock = :lock ADD #attempt :one',
          ConditionExpression: condition,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: marshall(values),
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      const taken = callRecordOf(unmarshall(Attributes!), attr);
      this.#attempt.claimed({
        key: record.idempotencyKey,
        id,
        // Records claimed before first claims wrote `attempt` have none: ADD makes their first takeover 1.
        attempt: Math.max(2, taken.attempt),
        downstreamKey: taken.downstreamKey,
        callId: taken.callId,
        // The TTL was set by the first claim (a takeover keeps it): the first claim was TTL earlier.
        askedAtMs: taken.expiresAt === undefined ? now : (taken.expiresAt - this.expiresAfterSeconds) * 1000,
      });
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      if (!error.Item) throw this.#attempt.resume !== undefined ? new NothingToResumeError() : error;
      const existing = callRecordOf(unmarshall(error.Item), attr);
      const state = classify(existing, now);
      if (state === 'erased') throw new RecordErasedError();
      if (
        existing.claim === from &&
        isAbandoned(state) &&
        existing.expiresAt !== undefined &&
        existing.expiresAt * 1000 < record.inProgressExpiryTimestamp!
      ) {
        throw new LockOutlivesRecordError(existing.expiresAt * 1000);
      }
      if (this.#attempt.resume !== undefined && existing.claim !== this.#attempt.resume) {
        // Someone else took it, finished it or it was erased and claimed again: not ours to finish.
        if (state !== 'completed') throw new NothingToResumeError();
      }
      this.#refuse(existing);
    }
  }

  /** Hands the record in the way to Powertools: it answers with the replay, `pending` or `conflict`. */
  #refuse(existing: CallRecord): never {
    this.#attempt.refusedBy = existing;
    throw new IdempotencyItemAlreadyExistsError(
      `Failed to put record for already existing idempotency key: ${existing.key}`,
      new IdempotencyRecord({
        idempotencyKey: existing.key,
        status: existing.status as ReturnType<IdempotencyRecord['getStatus']>,
        expiryTimestamp: existing.expiresAt,
        inProgressExpiryTimestamp: existing.lockEndsMs,
        responseData: existing.outcome as never,
        payloadHash: existing.validation,
      }),
    );
  }

  /**
   * Stores the result — only while this attempt still holds its claim. Powertools updates
   * unconditionally: a worker whose lock expired, and whose key another call took over, would
   * overwrite that call's record (or re-create an erased one). Here it fails with
   * {@link ClaimLostError} instead, and the caller is told to read the result with a retry.
   */
  protected override async _updateRecord(record: IdempotencyRecord): Promise<void> {
    const attr = this.#attr;
    const claim = this.#attempt.claim;
    if (claim === undefined) throw new ClaimLostError();
    const values: Record<string, unknown> = {
      ':expiry': record.expiryTimestamp,
      ':status': record.getStatus(),
      ':data': record.responseData,
      ':claim': claim.id,
    };
    const names: Record<string, string> = {
      '#expiry': attr.expiry,
      '#status': attr.status,
      '#data': attr.data,
      '#claim': attr.claim,
      '#call': attr.call,
    };
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#tableName,
          Key: marshall({ [attr.key]: record.idempotencyKey }),
          // The call's arguments are kept only while it is in flight: a stored receipt is enough after.
          UpdateExpression: 'SET #expiry = :expiry, #status = :status, #data = :data REMOVE #call',
          ConditionExpression: '#claim = :claim',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: marshall(values, { removeUndefinedValues: true }),
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) throw new ClaimLostError({ cause: error });
      throw new ResultNotStoredError({ cause: error });
    }
  }

  /**
   * Called by Powertools when the attempt failed. Powertools deletes the record; here the attempt's
   * settlement decides: a release deletes it (its own claim, still in flight), anything else keeps it
   * and sets its lock — to now (abandoned: a retry or the completer finishes it) or to when the call
   * should be looked at again (pending: a provider still runs the key, an intent's owner still runs).
   */
  protected override async _deleteRecord(record: IdempotencyRecord): Promise<void> {
    const attr = this.#attr;
    const claim = this.#attempt.claim;
    if (claim === undefined) return;
    const settlement = this.#attempt.settlement;
    const names = { '#claim': attr.claim, '#status': attr.status };
    try {
      if (settlement.kind === 'release') {
        await this.#client.send(
          new DeleteItemCommand({
            TableName: this.#tableName,
            Key: marshall({ [attr.key]: record.idempotencyKey }),
            ConditionExpression: '#claim = :claim AND #status = :inprogress',
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: marshall({ ':claim': claim.id, ':inprogress': STATUS.inProgress }),
          }),
        );
        return;
      }
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#tableName,
          Key: marshall({ [attr.key]: record.idempotencyKey }),
          UpdateExpression: 'SET #lock = :until',
          ConditionExpression: '#claim = :claim AND #status = :inprogress',
          ExpressionAttributeNames: { ...names, '#lock': attr.inProgressExpiry },
          ExpressionAttributeValues: marshall({
            ':claim': claim.id,
            ':inprogress': STATUS.inProgress,
            ':until': settlement.untilMs ?? Date.now(),
          }),
        }),
      );
    } catch (error) {
      // Taken over or erased meanwhile: nothing of ours to settle.
      if (error instanceof ConditionalCheckFailedException) return;
      throw error;
    }
  }
}

/**
 * Persistence layers kept for reuse, each for one tool. Building one costs more than the rest of a
 * call's bookkeeping together: Powertools' constructor adds its user-agent middleware, which first
 * lists the client's whole middleware stack (`identify()`) — every time. A layer serves one attempt at
 * a time, so concurrent calls in one process (the local server) take different layers; on Lambda, one
 * call at a time, each tool's layer is built once per container. Layers are kept per tool definition
 * (Powertools fixes the TTL at a layer's first call, and two definitions may share a name), and as many
 * as the process ever ran at once.
 */
export class PersistenceLayerPool {
  readonly #options: Omit<ScopedPersistenceOptions, 'tool'>;
  readonly #idle = new WeakMap<object, ScopedDynamoDBPersistenceLayer[]>();

  constructor(options: Omit<ScopedPersistenceOptions, 'tool'>) {
    this.#options = options;
  }

  /** A layer for `tool`, serving `scope` until it is released. */
  acquire(tool: { readonly name: string }, scope: AttemptScope): ScopedDynamoDBPersistenceLayer {
    const layer =
      this.#idle.get(tool)?.pop() ?? new ScopedDynamoDBPersistenceLayer({ ...this.#options, tool: tool.name });
    layer.begin(scope);
    return layer;
  }

  /** Gives back a layer `acquire` handed out for `tool`, once its attempt is over. */
  release(tool: { readonly name: string }, layer: ScopedDynamoDBPersistenceLayer): void {
    layer.end();
    const idle = this.#idle.get(tool);
    if (idle) idle.push(layer);
    else this.#idle.set(tool, [layer]);
  }
}
