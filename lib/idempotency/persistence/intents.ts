import { createHash } from 'node:crypto';
import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { type CallRecord, classify, isAbandoned, type StoredOutcome } from '../call-state';
import type { RecordAttributes } from '../record';
import type { Identity } from '../types';
import { CallRecords } from './call-records';

/**
 * An intent: "this tenant's user asked this tool for these exact arguments", held for a dedupe window
 * whatever client key each call carries. The first call's claim owns it; a call with a fresh key
 * inside the window answers the owner's receipt instead of running.
 *
 * Item: `<tool>#intent#<sha256(tenant, user, fingerprint)>`, with the owner's record key, the
 * downstream key the effect runs under, the window's end (`window_end`), and a TTL past it by the
 * records' TTL, so late calls asked inside the window still find it.
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
  /** The call (`<record key>@<instance>`): the holder is the call, whichever of its attempts runs. */
  readonly callId: string;
}

/** What claiming an intent found. */
export type IntentClaim =
  /**
   * This call owns the intent — `created` by it now (or afresh after an erased holder), or taken over
   * from an owner that is gone: run under `downstreamKey`.
   */
  | { readonly kind: 'owned'; readonly downstreamKey: string; readonly created: boolean }
  /** Another call finished it: its stored outcome, and the key its effect ran under. */
  | { readonly kind: 'done'; readonly outcome: StoredOutcome; readonly downstreamKey: string }
  /** Another call is doing it now; its lock ends at `lockEndsMs`. */
  | { readonly kind: 'running'; readonly lockEndsMs: number | undefined };

export class IntentStore {
  readonly #client: DynamoDBClient;
  readonly #tableName: string;
  readonly #attr: RecordAttributes;
  readonly #records: CallRecords;

  constructor(client: DynamoDBClient, tableName: string, attributes: RecordAttributes) {
    this.#client = client;
    this.#tableName = tableName;
    this.#attr = attributes;
    this.#records = new CallRecords(client, tableName, attributes);
  }

  /**
   * Claims the intent for `owner`. One conditional PutItem when the intent is free; when it is held,
   * the holder's record is read (one GetItem) and its state decides — the holder is the record *and*
   * the claim the intent names, so a record released and re-created by another call is not mistaken
   * for it:
   *
   *   no intent ────────────────────────────────────▶ owned, under this call's downstream key, fixed
   *                                                   on the intent in the same write
   *   its window ended before this call was asked ──▶ replaced (owned afresh) once its holder has
   *                                                   settled; while the holder is in flight, running
   *   held by this record, an earlier claim of it ──▶ owned (the intent's key), swapped to this claim
   *   holder completed ─────────────────────────────▶ done (its outcome)
   *   holder live ──────────────────────────────────▶ running
   *   holder erased ────────────────────────────────▶ owned afresh under this call's own key
   *   holder abandoned, gone or re-claimed ─────────▶ owned by takeover, under the intent's key: first
   *                                                   fixed on this call's record (`fix`), then the
   *                                                   holder swapped — the effect is found, not repeated
   *
   * Every way to `owned` but the first is a conditional swap of the holder: two callers can never
   * both take an intent over.
   */
  async claim(
    scope: IntentScope,
    owner: IntentOwner,
    downstreamKey: string,
    windowSeconds: number,
    ttlSeconds: number,
    askedAtMs: number,
    fix: (downstreamKey: string) => Promise<void>,
  ): Promise<IntentClaim> {
    const attr = this.#attr;
    const key = intentKey(scope);
    const now = Date.now();
    // The window a call falls in is decided by when it was asked, not when an attempt gets to run it.
    const asked = askedAtMs / 1000;
    const item = {
      [attr.key]: key,
      [attr.tenant]: scope.identity.tenant,
      [attr.tool]: scope.tool,
      [attr.intentOwner]: owner.recordKey,
      [attr.claim]: owner.claimId,
      [attr.callInstance]: owner.callId,
      [attr.downstreamKey]: downstreamKey,
      [attr.windowEnd]: Math.floor(asked) + windowSeconds,
      // Kept past the window for as long as a call asked inside it may still run (the records' TTL):
      // DynamoDB's TTL must not delete an intent a late retry or the completer still needs.
      [attr.expiry]: Math.floor(asked) + windowSeconds + ttlSeconds,
    };
    let held: Record<string, unknown>;
    try {
      await this.#client.send(
        new PutItemCommand({
          TableName: this.#tableName,
          Item: marshall(item),
          ConditionExpression: 'attribute_not_exists(#id)',
          ExpressionAttributeNames: { '#id': attr.key },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { kind: 'owned', downstreamKey, created: true };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException) || !error.Item) throw error;
      held = unmarshall(error.Item);
    }
    const holder = {
      recordKey: held[attr.intentOwner] as string,
      claimId: held[attr.claim] as string | undefined,
      callId: held[attr.callInstance] as string | undefined,
    };
    const heldKey = held[attr.downstreamKey] as string;
    // The window, not the TTL, decides (intents written before `window_end` ended at their TTL).
    const windowEnd = held[attr.windowEnd] as number | undefined;
    const windowEnded = windowEnd !== undefined ? windowEnd < asked : (held[attr.expiry] as number) < asked;
    if (windowEnded) {
      // This call is a new intent. The old one is replaced only once its holder has settled: while the
      // holder is still in flight, its own later attempts (a retry, the completer) ask the intent again
      // and must find their own — replaced under them, they would take the new intent's answer for
      // their own effect.
      const record = await this.#records.read(holder.recordKey);
      if (record && isHolder(record, holder)) {
        const state = classify(record, now);
        if (state === 'live') return { kind: 'running', lockEndsMs: record.lockEndsMs };
        if (isAbandoned(state)) return { kind: 'running', lockEndsMs: undefined };
      }
      return (await this.#replace(item, holder))
        ? { kind: 'owned', downstreamKey, created: true }
        : { kind: 'running', lockEndsMs: undefined };
    }
    if (holder.recordKey !== owner.recordKey) {
      const record = await this.#records.read(holder.recordKey);
      const state = classify(record, now);
      if (state === 'erased') {
        // The intent's owner was erased: what it did is gone, and so is the intent.
        return (await this.#swap(key, holder, owner, downstreamKey))
          ? { kind: 'owned', downstreamKey, created: true }
          : { kind: 'running', lockEndsMs: undefined };
      }
      // The holder call, still there (whichever of its attempts holds the record now): its state
      // decides. Otherwise it is gone.
      if (record && isHolder(record, holder)) {
        if (state === 'completed' && record.outcome) {
          return { kind: 'done', outcome: record.outcome, downstreamKey: heldKey };
        }
        if (state === 'live') return { kind: 'running', lockEndsMs: record.lockEndsMs };
      }
      // Taking over: this call's record names the intent's key first, so that every later attempt
      // of this call (a retry, the completer) runs under it even if this one dies right after.
      await fix(heldKey);
    }
    // This call's own earlier attempt created it when it holds it already (same call).
    const own = holder.recordKey === owner.recordKey && (holder.callId === undefined || holder.callId === owner.callId);
    return (await this.#swap(key, holder, owner))
      ? { kind: 'owned', downstreamKey: heldKey, created: own && heldKey === downstreamKey }
      : { kind: 'running', lockEndsMs: undefined };
  }

  /** Writes `item` over the intent, unless its holder changed since it was read. */
  async #replace(item: Record<string, unknown>, from: { recordKey: string; claimId: string | undefined }) {
    try {
      await this.#client.send(
        new PutItemCommand({
          TableName: this.#tableName,
          Item: marshall(item),
          ConditionExpression: stillHeldBy(from),
          ExpressionAttributeNames: { '#owner': this.#attr.intentOwner, '#claim': this.#attr.claim },
          ExpressionAttributeValues: marshall(
            { ':from': from.recordKey, ':fromClaim': from.claimId },
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

  /** Whether `record` is still the call that holds an intent (intents from before call ids: its claim). */
  static holds(record: CallRecord | undefined, intent: Record<string, unknown>, attr: RecordAttributes): boolean {
    return (
      record !== undefined &&
      isHolder(record, {
        claimId: intent[attr.claim] as string | undefined,
        callId: intent[attr.callInstance] as string | undefined,
      })
    );
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

  /**
   * Moves the intent from its holder to this call, unless someone else moved it first; with
   * `downstreamKey`, the intent starts afresh under it (its holder was erased).
   */
  async #swap(
    key: string,
    from: { recordKey: string; claimId: string | undefined },
    to: IntentOwner,
    downstreamKey?: string,
  ): Promise<boolean> {
    const names: Record<string, string> = { '#owner': this.#attr.intentOwner, '#claim': this.#attr.claim };
    const values: Record<string, unknown> = {
      ':from': from.recordKey,
      ':fromClaim': from.claimId,
      ':to': to.recordKey,
      ':toClaim': to.claimId,
    };
    let update = 'SET #owner = :to, #claim = :toClaim, #call = :toCall';
    names['#call'] = this.#attr.callInstance;
    values[':toCall'] = to.callId;
    if (downstreamKey !== undefined) {
      update += ', #downstream = :downstream';
      names['#downstream'] = this.#attr.downstreamKey;
      values[':downstream'] = downstreamKey;
    }
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#tableName,
          Key: marshall({ [this.#attr.key]: key }),
          UpdateExpression: update,
          ConditionExpression: stillHeldBy(from),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: marshall(values, { removeUndefinedValues: true }),
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }
}

/**
 * The condition that the intent is still held as it was read (`:from`, `:fromClaim`). An intent written
 * before intents named their holder's claim has none: it matches as it is.
 */
export function stillHeldBy(from: { claimId: string | undefined }): string {
  return from.claimId === undefined
    ? '#owner = :from AND attribute_not_exists(#claim)'
    : '#owner = :from AND #claim = :fromClaim';
}

function isHolder(record: CallRecord, holder: { claimId: string | undefined; callId: string | undefined }): boolean {
  if (holder.callId !== undefined) return record.callId === holder.callId;
  return holder.claimId === undefined || record.claim === holder.claimId;
}

export function intentKey({ tool, identity, fingerprint }: IntentScope): string {
  const hash = createHash('sha256')
    .update(JSON.stringify([identity.tenant, identity.user, fingerprint]))
    .digest('hex');
  return `${tool}#intent#${hash}`;
}
