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
   * Claims the intent for the call whose record is `ownerRecordKey`. One conditional PutItem when the
   * intent is free; when it is held, the owner's record is read (one GetItem) and decides:
   *
   *   no live intent ───────────────────────────────▶ owned (this call's downstream key)
   *   held by this very record (a retry of it) ─────▶ owned (the stored downstream key)
   *   owner COMPLETED ──────────────────────────────▶ done (the owner's receipt)
   *   owner INPROGRESS, lock running ───────────────▶ running
   *   owner gone or its lock expired (it died) ─────▶ owned by takeover, under the owner's
   *                                                   downstream key: the effect is found, not repeated
   */
  async claim(
    scope: IntentScope,
    ownerRecordKey: string,
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
            [attr.intentOwner]: ownerRecordKey,
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
      const heldOwner = held[attr.intentOwner] as string;
      const heldKey = held[attr.downstreamKey] as string;
      if (heldOwner === ownerRecordKey) return { kind: 'owned', downstreamKey: heldKey };
      const owner = await this.#record(heldOwner);
      const status = owner?.[attr.status];
      if (status === IdempotencyRecordStatus.COMPLETED) {
        return { kind: 'done', result: owner![attr.data] as { receipt: string; replayed: boolean } };
      }
      const lockEndsMs = owner?.[attr.inProgressExpiry] as number | undefined;
      if (status === IdempotencyRecordStatus.INPROGRESS && lockEndsMs !== undefined && lockEndsMs > now) {
        return { kind: 'running', lockEndsMs };
      }
      return (await this.#takeOver(key, heldOwner, ownerRecordKey))
        ? { kind: 'owned', downstreamKey: heldKey }
        : { kind: 'running', lockEndsMs: undefined };
    }
  }

  /** Frees the intent after its owner failed with a business error, so a corrected call can run. */
  async release(scope: IntentScope, ownerRecordKey: string): Promise<void> {
    try {
      await this.#client.send(
        new DeleteItemCommand({
          TableName: this.#tableName,
          Key: marshall({ [this.#attr.key]: intentKey(scope) }),
          ConditionExpression: '#owner = :owner',
          ExpressionAttributeNames: { '#owner': this.#attr.intentOwner },
          ExpressionAttributeValues: marshall({ ':owner': ownerRecordKey }),
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  /** Moves the intent from an owner that died to this call, unless someone else moved it first. */
  async #takeOver(key: string, from: string, to: string): Promise<boolean> {
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#tableName,
          Key: marshall({ [this.#attr.key]: key }),
          UpdateExpression: 'SET #owner = :to',
          ConditionExpression: '#owner = :from',
          ExpressionAttributeNames: { '#owner': this.#attr.intentOwner },
          ExpressionAttributeValues: marshall({ ':from': from, ':to': to }),
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
