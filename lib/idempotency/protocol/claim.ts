// The writes that give an attempt its claim on a call record (docs/state-machine.md, "Call record"), one
// function per transition, each answering what happened instead of throwing when its condition fails.
import { randomUUID } from 'node:crypto';
import { PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { createdAtOf, ttlNeededFor } from '../call-state';
import { type CallRecord, callIdOf, callRecordOf, STATUS } from './record';
import { conditionally, type IdempotencyTable, lockEndedOn } from './table';

/** The claim one attempt holds: written once, by `claim` or `takeOver`, and read by everything after it. */
export interface Claim {
  /** The record's key (the same on every attempt of this client key). */
  readonly recordKey: string;
  /** This attempt's claim id: it alone may store, park or release the record. */
  readonly claimId: string;
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
  /** The record's TTL (epoch s) while in flight: the first claim set it, a takeover keeps it. */
  readonly expiresAtS: number;
}

/** What a first claim writes. */
export interface FirstClaim {
  readonly recordKey: string;
  readonly tenant: string;
  readonly tool: string;
  /** The arguments' validation hash. */
  readonly validation: string;
  /** The record's TTL (epoch s). */
  readonly expiresAtS: number;
  /** The lock: the attempt's deadline (epoch ms), in the future. */
  readonly lockEndsMs: number;
  /** What it takes to finish the call if this worker dies (`encodeCall`). */
  readonly call: string;
}

/** A claim's write, or the record in its way (undefined only if DynamoDB returned none). */
export type Claimed =
  | { readonly kind: 'claimed'; readonly claim: Claim }
  | { readonly kind: 'refused'; readonly existing: CallRecord | undefined };

/**
 * claim: absent | expired ──▶ live (attempt 1). A PutItem where no record is, or where its TTL passed
 * (`#expiry < :now`, epoch s): an abandoned attempt is taken over (`takeOver`), never replaced. The call's
 * instance is the first claim's id.
 */
export async function claim(table: IdempotencyTable, first: FirstClaim, nowMs: number): Promise<Claimed> {
  const attr = table.attributes;
  const claimId = randomUUID();
  const written = await conditionally(
    table.client,
    new PutItemCommand({
      TableName: table.tableName,
      Item: marshall({
        [attr.key]: first.recordKey,
        [attr.status]: STATUS.inProgress,
        [attr.tenant]: first.tenant,
        [attr.tool]: first.tool,
        [attr.claim]: claimId,
        [attr.callInstance]: claimId,
        [attr.attempt]: 1,
        [attr.inProgressExpiry]: first.lockEndsMs,
        [attr.call]: first.call,
        [attr.expiry]: first.expiresAtS,
        [attr.validation]: first.validation,
        [attr.createdAt]: nowMs,
      }),
      ConditionExpression: 'attribute_not_exists(#id) OR #expiry < :now',
      ExpressionAttributeNames: { '#id': attr.key, '#expiry': attr.expiry },
      ExpressionAttributeValues: marshall({ ':now': nowMs / 1000 }),
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    }),
  );
  if (!written.passed) return { kind: 'refused', existing: written.item && callRecordOf(written.item, attr) };
  const callId = callIdOf(first.recordKey, claimId);
  return {
    kind: 'claimed',
    claim: {
      recordKey: first.recordKey,
      claimId,
      attempt: 1,
      downstreamKey: undefined,
      callId,
      askedAtMs: nowMs,
      expiresAtS: first.expiresAtS,
    },
  };
}

/** What a takeover names: the record, the exact claim it read, and the arguments it must match. */
export interface TakeOver {
  readonly recordKey: string;
  readonly fromClaimId: string;
  readonly validation: string;
  /** The new lock (epoch ms): it must end `CLOCK_SKEW_TOLERANCE_MS` before the record's TTL (`ttlNeededFor`). */
  readonly lockEndsMs: number;
  /** The tool's TTL: when a record an earlier version claimed (no `created_at`) was first claimed. */
  readonly ttlSeconds: number;
}

/**
 * take over: abandoned | stalled (on `fromClaimId`, same arguments) ──▶ live (attempt + 1). An UpdateItem
 * on `lockEndedOn` that exact claim, whose TTL is not before the new lock ends (by the clock skew the
 * protocol tolerates: `ttlNeededFor`), and on the same
 * validation hash: an erased, finished, re-claimed or live record is never taken, and everything else it
 * holds (the call, the downstream key an earlier attempt fixed) stays, in the same write.
 */
export async function takeOver(table: IdempotencyTable, from: TakeOver, nowMs: number): Promise<Claimed> {
  const attr = table.attributes;
  const claimId = randomUUID();
  const ended = lockEndedOn(attr, from.fromClaimId, { nowMs, notBeforeS: ttlNeededFor(from.lockEndsMs) });
  const written = await conditionally(
    table.client,
    new UpdateItemCommand({
      TableName: table.tableName,
      Key: marshall({ [attr.key]: from.recordKey }),
      UpdateExpression: 'SET #claim = :id, #lock = :lock ADD #attempt :one',
      ConditionExpression: `${ended.expression} AND #validation = :validation`,
      ExpressionAttributeNames: { ...ended.names, '#attempt': attr.attempt, '#validation': attr.validation },
      ExpressionAttributeValues: {
        ...ended.values,
        ...marshall({ ':id': claimId, ':lock': from.lockEndsMs, ':one': 1, ':validation': from.validation }),
      },
      ReturnValues: 'ALL_NEW',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    }),
  );
  if (!written.passed) return { kind: 'refused', existing: written.item && callRecordOf(written.item, attr) };
  const record = written.item && callRecordOf(written.item, attr);
  // The condition held, so a claim wrote the record: it has everything a claim writes.
  if (!record) throw new Error(`the call record taken over is not one a claim wrote: ${from.recordKey}`);
  const claimed: Claim = {
    recordKey: from.recordKey,
    claimId,
    attempt: record.attempt,
    downstreamKey: record.downstreamKey,
    callId: record.callId,
    askedAtMs: createdAtOf(record, from.ttlSeconds),
    expiresAtS: record.expiresAtS,
  };
  return { kind: 'claimed', claim: claimed };
}

/**
 * fix the downstream key: live (own claim) ──▶ live, naming the downstream key its effect runs under when
 * it is not the one derived from the call (it takes an intent over), so that every later attempt — a
 * retry, the completer — runs under it too. An UpdateItem on this attempt's claim.
 */
export async function fixDownstreamKey(
  table: IdempotencyTable,
  claim: Claim,
  downstreamKey: string,
): Promise<'fixed' | 'claim_lost'> {
  const attr = table.attributes;
  const written = await conditionally(
    table.client,
    new UpdateItemCommand({
      TableName: table.tableName,
      Key: marshall({ [attr.key]: claim.recordKey }),
      UpdateExpression: 'SET #downstream = :downstream',
      ConditionExpression: '#claim = :claim',
      ExpressionAttributeNames: { '#downstream': attr.downstreamKey, '#claim': attr.claim },
      ExpressionAttributeValues: marshall({ ':downstream': downstreamKey, ':claim': claim.claimId }),
    }),
  );
  return written.passed ? 'fixed' : 'claim_lost';
}
