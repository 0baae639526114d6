/**
 * The claim: how an attempt gets its claim on a call record, in one file — the decision (`claimCall`: a
 * first claim, or a takeover of the abandoned attempt it found, or the answer the record in its way gives:
 * a replay of its outcome, `pending` while it runs, `conflict` for other arguments, `not_found` once
 * erased) and the writes it makes (`claim`, `takeOver`, and `fixKeyInput`, the key fixed inside an intent's takeover: docs/state-machine.md, "Call
 * record"; one function per transition, each answering what happened instead of throwing when its
 * condition fails). The answers are the ones Powertools' handler gave a refused claim
 * (`IdempotencyValidationError`, `IdempotencyAlreadyInProgressError`, the response hook), decided here from
 * the typed record instead of rethrown through it.
 */
import { randomUUID } from 'node:crypto';
import { PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { askAgainAfterMs, type Ending, failed, REFUSED, StoreWriteError } from '../answers';
import {
  classify,
  createdAtOf,
  expiredFromMs,
  isAbandoned,
  isParked,
  lastLookMs,
  stalledChangesAtMs,
  ttlTakenOverFor,
} from '../call-state';
import { type CallRecord, callIdOf, callRecordOf, STATUS } from './record';
import { conditionally, givingUp, type IdempotencyTable, lockEndedOn, ownClaim } from './table';

/** What an attempt claims with. */
export interface ClaimRequest extends Omit<FirstClaim, 'call'> {
  /** The tool's TTL (a takeover of a record an earlier version claimed derives its first claim's time from it). */
  readonly ttlSeconds: number;
  /** The `call` attribute a first claim writes (`encodeCall`); not built for a resume. */
  readonly call: () => string;
  /**
   * Take over only this claim, never claim afresh: the completer finishing what it saw.
   * @default undefined (claim, or take over an abandoned attempt of the same arguments)
   */
  readonly resume: string | undefined;
}

/** The claim phase's result: this attempt's claim, or how the attempt ends without one. */
export type ClaimPhase = { readonly kind: 'claimed'; readonly claim: Claim } | Ending;

/**
 * The record in the way is gone for a claim since the write that read it: it expired before its answer,
 * or its holder released it (a first attempt's business error) before the takeover. Ask again.
 */
const GONE_MEANWHILE = { kind: 'gone_meanwhile' } as const;

/** How often a claim is tried again when the record in its way keeps going as it is read (Powertools' `MAX_RETRIES`). */
const RETRIES = 2;

/** Claims the call for this attempt, or answers without a claim. Never throws: a failed write is an `Ending`. */
export async function claimCall(table: IdempotencyTable, request: ClaimRequest): Promise<ClaimPhase> {
  try {
    for (let retry = 0; ; retry++) {
      const phase = await claimOnce(table, request);
      if (phase.kind !== GONE_MEANWHILE.kind) return phase;
      if (retry === RETRIES) return failed(REFUSED.changedWhileRead());
    }
  } catch (error) {
    return failed(new StoreWriteError('claim', { cause: error }));
  }
}

async function claimOnce(table: IdempotencyTable, request: ClaimRequest): Promise<ClaimPhase | typeof GONE_MEANWHILE> {
  const nowMs = Date.now();
  // A claim without a future lock would hold the key until its TTL (or never hold it).
  if (request.lockEndsMs <= nowMs) return failed(REFUSED.noTimeLeft());
  if (request.resume !== undefined) return takeOverOnce(table, request, request.resume, nowMs);
  const claimed = await claim(table, { ...request, call: request.call() }, nowMs);
  if (claimed.kind === 'claimed') return claimed;
  const existing = claimed.existing;
  if (!existing) return failed(REFUSED.notACallRecord(request.recordKey));
  const state = classify(existing, nowMs);
  if (state === 'erased') return failed(REFUSED.erased());
  if (isAbandoned(state) && existing.validation === request.validation && existing.claimId !== undefined) {
    // A caller's resend whose lock ends past the call's last look gives the call up in advance (`TakeOver`).
    const givesUp = request.lockEndsMs > lastLookMs(existing.expiresAtS);
    return takeOverOnce(table, request, existing.claimId, nowMs, givesUp);
  }
  return answerOfRecord(existing, request);
}

/**
 * Takes over the attempt that held `fromClaimId`, or answers why not. The completer's resume never gives its
 * call up in advance: its re-run's lock ends by the last look, or it gives the call up instead (`tooLateToRerun`).
 */
async function takeOverOnce(
  table: IdempotencyTable,
  request: ClaimRequest,
  fromClaimId: string,
  nowMs: number,
  givesUpInAdvance = false,
): Promise<ClaimPhase | typeof GONE_MEANWHILE> {
  const taken = await takeOver(table, { ...request, fromClaimId, givesUpInAdvance }, nowMs);
  if (taken.kind === 'claimed') return taken;
  const existing = taken.existing;
  // No record under the key now (its holder released it, or it expired and was swept): the key is free.
  // A caller claims it again; the completer never claims afresh (rule 2).
  if (!existing) return request.resume !== undefined ? failed(REFUSED.nothingToResume()) : GONE_MEANWHILE;
  const state = classify(existing, nowMs);
  if (state === 'erased') return failed(REFUSED.erased());
  if (
    existing.claimId === fromClaimId &&
    isAbandoned(state) &&
    existing.expiresAtS < ttlTakenOverFor(request.lockEndsMs, givesUpInAdvance)
  ) {
    // The new lock would outlive the record (on some worker's clock): past its TTL it counts as expired —
    // a fresh claim, erase and the poll would all treat the running call as gone. Pending until the record
    // expires (then a fresh claim runs it, under the same downstream key).
    // Nothing lets it run before then: the wait is all of it, not a poll's second — to the first instant
    // every reader counts it expired (review 33, F4).
    // Past its TTL the record is gone, and with it every promise of one effect: a fresh claim runs the call
    // anew (under its own downstream key: the one an expired record fixed is read back only where a dedupe
    // window's intent names the record, `ranOnRecord`). Every answer whose wait ends there says so, this
    // refusal's and the poll's alike (`runs_anew`; review 35, F2: the poll of the same call said "cannot act
    // twice" beside a resend's "can act twice"; review 33, F1: "Still running" for a call no attempt holds).
    return {
      kind: 'pending',
      until: { afterMs: expiredFromMs(existing.expiresAtS) - nowMs, runsAnew: true },
      call: existing,
    };
  }
  if (request.resume !== undefined && existing.claimId !== request.resume && state !== 'completed') {
    // Someone else took it, finished it, or it was erased and claimed again: not ours to finish.
    return failed(REFUSED.nothingToResume());
  }
  return answerOfRecord(existing, request);
}

/**
 * The answer of a record read after the claim was refused (attach, attach.ts), as the refusal itself
 * would give it — or undefined once it expired (then the key is free: claim again).
 */
export function refusalOf(existing: CallRecord, request: ClaimRequest): ClaimPhase | undefined {
  const answer = answerOfRecord(existing, request);
  return answer.kind === GONE_MEANWHILE.kind ? undefined : answer;
}

/**
 * The answer of the record that refused the claim: other arguments → `conflict`; in progress →
 * `pending` until its lock ends (one Powertools' handler left behind: until its TTL); completed → its
 * outcome, replayed (Powertools' handler's result as the receipt, `callRecordOf`).
 */
function answerOfRecord(existing: CallRecord, request: ClaimRequest): ClaimPhase | typeof GONE_MEANWHILE {
  if (existing.validation !== request.validation) return failed(REFUSED.conflict());
  // The write saw it unexpired; it expired since: claim again.
  if (classify(existing, Date.now()) === 'expired') return GONE_MEANWHILE;
  if (existing.status === STATUS.inProgress) {
    const nowMs = Date.now();
    // No claim to take over once its lock ended (Powertools' handler died holding it: rule 2), no call to
    // re-run, and its effect may have happened (rule 1). Nothing runs it before its TTL — past it a fresh
    // claim runs it under this call's downstream key —, so the wait is all of it (`stalledChangesAtMs`).
    // A parked call: nobody runs it before its lock ends, so all of it (`askAgainAfterMs`); a held one: its lock.
    const changesAtMs = existing.lockEndsMs < nowMs ? stalledChangesAtMs(existing, nowMs) : undefined;
    // Powertools' handler holds it, its lock live (or none: to its TTL): it may store it at any moment,
    // and if it does not, a resend past its TTL runs it anew — no promise of one effect either (review 3, P1).
    const until =
      changesAtMs !== undefined
        ? { afterMs: changesAtMs - nowMs, runsAnew: true as const }
        : isParked(existing)
          ? { afterMs: askAgainAfterMs(existing, 'live', nowMs) }
          : existing.writtenBy === 'powertools'
            ? { atMs: existing.lockEndsMs, runsAnew: true as const }
            : { atMs: existing.lockEndsMs };
    return { kind: 'pending', until, call: existing };
  }
  if (existing.status === STATUS.completed) {
    return { kind: 'outcome', outcome: { ...existing.outcome, replayed: true }, replay: 'client_key', call: existing };
  }
  return failed(REFUSED.notACallRecord(existing.recordKey));
}

// The writes.

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
  | { readonly kind: 'refused'; readonly existing: CallRecord | undefined };

/**
 * claim: absent | expired ──▶ live (attempt 1). A PutItem where no record is, or where its TTL passed
 * (`#expiry < :now`, epoch s): an abandoned attempt is taken over (`takeOver`), never replaced. The call's
 * instance is an id of its own, not the claim's: the instance is shown (a task id carries it), a claim id
 * never is (an MCP commit mark's proof is its hash, `commitProofOf`).
 */
export async function claim(table: IdempotencyTable, first: FirstClaim, nowMs: number): Promise<Claimed> {
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
      }),
      ConditionExpression: 'attribute_not_exists(#id) OR #expiry < :now',
      ExpressionAttributeNames: { '#id': attr.key, '#expiry': attr.expiry },
      ExpressionAttributeValues: marshall({ ':now': nowMs / 1000 }),
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    }),
  );
  if (!written.passed) return { kind: 'refused', existing: written.item && callRecordOf(written.item, attr) };
  const callId = callIdOf(first.recordKey, instance);
  return {
    kind: 'claimed',
    claim: {
      recordKey: first.recordKey,
      claimId,
      attempt: 1,
      ranBefore: false,
      queuedBefore: 0,
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
