import { randomUUID } from 'node:crypto';
import { IdempotencyItemAlreadyExistsError, IdempotencyRecordStatus } from '@aws-lambda-powertools/idempotency';
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
import type { RecordAttributes } from '../record';

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

export interface ScopedPersistenceOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Tool name, stored as the record's `tool` attribute. */
  readonly tool: string;
  /** Tenant of the caller, stored as the record's `tenant` attribute. */
  readonly tenant: string;
  /** The record's attribute names. */
  readonly attributes: RecordAttributes;
  /**
   * What it takes to finish this call if its worker dies (canonical JSON of user, client key and
   * arguments), stored with the claim and removed with the result.
   * @default undefined (the claim cannot be finished by the completer)
   */
  readonly call?: string;
}

/**
 * Powertools' DynamoDB persistence layer for *one call*: it adds the caller's `tenant` and `tool` to
 * the claim item (so one tenant's records can be found and erased) and a random `claim_id`, so that a
 * failing call only ever releases its own claim.
 *
 * One instance per call, never shared: Powertools keeps per-call state (key prefix, configuration) on
 * the persistence layer, and two concurrent calls sharing one instance could hash with each other's
 * prefix.
 *
 * Everything else — reading, validating the payload hash, storing the result — is Powertools' own.
 */
export class ScopedDynamoDBPersistenceLayer extends DynamoDBPersistenceLayer {
  readonly #client: DynamoDBClient;
  readonly #tableName: string;
  readonly #tool: string;
  readonly #tenant: string;
  readonly #attr: RecordAttributes;
  readonly #call: string | undefined;
  /** The claim this call wrote, if any: the only claim it may release. */
  #claimId: string | undefined;
  /** The downstream key an earlier attempt of this call recorded (see `inheritedDownstreamKey`). */
  #inheritedDownstreamKey: string | undefined;
  /** The record key of that claim. */
  #claimedKey: string | undefined;
  /** The record found in the way of this call's claim, when the claim was refused. */
  #existingRecord: IdempotencyRecord | undefined;

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
    this.#tenant = options.tenant;
    this.#attr = options.attributes;
    this.#call = options.call;
  }

  /** The key of the record this call claimed, once it holds the claim. */
  get claimedRecordKey(): string | undefined {
    return this.#claimId === undefined ? undefined : this.#claimedKey;
  }

  /** The id of the claim this call wrote, once it holds it. */
  get claimId(): string | undefined {
    return this.#claimId;
  }

  /**
   * The downstream key an earlier attempt of this very call (same key, same arguments) ran its effect
   * under, when that was not the call's own — it took a dedupe window's intent over. A retry runs under
   * it too, so it finds that effect instead of making another.
   */
  get inheritedDownstreamKey(): string | undefined {
    return this.#inheritedDownstreamKey;
  }

  /**
   * Records on this call's claim the downstream key its effect runs under (when it is not the call's
   * own), so every later attempt of the call — a retry, the completer — uses it. Conditional on the claim.
   */
  async recordDownstreamKey(downstreamKey: string): Promise<void> {
    if (this.#claimId === undefined || this.#claimedKey === undefined) throw new ClaimLostError();
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#tableName,
          Key: marshall({ [this.#attr.key]: this.#claimedKey }),
          UpdateExpression: 'SET #downstream = :downstream',
          ConditionExpression: '#claim = :claim',
          ExpressionAttributeNames: { '#downstream': this.#attr.downstreamKey, '#claim': this.#attr.claim },
          ExpressionAttributeValues: marshall({ ':downstream': downstreamKey, ':claim': this.#claimId }),
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) throw new ClaimLostError({ cause: error });
      throw error;
    }
  }

  /** The record that refused this call's claim (for a retry-after hint), if one did. */
  get existingRecord(): IdempotencyRecord | undefined {
    return this.#existingRecord;
  }

  /**
   * The claim: a conditional PutItem, with Powertools' own condition plus one guard: an expired lock
   * is taken over only by a call with the same fingerprint.
   *
   * The put succeeds when no live record holds the key:
   *
   *   no item ─────────────────────────────▶ claim      attribute_not_exists(id)
   *   COMPLETED, expiration < now ─────────▶ claim      (TTL passed; DynamoDB may not have deleted it yet)
   *   INPROGRESS, lock deadline < now,
   *     same fingerprint ──────────────────▶ claim      (the first worker died or timed out)
   *   INPROGRESS, lock deadline < now,
   *     other fingerprint ─────────────────▶ refused → `conflict` (never run other arguments under the key)
   *   INPROGRESS, lock still running ──────▶ refused → `pending`
   *   COMPLETED, not expired ──────────────▶ refused → replay (or `conflict` if the fingerprint differs)
   *
   * Expiry is decided here, by the condition, and never by the item being gone: DynamoDB deletes
   * expired items up to about 48 hours late.
   */
  protected override async _putRecord(record: IdempotencyRecord): Promise<void> {
    const attr = this.#attr;
    const claimId = randomUUID();
    const item: Record<string, string | number> = {
      [attr.key]: record.idempotencyKey,
      [attr.status]: record.getStatus(),
      [attr.tenant]: this.#tenant,
      [attr.tool]: this.#tool,
      [attr.claim]: claimId,
    };
    if (this.#call !== undefined) item[attr.call] = this.#call;
    if (record.expiryTimestamp !== undefined) item[attr.expiry] = record.expiryTimestamp;
    if (record.inProgressExpiryTimestamp !== undefined) item[attr.inProgressExpiry] = record.inProgressExpiryTimestamp;
    if (this.isPayloadValidationEnabled() && record.payloadHash) item[attr.validation] = record.payloadHash;
    // A claim without a future lock deadline would hold the key until its TTL (or never hold it).
    const now = Date.now();
    if (record.inProgressExpiryTimestamp === undefined || record.inProgressExpiryTimestamp <= now) {
      throw new Error('refusing a claim without a lock deadline in the future');
    }

    try {
      const response = await this.#client.send(
        new PutItemCommand({
          TableName: this.#tableName,
          Item: marshall(item),
          ConditionExpression:
            'attribute_not_exists(#id) OR #expiry < :now OR ' +
            '(#status = :inprogress AND attribute_exists(#in_progress_expiry) AND #in_progress_expiry < :now_in_millis' +
            ' AND #validation = :validation)',
          ExpressionAttributeNames: {
            '#id': attr.key,
            '#expiry': attr.expiry,
            '#status': attr.status,
            '#in_progress_expiry': attr.inProgressExpiry,
            '#validation': attr.validation,
          },
          ExpressionAttributeValues: marshall({
            ':now': now / 1000,
            ':now_in_millis': now,
            ':inprogress': IdempotencyRecordStatus.INPROGRESS,
            ':validation': record.payloadHash ?? '',
          }),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          // The item this claim replaced (an expired one): an earlier attempt may have recorded the
          // downstream key its effect ran under. Free on a successful put.
          ReturnValues: 'ALL_OLD',
        }),
      );
      this.#claimId = claimId;
      this.#claimedKey = record.idempotencyKey;
      const earlier = response?.Attributes ? unmarshall(response.Attributes) : undefined;
      const recorded = earlier?.[attr.downstreamKey];
      if (typeof recorded === 'string' && earlier?.[attr.validation] === item[attr.validation]) {
        this.#inheritedDownstreamKey = recorded;
        // Kept on the new claim too, for the attempts after this one.
        await this.recordDownstreamKey(recorded);
      }
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const existing = error.Item ? this.#toRecord(unmarshall(error.Item)) : undefined;
        this.#existingRecord = existing;
        throw new IdempotencyItemAlreadyExistsError(
          `Failed to put record for already existing idempotency key: ${record.idempotencyKey}`,
          existing,
        );
      }
      throw error;
    }
  }

  /**
   * Stores the result — only while this call still holds its claim. Powertools updates
   * unconditionally: a worker whose lock expired, and whose key another call took over, would
   * overwrite that call's record (or re-create an erased one). Here it fails with
   * {@link ClaimLostError} instead, and the caller is told to read the result with a retry.
   */
  protected override async _updateRecord(record: IdempotencyRecord): Promise<void> {
    const attr = this.#attr;
    if (this.#claimId === undefined) throw new ClaimLostError();
    const values: Record<string, unknown> = {
      ':expiry': record.expiryTimestamp,
      ':status': record.getStatus(),
      ':data': record.responseData,
      ':claim': this.#claimId,
    };
    const names: Record<string, string> = {
      '#expiry': attr.expiry,
      '#status': attr.status,
      '#data': attr.data,
      '#claim': attr.claim,
      '#call': attr.call,
    };
    const sets = ['#expiry = :expiry', '#status = :status', '#data = :data'];
    if (this.isPayloadValidationEnabled()) {
      sets.push('#validation = :validation');
      names['#validation'] = attr.validation;
      values[':validation'] = record.payloadHash;
    }
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#tableName,
          Key: marshall({ [attr.key]: record.idempotencyKey }),
          // The call's arguments are kept only while it is in flight: a stored receipt is enough after.
          UpdateExpression: `SET ${sets.join(', ')} REMOVE #call`,
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
   * Releases this call's claim after its function failed. Powertools deletes unconditionally; here
   * the delete only removes the claim this call wrote: if its lock expired and another call took the
   * key over, that call's claim (or its stored receipt) stays.
   */
  protected override async _deleteRecord(record: IdempotencyRecord): Promise<void> {
    const attr = this.#attr;
    if (this.#claimId === undefined) return;
    try {
      await this.#client.send(
        new DeleteItemCommand({
          TableName: this.#tableName,
          Key: marshall({ [attr.key]: record.idempotencyKey }),
          ConditionExpression: '#claim = :claim AND #status = :inprogress',
          ExpressionAttributeNames: { '#claim': attr.claim, '#status': attr.status },
          ExpressionAttributeValues: marshall({
            ':claim': this.#claimId,
            ':inprogress': IdempotencyRecordStatus.INPROGRESS,
          }),
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return;
      throw error;
    }
  }

  #toRecord(item: Record<string, unknown>): IdempotencyRecord {
    const attr = this.#attr;
    return new IdempotencyRecord({
      idempotencyKey: item[attr.key] as string,
      status: item[attr.status] as ReturnType<IdempotencyRecord['getStatus']>,
      expiryTimestamp: item[attr.expiry] as number | undefined,
      inProgressExpiryTimestamp: item[attr.inProgressExpiry] as number | undefined,
      responseData: item[attr.data] as Record<string, string>,
      payloadHash: item[attr.validation] as string | undefined,
    });
  }
}
