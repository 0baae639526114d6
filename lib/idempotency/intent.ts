import { createHash } from 'node:crypto';
import { IdempotencyRecordStatus } from '@aws-lambda-powertools/idempotency';
import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import type { RecordAttributes } from './record';
import type { Identity } from './types';

/**
 * An intent: "this tenant's user asked this tool for these exact arguments", held for a dedupe window
 * whatever client key each call carries. The first call's claim owns it; a call with a fresh key
 * inside the window answers the owner's receipt instead of running.
 *
 * Item: `<tool>#intent#<sha256(tenant, user, fingerprint)>`, with the owner's record key, the
 * downstream key the effect runs under, and the window's end in the TTL attribute.
 */
export interface IntentScope {
  readonly tool: string;
  readonly identity: Identity;
  readonly fingerprint: string;
}

/** The call that owns (or wants) an intent: its record and the claim it holds on it. */
export interface IntentOwner {
  readonly recordKey: string;
  readonly claimId: string;
}

/** What claiming an intent found. */
export type IntentClaim =
  /** This call owns the intent (new, or taken over from an owner that died): run under `downstreamKey`. */
  | { readonly kind: 'owned'; readonly downstreamKey: string }
  /** Another call did it: its stored result (the receipt text and whether it was itself a replay). */
  | { readonly kind: 'done'; readonly result: { receipt: string; replayed: boolean } }
  /** Another call is doing it now; its lock ends at `lockEndsMs`. */
  | { readonly kind: 'running'; readonly lockEndsMs: number | undefined };

export class IntentStore {
  readonly #client: DynamoDBClient;
  readonly #tableName: string;
  readonly #attr: RecordAttributes;

  constructor(client: DynamoDBClient, tableName: string, attributes: RecordAttributes) {
    this.#client = client;
    this.#tableName = tableName;
    this.#attr = attributes;
  }

  /**
   * Claims the intent for `owner`. One conditional PutItem when the intent is free; when it is held,
   * the holder's record is read (one GetItem) and decides — the holder is the record *and* the claim
   * the intent names, so a record released and re-created by another call is not mistaken for it:
   *
   *   no live intent ───────────────────────────────▶ owned (this call's downstream key)
   *   held by this record, an earlier claim of it ──▶ owned (the stored downstream key), swapped to
   *                                                   this claim, unless someone swapped first
   *   holder COMPLETED ─────────────────────────────▶ done (the holder's stored result)
   *   holder INPROGRESS, lock running ──────────────▶ running
   *   holder gone, re-claimed, or its lock expired ─▶ owned by takeover, under the holder's
   *                                                   downstream key: the effect is found, not repeated
   *
   * Every way to `owned` but the first is a conditional swap of the holder: two callers can never
   * both take an intent over.
   */
  async claim(
    scope: IntentScope,
    owner: IntentOwner,
    downstreamKey: string,
    windowSeconds: number,
  ): Promise<IntentClaim> {
    const attr = this.#attr;
    const key = intentKey(scope);
    const now = Date.now();
    try {
      await this.#client.send(
        new PutItemCommand({
          TableName: this.#tableName,
          Item: marshall({
            [attr.key]: key,
            [attr.tenant]: scope.identity.tenant,
            [attr.tool]: scope.tool,
            [attr.intentOwner]: owner.recordKey,
            [attr.claim]: owner.claimId,
            [attr.downstreamKey]: downstreamKey,
            [attr.expiry]: Math.floor(now / 1000) + windowSeconds,
          }),
          ConditionExpression: 'attribute_not_exists(#id) OR #expiry < :now',
          ExpressionAttributeNames: { '#id': attr.key, '#expiry': attr.expiry },
          ExpressionAttributeValues: marshall({ ':now': now / 1000 }),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { kind: 'owned', downstreamKey };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException) || !error.Item) throw error;
      const held = unmarshall(error.Item);
      const holder = {
        recordKey: held[attr.intentOwner] as string,
        claimId: held[attr.claim] as string | undefined,
      };
      const heldKey = held[attr.downstreamKey] as string;
      if (holder.recordKey !== owner.recordKey) {
        const record = await this.#record(holder.recordKey);
        // The holder's own claim, still there: its state decides. Otherwise it is gone.
        if (record && record[attr.claim] === holder.claimId) {
          const status = record[attr.status];
          if (status === IdempotencyRecordStatus.COMPLETED) {
            return { kind: 'done', result: record[attr.data] as { receipt: string; replayed: boolean } };
          }
          const lockEndsMs = record[attr.inProgressExpiry] as number | undefined;
          if (status === IdempotencyRecordStatus.INPROGRESS && lockEndsMs !== undefined && lockEndsMs > now) {
            return { kind: 'running', lockEndsMs };
          }
        }
      }
      return (await this.#takeOver(key, holder, owner))
        ? { kind: 'owned', downstreamKey: heldKey }
        : { kind: 'running', lockEndsMs: undefined };
    }
  }

  /** Frees the intent after its owner failed with a business error, so a corrected call can run. */
  async release(scope: IntentScope, owner: IntentOwner): Promise<void> {
    try {
      await this.#client.send(
        new DeleteItemCommand({
          TableName: this.#tableName,
          Key: marshall({ [this.#attr.key]: intentKey(scope) }),
          ConditionExpression: '#owner = :owner AND #claim = :claim',
          ExpressionAttributeNames: { '#owner': this.#attr.intentOwner, '#claim': this.#attr.claim },
          ExpressionAttributeValues: marshall({ ':owner': owner.recordKey, ':claim': owner.claimId }),
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  /** Moves the intent from its holder to this call, unless someone else moved it first. */
  async #takeOver(
    key: string,
    from: { recordKey: string; claimId: string | undefined },
    to: IntentOwner,
  ): Promise<boolean> {
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#tableName,
          Key: marshall({ [this.#attr.key]: key }),
          UpdateExpression: 'SET #owner = :to, #claim = :toClaim',
          // An intent written before intents named their holder's claim has none: it matches as it is.
          ConditionExpression:
            from.claimId === undefined
              ? '#owner = :from AND attribute_not_exists(#claim)'
              : '#owner = :from AND #claim = :fromClaim',
          ExpressionAttributeNames: { '#owner': this.#attr.intentOwner, '#claim': this.#attr.claim },
          ExpressionAttributeValues: marshall(
            {
              ':from': from.recordKey,
              ':fromClaim': from.claimId,
              ':to': to.recordKey,
              ':toClaim': to.claimId,
            },
            { removeUndefinedValues: true },
          ),
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async #record(recordKey: string): Promise<Record<string, unknown> | undefined> {
    const { Item } = await this.#client.send(
      new GetItemCommand({
        TableName: this.#tableName,
        Key: marshall({ [this.#attr.key]: recordKey }),
        ConsistentRead: true,
      }),
    );
    return Item ? unmarshall(Item) : undefined;
  }
}

function intentKey({ tool, identity, fingerprint }: IntentScope): string {
  const hash = createHash('sha256')
    .update(JSON.stringify([identity.tenant, identity.user, fingerprint]))
    .digest('hex');
  return `${tool}#intent#${hash}`;
}
