/**
 * The claim's writes (docs/state-machine.md, "Call record"): a first claim (`claim`, and `claimKeeping`, the
 * one over an expired call of the same arguments that fixed a key not its own), a takeover (`takeOver`), and
 * the key fixed inside an intent's takeover (`fixKeyInput`) — one function per transition, each answering what
 * happened instead of throwing when its condition fails. What an attempt does with each is `claim.ts`.
 */
import { randomUUID } from 'node:crypto';
import { PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { createdAtOf, neverRan, ttlTakenOverFor } from '../call-state';
import { type CallRecord, callIdOf, callRecordOf, STATUS } from './record';
import { type Condition, conditionally, givingUp, type IdempotencyTable, lockEndedOn, ownClaim } from './table';

/** The claim one attempt holds: written once, by `claim` or `takeOver`, and read by everything after it. */
export interface Claim {
  /** The record's key (the same on every attempt of this client key). */
  readonly recordKey: string;
  /** This attempt's claim id: it alone may store, park or release the record. */
  readonly claimId: string;
  /** 1 for a first claim, +1 for each takeover of an abandoned attempt. */
  readonly attempt: number;
  /**
   * Whether an earlier attempt may have run the effect: any before this one but the leading ones that made
   * no effect (`CallRecord.unrunAttempts`: queued, failed before their tool ran, or met a business error).
   * False on a first claim, and on the first run after such attempts.
   */
  readonly ranBefore: boolean;
  /** How many attempts before this one were queued (`CallRecord.queuedAttempts`): 0 on a first claim. */
  readonly queuedBefore: number;
  /** The downstream key an earlier attempt fixed on the record (it took an intent over), if any. */
  readonly downstreamKey: string | undefined;
  /** The dedupe window's holder an earlier attempt was queued behind (`CallRecord.waitedOn`), if any. */
  readonly waitedOn?: string | undefined;
  /** The call's id, the same on every attempt of it: what its tool stamps its commit with. */
  readonly callId: string;
  /**
   * When the call was first claimed (epoch ms): the moment the caller asked, which decides the dedupe
   * window it falls in — however late an attempt (a retry, the completer) runs it.
   */
  readonly askedAtMs: number;
  /** The record's TTL (epoch s) while in flight: the first claim set it, a takeover keeps it. */
  readonly expiresAtS: number;
  /** Its takeover gave the call up in advance (`TakeOver.givesUpInAdvance`): a park past its last look may end by the TTL − 10 s. */
  readonly givenUpInAdvance?: boolean | undefined;
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
  /**
   * `existing`: the record in its way — undefined when the item is not a call record a claim wrote, or, `gone`,
   * when there was none: it went away between a read and the write (a claim over it kept, its TTL's sweep).
   */
  | { readonly kind: 'refused'; readonly existing: CallRecord | undefined; readonly gone?: true };

/**
 * claim: absent | expired ──▶ live (attempt 1). A PutItem where no record is, or where its TTL passed
 * (`#expiry < :now`, epoch s): an abandoned attempt is taken over (`takeOver`), never replaced. The call's
 * instance is an id of its own, not the claim's: the instance is shown (a task id carries it), a claim id
 * never is (an MCP commit mark's proof is its hash, `commitProofOf`).
 *
 * An expired record of the same arguments still in flight that fixed a downstream key not its own (a dedupe
 * window's it took over, or a past window's) is that call, resent past its TTL: its effect may run or have
 * run under that key, which its own derivation cannot find again. It is claimed anew keeping the key — in the
 * same write (`claimKeeping`), never a write after, so no attempt ever finds the record without it (review 34,
 * F1: run under its own key, a second effect). The first PutItem is refused there (`#downstream`), one more
 * write on that path alone. A completed one's key is not kept: a key reused past its TTL is a new call (review
 * 36, F1: kept, a later window's call was answered the earlier window's effect). One DynamoDB's sweep deleted
 * is not known to anyone: past it the call runs anew, as every answer past the TTL says (`runs_anew`).
 */
export async function claim(table: IdempotencyTable, first: FirstClaim, nowMs: number): Promise<Claimed> {
  const attr = table.attributes;
  const written = await claimWrite(table, first, nowMs, {
    expression:
      'attribute_not_exists(#id) OR (#expiry < :now AND NOT (#status = :inProgress AND #validation = :validation AND attribute_exists(#downstream)))',
    names: {
      '#id': attr.key,
      '#expiry': attr.expiry,
      '#status': attr.status,
      '#validation': attr.validation,
      '#downstream': attr.downstreamKey,
    },
    values: marshall({ ':now': nowMs / 1000, ':inProgress': STATUS.inProgress, ':validation': first.validation }),
  });
  if (written.kind === 'claimed') return written;
  const existing = written.existing;
  const resent =
    existing?.status === STATUS.inProgress &&
    existing.validation === first.validation &&
    existing.downstreamKey !== undefined &&
    existing.claimId !== undefined &&
    existing.expiresAtS < nowMs / 1000;
  // None of its attempts ran (`neverRan`: queued, failed before its tool ran): nothing to keep, a fresh call.
  if (!resent) return written;
  return claimKeeping(table, first, nowMs, existing, neverRan(existing) ? undefined : existing.downstreamKey);
}

/**
 * `claim`'s write over `old` (expired, in flight, a key fixed): on `old`'s claim, still expired — keeping `key`
 * (run under by an earlier attempt of it: `ranBefore`), or, none given, as any first claim.
 */
function claimKeeping(
  table: IdempotencyTable,
  first: FirstClaim,
  nowMs: number,
  old: CallRecord,
  key: string | undefined,
): Promise<Claimed> {
  const attr = table.attributes;
  return claimWrite(
    table,
    first,
    nowMs,
    {
      expression: '#claim = :oldClaim AND #expiry < :now',
      names: { '#claim': attr.claim, '#expiry': attr.expiry },
      values: marshall({ ':oldClaim': old.claimId, ':now': nowMs / 1000 }),
    },
    key,
  );
}

async function claimWrite(
  table: IdempotencyTable,
  first: FirstClaim,
  nowMs: number,
  condition: Condition,
  /** The downstream key an earlier attempt of this call, past its record's TTL, ran under (`claimKeeping`). */
  kept?: string,
): Promise<Claimed> {
  const attr = table.attributes;
  const claimId = randomUUID();
  const instance = randomUUID();
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
        [attr.callInstance]: instance,
        [attr.attempt]: 1,
        [attr.lockEnd]: first.lockEndsMs,
        [attr.call]: first.call,
        [attr.expiry]: first.expiresAtS,
        [attr.validation]: first.validation,
        [attr.createdAt]: nowMs,
        ...(kept === undefined ? {} : { [attr.downstreamKey]: kept }),
      }),
      ConditionExpression: condition.expression,
      ExpressionAttributeNames: condition.names,
      ExpressionAttributeValues: condition.values,
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    }),
  );
  if (!written.passed) {
    if (!written.item) return { kind: 'refused', existing: undefined, gone: true };
    return { kind: 'refused', existing: callRecordOf(written.item, attr) };
  }
  const callId = callIdOf(first.recordKey, instance);
  return {
    kind: 'claimed',
    claim: {
      recordKey: first.recordKey,
      claimId,
      attempt: 1,
      ranBefore: kept !== undefined,
      queuedBefore: 0,
      downstreamKey: kept,
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
  /**
   * The new lock (epoch ms): it must end by the record's last look (`ttlLookedAtFor`) — or, given up in
   * advance, `CLOCK_SKEW_TOLERANCE_MS` before its TTL (`ttlNeededFor`).
   */
  readonly lockEndsMs: number;
  /** The tool's TTL: when a record an earlier version claimed (no `created_at`) was first claimed. */
  readonly ttlSeconds: number;
  /**
   * The new lock ends past the record's last look (a caller's resend within a lock of it, or after it): the
   * same write gives the call up (`stalled`, `expiring`, on the new claim), so that if this attempt dies the
   * record itself says it is stalled once the lock ends — no completer's look, which may come past the TTL,
   * is needed to report it (rule 2; review 32, F1; review 33, F1 and F2: refused instead, the resend was
   * `pending` until the TTL, and past it a fresh claim ran a dedupe window's call under its own key).
   */
  readonly givesUpInAdvance?: boolean | undefined;
}

/**
 * take over: abandoned | stalled (on `fromClaimId`, same arguments) ──▶ live (attempt + 1). An UpdateItem
 * on `lockEndedOn` that exact claim, whose TTL is not before the new lock's end and the record's last look
 * (`ttlLookedAtFor`) — or, given up in advance (`givesUpInAdvance`: `stalled` on the new claim, `expiring`),
 * the clock skew the protocol tolerates (`ttlNeededFor`) —, and on the same validation hash: an erased,
 * finished, re-claimed or live record is never taken, and everything else it holds (the call, the downstream
 * key an earlier attempt fixed) stays, in the same write.
 */
export async function takeOver(table: IdempotencyTable, from: TakeOver, nowMs: number): Promise<Claimed> {
  const attr = table.attributes;
  const claimId = randomUUID();
  const givesUp = from.givesUpInAdvance === true;
  const notBeforeAtS = ttlTakenOverFor(from.lockEndsMs, givesUp);
  const ended = lockEndedOn(attr, from.fromClaimId, { nowMs, notBeforeAtS });
  const gaveUp = givesUp ? givingUp(attr, ':id') : { sets: [], names: {}, values: {} };
  const written = await conditionally(
    table.client,
    new UpdateItemCommand({
      TableName: table.tableName,
      Key: marshall({ [attr.key]: from.recordKey }),
      UpdateExpression: `SET ${['#claim = :id', '#lockEnd = :lockEnd', ...gaveUp.sets].join(', ')} ADD #attempt :one`,
      ConditionExpression: `${ended.expression} AND #validation = :validation`,
      ExpressionAttributeNames: {
        ...ended.names,
        '#attempt': attr.attempt,
        '#validation': attr.validation,
        ...gaveUp.names,
      },
      ExpressionAttributeValues: {
        ...ended.values,
        ...marshall({ ':id': claimId, ':lockEnd': from.lockEndsMs, ':one': 1, ':validation': from.validation }),
        ...gaveUp.values,
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
    ranBefore: record.attempt - 1 > (record.unrunAttempts ?? 0),
    queuedBefore: record.queuedAttempts ?? 0,
    waitedOn: record.waitedOn,
    downstreamKey: record.downstreamKey,
    callId: record.callId,
    askedAtMs: createdAtOf(record, from.ttlSeconds),
    expiresAtS: record.expiresAtS,
    ...(givesUp ? { givenUpInAdvance: true } : {}),
  };
  return { kind: 'claimed', claim: claimed };
}

/**
 * fix the downstream key: live (own claim) ──▶ live, naming the downstream key its effect runs under when
 * it is not the one derived from the call (it takes an intent over), so that every later attempt — a
 * retry, the completer — runs under it too. The UpdateItem, on its claim, that `takeOverIntent`
 * (intent-writes.ts) makes in one transaction with the intent's own write.
 */
export function fixKeyInput(
  table: IdempotencyTable,
  claim: Pick<Claim, 'recordKey' | 'claimId'>,
  downstreamKey: string,
) {
  const attr = table.attributes;
  const held = ownClaim(attr, claim.claimId);
  return {
    TableName: table.tableName,
    Key: marshall({ [attr.key]: claim.recordKey }),
    UpdateExpression: 'SET #downstream = :downstream',
    ConditionExpression: held.expression,
    ExpressionAttributeNames: { '#downstream': attr.downstreamKey, ...held.names },
    ExpressionAttributeValues: { ':downstream': { S: downstreamKey }, ...held.values },
  };
}
