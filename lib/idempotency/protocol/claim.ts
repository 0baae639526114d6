/**
 * The claim: how an attempt gets its claim on a call record, in one file — the decision (`claimCall`: a
 * first claim, or a takeover of the abandoned attempt it found, or the answer the record in its way gives:
 * a replay of its outcome, `pending` while it runs, `conflict` for other arguments, `not_found` once
 * erased); its writes (`claim`, `takeOver`, `fixKeyInput`) are claim-writes.ts. The answers are the ones Powertools' handler gave a refused claim
 * (`IdempotencyValidationError`, `IdempotencyAlreadyInProgressError`, the response hook), decided here from
 * the typed record instead of rethrown through it.
 */
import { askAgainAfterMs, type Ending, failed, REFUSED, StoreWriteError } from '../answers';
import {
  classify,
  expiredFromMs,
  isAbandoned,
  isParked,
  lastLookMs,
  stalledChangesAtMs,
  ttlTakenOverFor,
} from '../call-state';
import { type Claim, claim, type FirstClaim, takeOver } from './claim-writes';
import { type CallRecord, STATUS } from './record';
import type { IdempotencyTable } from './table';

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
  // None in its way: it went away between the two writes of a claim over it (`claimKeeping`; review 37, F2: its
  // TTL's sweep) — the key is free, claimed again. Else not a call record a claim wrote.
  if (!existing) return claimed.gone ? GONE_MEANWHILE : failed(REFUSED.notACallRecord(request.recordKey));
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
    // anew (under the key an expired record fixed while the record is there, `claimKeeping` — not once
    // DynamoDB's sweep deleted it). Every answer whose wait ends there says so, this
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
